import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { seedOrders } from '../support/seed.ts';

/**
 * What the sales reads cost today (docs/sales.md, "What a read costs"; docs/benchmarks.md), counted
 * with the shared DynamoDB request counter: the caller's token and rate window (2), the list of all
 * orders (a Query a 1,000 entries, and one more that finds the end), and the orders (a BatchGetItem
 * a 100). It grows with the merchant's orders: this test holds it to that formula, no more.
 */
const api = useApi();

const cost = (orders: number) => 2 + (Math.floor(orders / 1000) + 1) + Math.ceil(orders / 100);

describe('sales read budgets (DynamoDB requests per API call)', () => {
  it('each read lists the orders once: 2 + ⌊n ÷ 1,000⌋ + 1 + ⌈n ÷ 100⌉ at 1,000 and 2,500 orders', async () => {
    for (const n of [1000, 2500]) {
      const m = await newMerchant();
      const first = await api.post('/orders', m.token, {
        order_no: 'FIRST',
        amount: '1',
        customer_email: 'seed@example.com',
        status: 'paid',
      });
      expect(first.status).toBe(201);
      await seedOrders(m.merchantId, first.body.data.customer_id, n - 1, ['paid', 'pending', 'refunded', 'failed']);
      for (const path of [
        '/metrics/sales?interval=day&start_date=2025-01-01&end_date=2025-12-31',
        '/metrics/payment-methods',
        '/metrics/purchase-cohorts?start_month=2024-01&end_month=2026-12',
      ]) {
        const r = await api.counted('GET', path, { token: m.token });
        expect(r.res.status, JSON.stringify(r.res.body)).toBe(200);
        expect(r.requests, `${path} at ${n} orders`).toBe(cost(n));
      }
    }
  }, 240_000);
});
