import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { createCustomer } from '#lib/customers/service';

/** The local server hands handlers the event API Gateway (HTTP API, payload 2.0) would. */
const api = useApi();

describe('local server routing', () => {
  it('decodes path parameters exactly once, as API Gateway does', async () => {
    const { merchantId, token } = await newMerchant();
    const spaced = await createCustomer(merchantId, { email: 'spaced@example.com', external_id: 'crm 7 é' });
    const percent = await createCustomer(merchantId, { email: 'percent@example.com', external_id: 'x%41' });
    const a = await api.get(`/customers/${encodeURIComponent('crm 7 é')}`, token);
    expect(a.status).toBe(200);
    expect(a.body.data.id).toBe(spaced.id);
    // "%2541" is "%41" once decoded; decoding twice would look for "xA".
    const b = await api.get('/customers/x%2541', token);
    expect(b.status).toBe(200);
    expect(b.body.data.id).toBe(percent.id);
    // A malformed escape is passed through as sent, and simply matches nothing.
    expect((await api.get('/customers/%E0%A4%A', token)).status).toBe(404);
  });

  it('prefers a static segment over a parameter (/orders/stats is not order "stats")', async () => {
    const { token } = await newMerchant();
    const stats = await api.get('/orders/stats', token);
    expect(stats.status).toBe(200);
    expect(stats.body.data).toHaveProperty('today_count');
  });
});
