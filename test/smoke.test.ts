import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from './support/api.ts';

const api = useApi();

describe('smoke', () => {
  it('401 without token, 404 for unknown customer with token', async () => {
    const r = await api.get('/customers/1');
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ message: 'Unauthenticated.' });
    const { token } = await newMerchant();
    const r2 = await api.get('/customers/1', token);
    expect(r2.status).toBe(404);
    expect(r2.headers.get('x-ratelimit-limit')).toBe('3600');
    const doc = await api.get('/openapi.json');
    expect(doc.status).toBe(200);
  });
});
