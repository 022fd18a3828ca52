import Decimal from 'decimal.js';
import { afterEach, describe, expect, it } from 'vitest';
import { retryStats } from '#lib/db/retry';
import { setShardPolicy } from '#lib/db/shards';
import { newMerchant, useApi } from '../support/api.ts';
import { transactionConflictModel, type TransactionConflictModel } from '../support/faults.ts';
import { hotLoad } from '../support/hot-load.ts';
import { allPages } from '../support/pages.ts';

/**
 * One hot merchant under AWS's transaction isolation (the conflict model: a transaction naming an
 * item another in-flight transaction holds is cancelled). Every order write moves the merchant's
 * totals and today's stats; sharding them keeps concurrent writers apart. Compared side by side
 * with the same load spread over separate merchants.
 */
const api = useApi();
let model: TransactionConflictModel | undefined;
afterEach(() => model?.uninstall());

// 1,000 in CI (about 2 minutes); HOT_ORDERS=2000 reproduces the table in docs/benchmarks.md.
const ORDERS = Number(process.env.HOT_ORDERS ?? 1000);
const CLIENTS = 50;
const CUSTOMERS_PER_CLIENT = 8; // each client's orders go to its own 8 customers (5 orders each at 2,000)

type Run = { non201: number; contended: number; conflicts: number; retries: number; transactions: number; ms: number };

const load = async (tokens: string[], perClient: number): Promise<Run> => {
  const before = { retries: retryStats.retries, conflicts: model!.stats.conflicts, transactions: model!.stats.transactions };
  const { non201, contended, ms } = await hotLoad((token, body) => api.post('/orders', token, body), tokens, {
    clients: CLIENTS,
    perClient,
    customersPerClient: CUSTOMERS_PER_CLIENT,
  });
  return {
    non201,
    contended,
    conflicts: model!.stats.conflicts - before.conflicts,
    retries: retryStats.retries - before.retries,
    transactions: model!.stats.transactions - before.transactions,
    ms,
  };
};

/** Figures equal a recomputation: every order is paid, 1.00, created now. */
const checkFigures = async (token: string, orders: number) => {
  expect((await api.get('/orders?per_page=1', token)).body.meta.total).toBe(orders);
  expect((await api.get('/orders?status=paid&per_page=1', token)).body.meta.total).toBe(orders);
  const stats = (await api.get('/orders/stats', token)).body.data;
  expect(stats).toEqual({
    today_revenue: new Decimal(orders).toFixed(2),
    monthly_revenue: new Decimal(orders).toFixed(2),
    today_count: orders,
    today_success_rate: 100,
  });
  const { items: customers } = await allPages(api, token, '/customers');
  expect(customers.reduce((s, c) => s + c.order_count, 0)).toBe(orders);
  for (const c of customers) expect(c.ltv).toBe(new Decimal(c.order_count).toFixed(2));
};

describe('hot merchant under the transaction conflict model', () => {
  it(`${CLIENTS} clients creating ${ORDERS} orders for one merchant: all 201 (a 409 sent again once), figures exact, conflicts bounded`, async () => {
    model = transactionConflictModel();
    const many = await Promise.all(Array.from({ length: CLIENTS }, () => newMerchant()));
    const spread = await load(
      many.map((m) => m.token),
      ORDERS / CLIENTS,
    );
    const hot = await newMerchant();
    const one = await load([hot.token], ORDERS / CLIENTS);
    // Worst case: no shard kept between transactions (each draws at random, like fresh containers).
    setShardPolicy('random');
    const cold = await newMerchant();
    const random = await load([cold.token], ORDERS / CLIENTS).finally(() => setShardPolicy('lease'));

    // Written to docs/benchmarks.md's figures by hand; printed so a run shows them.
    console.info(
      `conflicts by item: ${JSON.stringify(model!.stats.conflictsByItem)}\nhot merchant: ${JSON.stringify(one)}\nhot merchant, random shards: ${JSON.stringify(random)}\nspread over ${CLIENTS} merchants: ${JSON.stringify(spread)}`,
    );
    expect(one.non201).toBe(0);
    expect(random.non201).toBe(0);
    await checkFigures(cold.token, ORDERS);
    expect(spread.non201).toBe(0);
    await checkFigures(hot.token, ORDERS);
    await checkFigures(many[0].token, ORDERS / CLIENTS);
    // KNOWN REGRESSION (docs/benchmarks.md, "Hot merchant"): every order write now also moves the
    // sales aggregates (one item a kind per metric shard: 8, not the counters' 48), registers its
    // new customer's sales slices and checks a generation copy (16), so one merchant's 50 writers
    // meet there: about 2.3 conflict retries an order (0.05 before), and about 1 % of orders
    // answered 409 (nothing stored) after the retry budget, each then sent again by its client.
    // Bounded here at the level measured, until those items are kept per counter shard.
    expect(one.retries / ORDERS).toBeLessThan(3);
    expect(random.retries / ORDERS).toBeLessThan(3.5);
    for (const run of [one, random, spread]) expect(run.contended / ORDERS).toBeLessThanOrEqual(0.03);
  }, 600_000);
});
