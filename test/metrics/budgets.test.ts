import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { METRIC_SHARDS } from '#lib/db/keys';
import { newMerchant, useApi } from '../support/api.ts';
import { seedMetricsAggregates } from '../support/seed-metrics.ts';

/**
 * Request budgets of the metrics reads (docs/benchmarks.md "Request budgets"), counted with the shared DynamoDB
 * request counter, token lookup and rate counter included. Reads are measured on a merchant with
 * 100 subscriptions made through the API and on one with the aggregates of 20,000 subscriptions.
 *
 * The large merchant's items are seeded, not written through 20,000 API calls: its aggregate items
 * are exactly what the write path leaves — the sum of every customer's `contributions` — computed
 * here for 20,000 synthetic customers (one subscription each, created, changed and some cancelled
 * over 2019–2026, so that every day of the range has a day item) and written with BatchWriteItem.
 * The read path reads only those aggregate items (day and month items of 8 shard partitions, cohort
 * items of 8 others): its cost depends on them, not on subscriptions, so this is the worst case of a
 * merchant of that size.
 */
const api = useApi();
afterEach(() => resetClock());

const report = (call: string, requests: number, budget: number) =>
  console.info(`[budget] ${call}: ${requests} requests (budget ≤ ${budget})`);

const DAY = 86_400_000;
const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;

const reads = async (token: string) => ({
  monthly24: await api.counted('GET', '/metrics/mrr?start_date=2024-01-01&end_date=2025-12-31&interval=month', { token }),
  daily731: await api.counted('GET', '/metrics/mrr?start_date=2024-01-01&end_date=2025-12-31&interval=day', { token }),
  weekly: await api.counted('GET', '/metrics/mrr?start_date=2024-01-01&end_date=2025-12-31&interval=week', { token }),
  // Partial first and last months: their days outside the range are read too (the most a monthly series reads).
  monthlyMidMonth: await api.counted('GET', '/metrics/mrr?start_date=2024-01-15&end_date=2025-12-20&interval=month', { token }),
  // Quarters and years read as months do: month roll-ups, and days only at a partial end.
  quarterly8: await api.counted('GET', '/metrics/mrr?start_date=2024-01-15&end_date=2025-12-20&interval=quarter', { token }),
  yearly: await api.counted('GET', '/metrics/mrr?start_date=2019-01-01&end_date=2025-12-31&interval=year', { token }),
  summary: await api.counted('GET', '/metrics/summary', { token }),
  cohorts24: await api.counted('GET', '/metrics/cohorts?start_month=2024-01&end_month=2025-12', { token }),
  // A segment reads its own items the same way (docs/metrics.md, "Segments").
  planMonthly24: await api.counted('GET', '/metrics/mrr?start_date=2024-01-01&end_date=2025-12-31&interval=month&plan=Basic', {
    token,
  }),
  cycleSummary: await api.counted('GET', '/metrics/summary?billing_cycle=monthly', { token }),
  planCohorts24: await api.counted('GET', '/metrics/cohorts?start_month=2024-01&end_month=2025-12&plan=Basic', { token }),
  // The reporting currency's own lines: the whole's items and its difference from them, read at once.
  ownCurrencyMonthly24: await api.counted('GET', '/metrics/mrr?start_date=2024-01-01&end_date=2025-12-31&interval=month&currency=TWD', {
    token,
  }),
  ownCurrencyCohorts24: await api.counted('GET', '/metrics/cohorts?start_month=2024-01&end_month=2025-12&currency=TWD', { token }),
  trials24: await api.counted('GET', '/metrics/trials?start_date=2024-01-01&end_date=2025-12-31&interval=month', { token }),
  trialsDaily731: await api.counted('GET', '/metrics/trials?start_date=2024-01-01&end_date=2025-12-31&interval=day', { token }),
  recovery24: await api.counted('GET', '/metrics/recovery?start_date=2024-01-01&end_date=2025-12-31&interval=month', { token }),
  planRecovery24: await api.counted('GET', '/metrics/recovery?start_date=2024-01-01&end_date=2025-12-31&interval=month&plan=Basic', {
    token,
  }),
  forecast24: await api.counted('GET', '/metrics/forecast?months=24', { token }),
});

/**
 * Each read costs the token and the rate counter, the figures' versions before and after its
 * Queries (a BatchGetItem each: the read sees every write whole), then its Queries in every one of
 * the METRIC_SHARDS partitions of what it reads (at once): the shards are partition keys so that no
 * key takes more than its share of the merchant's MRR-moving writes (docs/scale.md).
 */
const perShard = (queries: number) => 2 + 2 + METRIC_SHARDS * queries;
const BUDGETS = [
  ['monthly24', perShard(1)],
  ['monthlyMidMonth', perShard(3)],
  ['quarterly8', perShard(3)],
  ['yearly', perShard(1)],
  ['daily731', perShard(2)],
  ['weekly', perShard(2)],
  ['summary', perShard(2)],
  ['cohorts24', perShard(1)],
  ['planMonthly24', perShard(1)],
  ['cycleSummary', perShard(2)],
  ['planCohorts24', perShard(1)],
  ['ownCurrencyMonthly24', perShard(2)],
  ['ownCurrencyCohorts24', perShard(2)],
  ['trials24', perShard(1)],
  ['trialsDaily731', perShard(2)],
  ['recovery24', perShard(1)],
  ['planRecovery24', perShard(1)],
  // The level today (months, and this month's days) and the forecast's months.
  ['forecast24', perShard(3)],
] as const;

describe('metrics request budgets (DynamoDB requests per API call)', () => {
  it('GET /metrics/mrr 24 monthly points ≤ 4 + 8 (from mid-month, 8 quarters ≤ 4 + 24; 7 years ≤ 4 + 8), 731 daily points ≤ 4 + 16, /metrics/summary ≤ 4 + 16, /metrics/cohorts 24 months ≤ 4 + 8, each also by plan or billing cycle (by the reporting currency ≤ 4 + 16): the same for 100 and 20,000 subscriptions', {
    timeout: 180_000,
  }, async () => {
    const clock = fixedClock('2024-03-01T00:00:00Z');
    const small = await newMerchant();
    const batch = await api.post('/customers/batch', small.token, {
      customers: Array.from({ length: 100 }, (_, i) => ({ email: `s${i}@budget.test`, name: `S${i}` })),
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    for (const [i, c] of (batch.body.data.results.created as { id: number }[]).entries()) {
      clock.set(iso(Date.parse('2024-03-01T00:00:00Z') + i * 3 * DAY));
      const r = await api.post('/subscriptions', small.token, {
        customer_id: c.id,
        plan_name: 'Basic',
        mrr: '10.00',
        billing_cycle: 'monthly',
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const large = await newMerchant();
    const seeded = await seedMetricsAggregates(large.merchantId, 20_000);
    await seedMetricsAggregates(large.merchantId, 20_000, { dimension: 'plan', value: 'Basic' });
    await seedMetricsAggregates(large.merchantId, 20_000, { dimension: 'billing_cycle', value: 'monthly' });
    expect(seeded).toBeGreaterThan(731 * 8); // every day of 2024–2025 in every shard // a day item for (nearly) every day of 2019–2026, years, cohorts

    clock.set('2025-12-31T12:00:00Z');
    const a = await reads(small.token);
    const b = await reads(large.token);
    for (const [name, budget] of BUDGETS) {
      expect(a[name].res.status, JSON.stringify(a[name].res.body)).toBe(200);
      expect(b[name].res.status, JSON.stringify(b[name].res.body)).toBe(200);
      report(`${name} (100 subscriptions)`, a[name].requests, budget);
      report(`${name} (20,000 subscriptions)`, b[name].requests, budget);
    }
    for (const [name, budget] of BUDGETS) {
      expect(a[name].requests, name).toBeLessThanOrEqual(budget);
      expect(b[name].requests, name).toBe(a[name].requests);
    }
    expect(a.monthly24.res.body.data).toHaveLength(24);
    expect(a.daily731.res.body.data).toHaveLength(731);
    expect(a.quarterly8.res.body.data).toHaveLength(8);
    expect(a.yearly.res.body.data).toHaveLength(7);
    expect(b.quarterly8.res.body.data.at(-1).mrr).toBe(b.monthlyMidMonth.res.body.data.at(-1).mrr);
    expect(a.monthly24.res.body.data.at(-1).mrr).toBe('1000.00');
    expect(a.summary.res.body.data.active_subscriptions).toBe(100);
    // The large merchant's seeded trials, past-due episodes and schedules are what those reads fold.
    expect(b.trials24.res.body.summary.trials_started).toBeGreaterThan(0);
    expect(b.recovery24.res.body.summary.past_due_started.subscriptions).toBeGreaterThan(0);
    expect(b.recovery24.res.body.summary.churned.subscriptions).toBeGreaterThan(0);
    expect(b.forecast24.res.body.data).toHaveLength(24);
    expect(b.forecast24.res.body.data.filter((p: { churn: string }) => p.churn !== '0.00').length).toBeGreaterThan(12);

    // Figures per plan: token, rate, the plan list, the versions before and after, then each plan's
    // items to the day (two Queries in each of its shards).
    const plans = await api.counted('GET', '/metrics/plans?date=2025-12-31', { token: small.token });
    expect(plans.res.status, JSON.stringify(plans.res.body)).toBe(200);
    expect(plans.res.body.data.map((p: { plan: string }) => p.plan)).toEqual(['Basic']);
    report('plans (1 plan)', plans.requests, 5 + 2 * METRIC_SHARDS);
    expect(plans.requests).toBe(5 + 2 * METRIC_SHARDS);
    // Churn by reason: one partition, its month roll-ups (and the days of a partial month at either end).
    const reasons = await api.counted('GET', '/metrics/churn-reasons?start_date=2024-01-01&end_date=2025-12-31', { token: small.token });
    const reasonsMid = await api.counted('GET', '/metrics/churn-reasons?start_date=2024-01-15&end_date=2025-12-20', { token: small.token });
    expect([reasons.res.status, reasonsMid.res.status]).toEqual([200, 200]);
    report('churn-reasons (whole months; mid-month)', reasons.requests, 5);
    expect([reasons.requests, reasonsMid.requests]).toEqual([5, 7]);
  });

  it('writes that move MRR stay within their budgets: subscription changes ≤ 5, a recurring paid order ≤ 6, its refund (PATCH) 5', async () => {
    const { token } = await newMerchant();
    const customer = (await api.post('/customers', token, { email: 'w@budget.test', name: 'W' })).body.data;
    const create = await api.counted('POST', '/subscriptions', {
      token,
      body: { customer_id: customer.id, plan_name: 'B', mrr: '10', billing_cycle: 'monthly', started_at: '2024-01-01T00:00:00Z' },
    });
    expect(create.res.status).toBe(201);
    const id = create.res.body.data.id;
    const moves = [
      // Back-dated changes, each after the one before (a change is never dated before the latest).
      ['PUT', `/subscriptions/${id}`, { mrr: '20', effective_at: '2024-02-01T00:00:00Z' }],
      ['PUT', `/subscriptions/${id}/pause`, { paused_at: '2024-03-01T00:00:00Z' }],
      ['PUT', `/subscriptions/${id}/reactivate`, { reactivated_at: '2024-04-01T00:00:00Z' }],
      ['PUT', `/subscriptions/${id}/cancel`, { cancelled_at: '2024-06-01T00:00:00Z' }],
      ['PUT', `/subscriptions/${id}/reactivate`, {}],
      ['DELETE', `/subscriptions/${id}`, undefined],
    ] as const;
    report('POST /subscriptions (back-dated start)', create.requests, 5);
    expect(create.requests).toBeLessThanOrEqual(5);
    for (const [method, path, body] of moves) {
      const r = await api.counted(method, path, { token, body });
      expect(r.res.status, `${method} ${path} ${JSON.stringify(r.res.body)}`).toBeLessThan(300);
      report(`${method} ${path.replace(String(id), '{id}')}`, r.requests, 5);
      expect(r.requests).toBeLessThanOrEqual(5);
    }
    const recorded = await api.counted('POST', '/subscriptions/events', {
      token,
      body: { customer_id: customer.id, event_type: 'created', old_amount: '0', new_amount: '5', occurred_at: '2023-01-01T00:00:00Z' },
    });
    expect(recorded.res.status).toBe(201);
    report('POST /subscriptions/events (back-dated)', recorded.requests, 5);
    expect(recorded.requests).toBeLessThanOrEqual(5);

    const order = await api.counted('POST', '/orders', {
      token,
      body: { order_no: 'R-1', amount: '300', customer_email: 'w@budget.test', status: 'paid', billing_cycle: 'quarterly' },
    });
    expect(order.res.status).toBe(201);
    report('POST /orders (quarterly, paid, existing customer)', order.requests, 6);
    expect(order.requests).toBeLessThanOrEqual(6);
    const refund = await api.counted('PATCH', '/orders/R-1', { token, body: { status: 'refunded' } });
    expect(refund.res.status).toBe(200);
    report('PATCH /orders/{orderNo} (refund of a recurring order)', refund.requests, 5);
    expect(refund.requests).toBeLessThanOrEqual(5);
  });
});
