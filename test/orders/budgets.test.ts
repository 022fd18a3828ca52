import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { seedOrders } from '../support/seed.ts';
import { cursorAt } from '../support/pages.ts';

/**
 * Request budgets of the order routes, counted with the shared DynamoDB request counter. "Flat" reads are
 * measured on a merchant with 100 orders and on one with 20,000 and must cost the same.
 */
const api = useApi();

const merchantWithOrders = async (count: number) => {
  const m = await newMerchant();
  const first = await api.post('/orders', m.token, { order_no: 'FIRST', amount: '1', customer_email: 'seed@example.com', status: 'paid' });
  expect(first.status).toBe(201);
  await seedOrders(m.merchantId, first.body.data.customer_id, count - 1, 'paid');
  return m;
};

const reads = async (token: string) => ({
  list: await api.counted('GET', '/orders', { token }),
  byStatus: await api.counted('GET', '/orders?status=paid&per_page=50', { token }),
  stats: await api.counted('GET', '/orders/stats', { token }),
  get: await api.counted('GET', '/orders/FIRST', { token }),
});

describe('request budgets (DynamoDB requests per API call)', () => {
  it('POST /orders ≤ 6 (new and existing customer, with an idempotency key)', async () => {
    const { token } = await newMerchant();
    const fresh = await api.counted('POST', '/orders', {
      token,
      body: { order_no: 'P-1', amount: '5', customer_email: 'new@example.com', status: 'paid' },
      headers: { 'x-idempotency-key': 'budget-1' },
    });
    expect(fresh.res.status).toBe(201);
    expect(fresh.requests).toBeLessThanOrEqual(6);
    const existing = await api.counted('POST', '/orders', {
      token,
      body: { order_no: 'P-2', amount: '5', customer_email: 'new@example.com', status: 'paid' },
      headers: { 'x-idempotency-key': 'budget-2' },
    });
    expect(existing.res.status).toBe(201);
    expect(existing.requests).toBeLessThanOrEqual(6);
    const replay = await api.counted('POST', '/orders', {
      token,
      body: { order_no: 'P-2', amount: '5', customer_email: 'new@example.com', status: 'paid' },
      headers: { 'x-idempotency-key': 'budget-2' },
    });
    expect(replay.res.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.requests).toBeLessThanOrEqual(3);
    // An order in another currency is converted when written (its sales figures): its rates come with the first read.
    const foreign = await api.counted('POST', '/orders', {
      token,
      body: { order_no: 'P-3', amount: '5', currency: 'USD', customer_email: 'new@example.com', status: 'paid' },
    });
    expect(foreign.res.status).toBe(201);
    expect(foreign.requests).toBeLessThanOrEqual(6);
    const refund = await api.counted('PATCH', '/orders/P-3', { token, body: { status: 'refunded' } });
    expect(refund.res.status).toBe(200);
    expect(refund.requests).toBeLessThanOrEqual(5);
  });

  it('POST /orders/batch of 100 new orders for 100 new customers ≤ 25', async () => {
    const { token } = await newMerchant();
    const orders = Array.from({ length: 100 }, (_, i) => ({
      order_no: `N-${i}`,
      amount: '19.99',
      customer_email: `n${i}@example.com`,
      status: i % 3 === 0 ? 'paid' : 'pending',
    }));
    const batch = await api.counted('POST', '/orders/batch', { token, body: { orders } });
    expect(batch.res.status).toBe(200);
    expect(batch.res.body.data.created).toBe(100);
    expect(batch.requests).toBeLessThanOrEqual(25);
  });

  it('GET /orders page 1 (unfiltered, by status) ≤ 5, /orders/stats ≤ 3, /orders/{no} ≤ 4 — the same for 100 and 20,000 orders', async () => {
    const small = await merchantWithOrders(100);
    const large = await merchantWithOrders(20_000);
    const s = await reads(small.token);
    const l = await reads(large.token);
    expect(l.list.res.body.meta.total).toBe(20_000);
    expect(l.list.res.body.data).toHaveLength(20);
    expect(l.byStatus.res.body.meta.total).toBe(20_000);
    expect(l.byStatus.res.body.data).toHaveLength(50);
    for (const [name, budget] of [
      ['list', 5],
      ['byStatus', 5],
      ['stats', 3],
      ['get', 4],
    ] as const) {
      expect(s[name].res.status, name).toBe(200);
      expect(l[name].requests, name).toBeLessThanOrEqual(budget);
      expect(l[name].requests, name).toBe(s[name].requests);
    }
    // A page 200 pages deep (by cursor, 20 a page) costs what page 1 costs.
    for (const [path, page1] of [
      ['/orders', l.list],
      ['/orders?status=paid', l.byStatus],
    ] as const) {
      const cursor = await cursorAt(api, large.token, path, 4_000);
      const deep = await api.counted('GET', `${path}${path.includes('?') ? '&' : '?'}per_page=20&cursor=${encodeURIComponent(cursor)}`, {
        token: large.token,
      });
      expect(deep.res.body.meta, path).toMatchObject({
        current_page: 201,
        from: 4_001,
        to: 4_020,
        total: 20_000,
        next_cursor: expect.any(String),
      });
      expect(deep.requests, path).toBe(page1.requests);
    }
  }, 240_000);
});
