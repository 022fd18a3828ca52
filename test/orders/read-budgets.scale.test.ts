import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { cursorAt } from '../support/pages.ts';
import { seedOrders } from '../support/seed.ts';

/**
 * Request budgets of the order reads, counted with the shared DynamoDB request counter: measured on a
 * merchant with 100 orders and on one with 20,000 (seeded), they must cost the same. In the scale
 * suite (seeding takes a minute); the write budgets are in budgets.test.ts.
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

describe('order read budgets (DynamoDB requests per API call)', () => {
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
