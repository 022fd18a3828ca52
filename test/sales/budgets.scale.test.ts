import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { METRIC_SHARDS } from '#lib/db/keys';
import { newMerchant, useApi } from '../support/api.ts';
import { seedSalesAggregates, syntheticOrders } from '../support/seed-sales.ts';

/**
 * What the sales reads cost (docs/sales.md, "What a read costs"; docs/benchmarks.md), counted with
 * the shared DynamoDB request counter, on a merchant with 1,000 orders written through the API and
 * on one with the stored items of 100,000 orders. The large merchant's items are seeded: exactly
 * what the write path leaves (the sum of every customer's figures, as lib/metrics/bookings.ts
 * computes them) in every one of the 8 shards. A read touches only these items, so its cost is the
 * same for both: the caller's token and rate window (2), the figures' versions before and after (2),
 * and its Queries in each of the 8 shards at once.
 */
const api = useApi();
afterEach(() => resetClock());

const perShard = (queries: number) => 2 + 2 + METRIC_SHARDS * queries;
const READS: [path: string, queries: number][] = [
  // Months from the pending moves' home on: one Query a shard.
  ['/metrics/sales?interval=month&start_date=2024-01-01&end_date=2025-12-31', 1],
  // Days of a year: the pending moves, then the days.
  ['/metrics/sales?interval=day&start_date=2025-01-01&end_date=2025-12-31', 2],
  ['/metrics/sales?interval=week&start_date=2024-01-01&end_date=2025-12-31', 2],
  // Partial first and last months: the months, and each end's days.
  ['/metrics/sales?interval=month&start_date=2024-01-15&end_date=2025-12-20', 3],
  // One filter reads its own slice alike.
  ['/metrics/sales?interval=month&start_date=2024-01-01&end_date=2025-12-31&payment_method=credit_card', 1],
  ['/metrics/payment-methods?start_date=2024-01-01&end_date=2025-12-31', 2],
  ['/metrics/purchase-cohorts?start_month=2024-01&end_month=2025-12', 2],
  ['/metrics/purchase-cohorts?start_month=2023-01&end_month=2025-12', 2],
];

describe('sales read budgets (DynamoDB requests per API call)', () => {
  it('each read costs 4 + 8 × its Queries a shard, the same at 1,000 and 100,000 orders', async () => {
    fixedClock('2026-01-10T00:00:00Z');
    const small = await newMerchant();
    const orders = syntheticOrders(1000);
    for (let i = 0; i < orders.length; i += 100) {
      const items = orders.slice(i, i + 100).map(({ customer_id, ...o }) => ({ ...o, customer_email: `c${customer_id}@example.com` }));
      const r = await api.post('/orders/batch', small.token, { orders: items });
      expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
      expect(r.body.data.results.failed).toEqual([]);
    }
    const large = await newMerchant();
    expect(
      await seedSalesAggregates(large.merchantId, syntheticOrders(100_000), [{ dimension: 'payment_method', value: 'credit_card' }]),
    ).toBeGreaterThan(1000 * METRIC_SHARDS);
    for (const [path, queries] of READS) {
      const counts = [];
      for (const m of [small, large]) {
        const r = await api.counted('GET', path, { token: m.token });
        expect(r.res.status, JSON.stringify(r.res.body)).toBe(200);
        expect(r.res.body.data.length, path).toBeGreaterThan(0);
        counts.push(r.requests);
      }
      console.info(`[budget] GET ${path}: ${counts.join(' and ')} requests`);
      expect(counts, path).toEqual([perShard(queries), perShard(queries)]);
    }
  }, 300_000);
});
