import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { captureLogs, isolatedClock } from './support.ts';
import { generateToken } from '#lib/auth/tokens';

/** Structured JSON logs with the request id; never the Authorization header or the token. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
isolatedClock();
const api = useApi();

describe('request logging', () => {
  it('writes one JSON line per request with request_id, route and status, and no token', async () => {
    const { token } = await newMerchant();
    const stranger = generateToken();
    const { result, lines, raw } = await captureLogs(async () => [
      await api.get('/customers/1', token),
      await api.post('/customers', token, { email: 'logged@example.com', name: token }),
      await api.get('/customers/1', stranger),
      await api.get('/nope', token),
    ]);
    const [notFound, created, refused, unknown] = result;
    expect([notFound.status, created.status, refused.status, unknown.status]).toEqual([404, 201, 401, 404]);

    for (const secret of [token, stranger, token.slice(4), stranger.slice(4), 'Bearer']) expect(raw).not.toContain(secret);
    expect(raw.toLowerCase()).not.toContain('authorization');

    const requestLines = lines.filter((l) => l.message === 'request');
    expect(requestLines).toHaveLength(4);
    for (const [i, res] of result.entries()) {
      const line = requestLines[i];
      expect(line.request_id).toBe(res.headers.get('x-request-id'));
      expect(line).toMatchObject({ level: 'INFO', service: 'revenue-analytics-api', status: res.status });
      expect(typeof line.ms).toBe('number');
      expect(line.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
    expect(requestLines.map((l) => l.method)).toEqual(['GET', 'POST', 'GET', 'GET']);
    expect(requestLines[0].route).toBe('GET /customers/{idOrExternalId}');
    expect(requestLines[3].route).toBe('unmatched');
    // Keys of one request do not leak into the next one's lines.
    expect(new Set(requestLines.map((l) => l.request_id)).size).toBe(4);
  });
});
