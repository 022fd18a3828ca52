import Decimal from 'decimal.js';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { withDeadline } from '#lib/db/retry';
import { RecountingError } from '#lib/errors';
import { createSubscription } from '#lib/subscriptions/service';
import type { SubscriptionCreate } from '#lib/subscriptions/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { GENERATION_SHARDS, keys } from '#lib/db/keys';
import { changeMerchant } from '#lib/merchants/settings';
import { regenerateToken } from '#lib/merchants/service';
import { getMerchant } from '#lib/merchants/store';
import { ContentionError } from '#lib/errors';
import { addRestateJob, RESTATE_JOB_ENTITY, runRestateJob } from '#lib/metrics/restate-jobs';
import { retirePartitions } from '#lib/metrics/generation';
import { WriteSet } from '#lib/db/writes';
import { queryAll } from '#lib/db/query';
import { backofficeJwt } from '../backoffice/support.ts';
import { throttle } from '../support/faults.ts';
import { newMerchant, ok, useApi } from '../support/api.ts';

/**
 * A settings change (time zone, exchange rates) builds a new generation of the merchant's MRR
 * aggregates before it answers (docs/metrics.md, "Generations"): every figure from the next request
 * on is what it would be had the setting always been so. Checked against a second merchant given
 * the setting first and the same history after: every read of the two must be equal, before and
 * after more writes (a customer last counted in the older generation is counted from where the
 * build counted it).
 */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const api = useApi();
afterEach(() => {
  resetClock();
  delete process.env.GENERATION_BUILD_MAX_CUSTOMERS;
});

const asAdmin = async (merchantId: string) => ({ authorization: `Bearer ${await backofficeJwt(merchantId, 'admin')}` });
const setZone = async (merchantId: string, timezone: string) =>
  api.request('PUT', '/settings', { headers: await asAdmin(merchantId), body: { timezone } });
const putRates = (token: string, rates: { month: string; rate: string }[]) =>
  api.request('PUT', '/exchange-rates/USD', { token, body: { rates } });

type Merchant = { merchantId: string; token: string };

/**
 * The same history for any merchant: 8 customers, subscriptions on two plans and cycles, a third of
 * them in USD, started either side of midnight in Taipei, one cancelled with a reason, one changed
 * back-dated. Returns the subscription ids by external id.
 */
const history = async (m: Merchant) => {
  const ids: number[] = [];
  for (let i = 0; i < 8; i++)
    ids.push(
      (await ok(api.post('/customers', m.token, { email: `g${i}@gen.test`, metadata: { team: i % 2 ? 'core' : 'edge' } }), 201)).data.id,
    );
  const imported = await ok(
    api.post(
      '/subscriptions/batch',
      m.token,
      {
        subscriptions: ids.map((customer_id, i) => ({
          external_id: `s${i}`,
          customer_id,
          plan_name: i % 3 ? 'Pro' : 'Basic',
          billing_cycle: i % 2 ? 'monthly' : 'yearly',
          currency: i % 3 === 1 ? 'USD' : 'TWD',
          mrr: String(10 + i * 7),
          started_at: `2026-01-${10 + i}T${i % 2 ? '16:01' : '15:59'}:00Z`,
          ...(i === 5 ? { cancelled_at: '2026-02-20T16:30:00Z', cancel_reason: 'too_expensive' } : {}),
        })),
      },
      { 'idempotency-key': `history-${m.merchantId}` },
    ),
  );
  const results = (imported.data ?? imported).results;
  expect(results.failed).toEqual([]);
  const subs = new Map<string, number>(
    (await ok(api.get('/subscriptions?per_page=100', m.token))).data.map((s: { external_id: string; id: number }) => [s.external_id, s.id]),
  );
  await ok(api.put(`/subscriptions/${subs.get('s2')}`, m.token, { mrr: '99', effective_at: '2026-02-01T15:30:00Z' }));
  return { customers: ids, subs };
};

/** More writes after the change: a back-dated change of a customer last counted before it, a new customer in USD. */
const moreHistory = async (m: Merchant, subs: Map<string, number>) => {
  await ok(api.put(`/subscriptions/${subs.get('s1')}`, m.token, { mrr: '55', effective_at: '2026-01-31T16:10:00Z' }));
  await ok(api.put(`/subscriptions/${subs.get('s4')}/cancel`, m.token, { cancelled_at: '2026-03-01T15:50:00Z', reason: 'switched' }));
  const c = (await ok(api.post('/customers', m.token, { email: 'late@gen.test', metadata: { team: 'core' } }), 201)).data;
  const imported = await ok(
    api.post(
      '/subscriptions/batch',
      m.token,
      {
        subscriptions: [
          {
            external_id: 'late',
            customer_id: c.id,
            plan_name: 'Pro',
            billing_cycle: 'monthly',
            currency: 'USD',
            mrr: '40',
            started_at: '2026-02-28T16:00:00Z',
          },
        ],
      },
      { 'idempotency-key': `late-${m.merchantId}` },
    ),
  );
  expect((imported.data ?? imported).results.failed).toEqual([]);
};

const READS = [
  '/metrics/mrr?start_date=2026-01-01&end_date=2026-03-10&interval=day',
  '/metrics/mrr?start_date=2025-12-01&end_date=2026-03-10&interval=month',
  '/metrics/mrr?start_date=2026-01-01&end_date=2026-03-10&interval=week',
  '/metrics/summary',
  '/metrics/cohorts?start_month=2026-01&end_month=2026-03',
  '/metrics/churn-reasons?start_date=2026-01-01&end_date=2026-03-10',
  '/metrics/plans?date=2026-02-15',
  '/metrics/plans?date=2026-03-10',
  '/metrics/mrr?start_date=2026-01-01&end_date=2026-03-10&interval=day&plan=Pro',
  '/metrics/mrr?start_date=2026-01-01&end_date=2026-03-10&interval=month&billing_cycle=yearly',
  '/metrics/mrr?start_date=2026-01-01&end_date=2026-03-10&interval=day&currency=USD',
  '/metrics/mrr?start_date=2026-01-01&end_date=2026-03-10&interval=day&currency=TWD',
  '/metrics/cohorts?start_month=2026-01&end_month=2026-03&plan=Pro',
  '/metrics/mrr?start_date=2026-01-01&end_date=2026-03-10&interval=day&metadata.team=core',
  '/metrics/movements?start_date=2026-01-01&end_date=2026-03-10&per_page=100',
  '/customers?per_page=100',
  // No pass left to the background: the settings and rates reads say nothing is pending.
  '/settings',
  '/exchange-rates',
];

/** Every read of `READS`, and each customer's activities (ids differ between merchants: by position). */
const everything = async (m: Merchant) => {
  const out: Record<string, unknown> = {};
  for (const path of READS) {
    const res = await api.get(path, m.token);
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
    expect(res.headers.get('restate-pending'), path).toBeNull();
    out[path] = strip(res.body);
  }
  const customers = (await ok(api.get('/customers?per_page=100', m.token))).data as { id: number }[];
  for (const [i, c] of [...customers].reverse().entries())
    out[`activities ${i}`] = strip(await ok(api.get(`/customers/${c.id}/activities?per_page=100`, m.token)));
  return out;
};

/** What differs between two merchants by construction: ids, emails, times of creation. */
const strip = (body: unknown): unknown =>
  JSON.parse(JSON.stringify(body), (k, v) =>
    ['id', 'customer_id', 'created_at', 'updated_at', 'cursor', 'next', 'next_cursor'].includes(k) ? undefined : v,
  );

describe('generations: a settings change recounts every figure before it answers', () => {
  it('a zone change: every read equals that of a merchant in the zone from the start, before and after more writes', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const [late, early] = [await newMerchant(), await newMerchant()];
    expect((await setZone(early.merchantId, 'Asia/Taipei')).status).toBe(200);
    const [a, b] = [await history(late), await history(early)];
    const before = await everything(late);
    const changed = await setZone(late.merchantId, 'Asia/Taipei');
    expect([changed.status, changed.headers.get('restate-pending')]).toEqual([200, null]);
    // Nothing left to the background but the older generation's retirement.
    expect(await queryAll<{ retire?: unknown }>({ partition: `M#${late.merchantId}#RESTATE` }, [])).toEqual([
      expect.objectContaining({ retire: expect.objectContaining({ generation: 0 }) }),
    ]);
    const after = await everything(late);
    expect(after).toEqual(await everything(early));
    expect(after).not.toEqual(before);
    await moreHistory(late, a.subs);
    await moreHistory(early, b.subs);
    expect(await everything(late)).toEqual(await everything(early));
    // And back: to UTC, as a merchant that never left it.
    const utc = await newMerchant();
    const c = await history(utc);
    await moreHistory(utc, c.subs);
    expect((await setZone(late.merchantId, 'UTC')).status).toBe(200);
    expect(await everything(late)).toEqual(await everything(utc));
  }, 120_000);

  it('a rate change: every read equals that of a merchant with the rates from the start, before and after more writes', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const [late, early] = [await newMerchant(), await newMerchant()];
    const RATES = [
      { month: '2026-01', rate: '30' },
      { month: '2026-02', rate: '31.5' },
    ];
    await ok(putRates(early.token, RATES));
    const [a, b] = [await history(late), await history(early)];
    const changed = await putRates(late.token, RATES);
    expect([changed.status, changed.headers.get('restate-pending')]).toEqual([200, null]);
    expect(await everything(late)).toEqual(await everything(early));
    await moreHistory(late, a.subs);
    await moreHistory(early, b.subs);
    expect(await everything(late)).toEqual(await everything(early));
    // A second change (March's rate) on both: still equal, the zone too.
    for (const m of [late, early]) await ok(putRates(m.token, [{ month: '2026-03', rate: '32' }]));
    for (const m of [late, early]) expect((await setZone(m.merchantId, 'Asia/Tokyo')).status).toBe(200);
    const settled = await everything(late);
    expect(settled).toEqual(await everything(early));
    // And as a merchant whose every write came after all three changes.
    const fresh = await newMerchant();
    await ok(putRates(fresh.token, [...RATES, { month: '2026-03', rate: '32' }]));
    expect((await setZone(fresh.merchantId, 'Asia/Tokyo')).status).toBe(200);
    await moreHistory(fresh, (await history(fresh)).subs);
    expect(settled).toEqual(await everything(fresh));
  }, 120_000);

  it('passes after a build (a merchant past the bound): customers counted in the older generation move from where the build counted them', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const [late, early] = [await newMerchant(), await newMerchant()];
    await ok(putRates(early.token, [{ month: '2026-01', rate: '30' }]));
    expect((await setZone(early.merchantId, 'Asia/Taipei')).status).toBe(200);
    const a = await history(late);
    await history(early);
    // A build first (generation 1, Taipei), then a rate change by passes, in the request.
    expect((await setZone(late.merchantId, 'Asia/Taipei')).status).toBe(200);
    process.env.GENERATION_BUILD_MAX_CUSTOMERS = '0';
    const passed = await putRates(late.token, [{ month: '2026-01', rate: '30' }]);
    expect([passed.status, passed.headers.get('restate-pending')]).toEqual([200, null]);
    expect(await everything(late)).toEqual(await everything(early));
    expect(a.customers).toHaveLength(8);
  }, 120_000);

  it('a write that meets a build waits for it and then counts; past its deadline it is refused with 409 and Retry-After, storing nothing', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const m = await newMerchant();
    await history(m);
    // Customers without a subscription yet (creating one moves no figure).
    const customers: number[] = [];
    for (const email of ['f1@gen.test', 'f2@gen.test', 'f3@gen.test'])
      customers.push((await ok(api.post('/customers', m.token, { email }), 201)).data.id);
    const figures = await everything(m);
    // The copies as a build holds them (until `until`), then as its switch leaves them (generation 0 still, no pause).
    const hold = (until: number) =>
      Promise.all(
        Array.from({ length: GENERATION_SHARDS }, (_, shard) =>
          db().send(
            new PutCommand({
              TableName: tableName(),
              Item: { ...keys.generation(m.merchantId, shard), generation: 0, paused_until: until, building: 99 },
            }),
          ),
        ),
      );
    const scope = { merchantId: m.merchantId, reportingCurrency: 'TWD', timezone: 'UTC', generation: 0 };
    const create = (customer_id: number) =>
      createSubscription(scope, { customer_id, plan_name: 'Pro', billing_cycle: 'monthly', mrr: '5' } as SubscriptionCreate);
    // Held past the deadline (2 s here): refused, nothing stored.
    await hold(Date.now() + 60_000);
    await expect(withDeadline(Date.now() + 2_000, () => create(customers[0]))).rejects.toThrow(RecountingError);
    // A second settings change meanwhile is told to come back, and changes nothing.
    const second = await setZone(m.merchantId, 'Asia/Tokyo');
    expect([second.status, second.headers.get('retry-after'), second.body.message]).toEqual([
      409,
      '5',
      "The merchant's figures are already being recounted for another settings change. Try again in a few seconds.",
    ]);
    expect((await ok(api.get('/settings', m.token))).data.timezone).toBe('UTC');
    expect(await everything(m)).toEqual(figures);
    // Held for 1.5 s more: a write and a batch item wait it out, then count.
    const started = Date.now();
    await hold(started + 1_500);
    const [single, batch] = await Promise.all([
      api.post('/subscriptions', m.token, { customer_id: customers[1], plan_name: 'Pro', billing_cycle: 'monthly', mrr: '5' }),
      api.post(
        '/subscriptions/batch',
        m.token,
        { subscriptions: [{ external_id: 'held', customer_id: customers[2], plan_name: 'Pro', billing_cycle: 'monthly', mrr: '7' }] },
        { 'idempotency-key': 'held-1' },
      ),
    ]);
    expect([single.status, batch.status]).toEqual([201, 200]);
    expect((batch.body.data ?? batch.body).results.failed).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    // Both counted: the MRR now is 12 more than before the hold.
    const before = (figures['/metrics/summary'] as { data: { current_mrr: string } }).data.current_mrr;
    expect((await ok(api.get('/metrics/summary', m.token))).data.current_mrr).toBe(new Decimal(before).plus(12).toFixed(2));
  }, 120_000);

  it('a build throttled throughout answers 503 with Retry-After, lifts its pause and changes nothing', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const m = await newMerchant();
    await history(m);
    const fresh = (await ok(api.post('/customers', m.token, { email: 'f@gen.test' }), 201)).data.id;
    const figures = await everything(m);
    const t = throttle({ rate: 1, commands: ['BatchWriteItem'] });
    let res: Awaited<ReturnType<typeof setZone>>;
    try {
      res = await setZone(m.merchantId, 'Asia/Taipei');
    } finally {
      t.uninstall();
    }
    expect([res.status, res.headers.get('retry-after')]).toEqual([503, expect.stringMatching(/^\d+$/)]);
    expect(t.stats.injected).toBeGreaterThan(0);
    expect((await ok(api.get('/settings', m.token))).data.timezone).toBe('UTC');
    expect(await everything(m)).toEqual(figures);
    const { Item } = await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.generation(m.merchantId, 0), ConsistentRead: true }),
    );
    expect(Item).toEqual(expect.not.objectContaining({ paused_until: expect.anything() }));
    // What the build wrote before it gave up is retired, at once (nothing reads it).
    const [retire] = await queryAll<{ retire: { generation: number; after: number } }>({ partition: `M#${m.merchantId}#RESTATE` }, []);
    expect(retire.retire.generation).toBe(1);
    expect(retire.retire.after).toBeLessThanOrEqual(Date.now());
    await ok(api.post('/subscriptions', m.token, { customer_id: fresh, plan_name: 'Pro', billing_cycle: 'monthly', mrr: '5' }), 201);
    // Then the same change goes through.
    expect((await setZone(m.merchantId, 'Asia/Taipei')).status).toBe(200);
  }, 120_000);

  it('a build out of time changes nothing and hands the change to passes (a restate job for what they leave)', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const m = await newMerchant();
    await history(m);
    // No time left: the build stops before its first read, and so does the pass.
    const { moved, merchant } = await changeMerchant(m.merchantId, { timezone: 'Asia/Taipei' }, Date.now() - 1);
    expect(merchant.metrics_generation ?? 0).toBe(0);
    expect(moved).toEqual(expect.objectContaining({ done: false, moved: 0 }));
    const jobs = await queryAll<{ entity: string }>({ partition: `M#${m.merchantId}#RESTATE` }, []);
    expect(jobs).toEqual([expect.objectContaining({ entity: RESTATE_JOB_ENTITY })]);
    const { Item } = await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.generation(m.merchantId, 3), ConsistentRead: true }),
    );
    expect(Item).toEqual(expect.not.objectContaining({ paused_until: expect.anything() }));
  }, 120_000);

  it('costs one BatchGetItem per 100 customers and one BatchWriteItem per 25 items written, two transactions, and a few fixed requests', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const build = async (customers: number) => {
      const m = await newMerchant();
      for (let first = 0; first < customers; first += 100) {
        const res = await ok(
          api.post(
            '/subscriptions/batch',
            m.token,
            {
              subscriptions: Array.from({ length: Math.min(100, customers - first) }, (_, i) => ({
                external_id: `b${first + i}`,
                customer_email: `b${first + i}@gen.test`,
                plan_name: (first + i) % 2 ? 'Pro' : 'Basic',
                billing_cycle: 'monthly',
                mrr: String(10 + ((first + i) % 13)),
                started_at: `2026-0${1 + ((first + i) % 2)}-${String(1 + ((first + i) % 28)).padStart(2, '0')}T15:59:00Z`,
              })),
            },
            { 'idempotency-key': `b-${first}` },
          ),
        );
        expect((res.data ?? res).results.failed).toEqual([]);
      }
      const counted = await api.counted('PUT', '/settings', { headers: await asAdmin(m.merchantId), body: { timezone: 'Asia/Taipei' } });
      expect(counted.res.status).toBe(200);
      // What the build wrote: every item of the new generation's partitions, and how many keys.
      const partitions = [
        `M#${m.merchantId}#MRR#G1`,
        `M#${m.merchantId}#COHORT#G1`,
        `M#${m.merchantId}#CHURN_REASONS#G1`,
        `M#${m.merchantId}#G1#SETTINGS`,
      ];
      const segments = ['plan#Pro', 'plan#Basic', 'billing_cycle#monthly'].flatMap((s) => [
        `M#${m.merchantId}#MRR#G1#SEG#${s}`,
        `M#${m.merchantId}#COHORT#G1#SEG#${s}`,
      ]);
      const written = await Promise.all(retirePartitions([...partitions, ...segments]).map((partition) => queryAll({ partition }, [])));
      const batchWrites = written.reduce((n, items) => n + Math.ceil(items.length / 25), 0);
      return { ...counted, batchWrites };
    };
    const [small, large] = [await build(30), await build(230)];
    console.info(
      `generation build requests: 30 customers ${JSON.stringify(small.byCommand)}; 230 customers ${JSON.stringify(large.byCommand)}`,
    );
    for (const [run, customers] of [
      [small, 30],
      [large, 230],
    ] as const) {
      expect(run.byCommand.BatchGetItemCommand, JSON.stringify(run.byCommand)).toBe(Math.ceil(customers / 100));
      expect(run.byCommand.BatchWriteItemCommand, JSON.stringify(run.byCommand)).toBe(run.batchWrites);
      // The pause and the switch: never a transaction per customer.
      expect(run.byCommand.TransactWriteItemsCommand, JSON.stringify(run.byCommand)).toBe(2);
    }
    // Besides the heads and the items, the same fixed requests whatever the customers.
    const fixed = (run: typeof small) => run.requests - run.byCommand.BatchGetItemCommand - run.byCommand.BatchWriteItemCommand;
    expect(fixed(large)).toBe(fixed(small));
    expect(fixed(small), JSON.stringify(small.byCommand)).toBeLessThanOrEqual(10);
  }, 180_000);

  it('a token issued after a change carries the generation: its writes count, and one issued from a merchant read before the change is refused', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const m = await newMerchant();
    await history(m);
    expect((await setZone(m.merchantId, 'Asia/Taipei')).status).toBe(200);
    // A rate change (the zone stays) after the merchant was read: a token regenerated from that read is refused.
    const stale = await getMerchant(m.merchantId);
    await ok(putRates(m.token, [{ month: '2026-01', rate: '30' }]));
    await expect(regenerateToken(stale!)).rejects.toThrow(ContentionError);
    const { token } = await regenerateToken(m.merchantId);
    const c = (await ok(api.post('/customers', token, { email: 'after@gen.test' }), 201)).data;
    await ok(
      api.post('/subscriptions', token, {
        customer_id: c.id,
        plan_name: 'Pro',
        billing_cycle: 'monthly',
        mrr: '7',
        started_at: '2026-03-01T16:30:00Z',
      }),
      201,
    );
    const day = await ok(api.get('/metrics/mrr?start_date=2026-03-02&end_date=2026-03-02&interval=day', token));
    expect(day.data[0].new).toBe('7.00');
  }, 120_000);

  it('the older generation is deleted by a retire job once its grace is over; no read changes, and the job is not a pending pass', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const m = await newMerchant();
    const { subs } = await history(m);
    await ok(putRates(m.token, [{ month: '2026-01', rate: '30' }]));
    expect((await setZone(m.merchantId, 'Asia/Taipei')).status).toBe(200);
    await moreHistory(m, subs);
    const figures = await everything(m);
    type Job = { pk: string; sk: string; retire: { generation: number; partitions: string[]; after: number } };
    const jobs = await queryAll<Job>({ partition: `M#${m.merchantId}#RESTATE` }, []);
    // Two changes, two generations retired: 0 (the first build's) and 1 (the second's).
    expect(jobs.map((j) => j.retire.generation).sort()).toEqual([0, 1]);
    const first = jobs.find((j) => j.retire.generation === 0)!;
    expect(first.retire.partitions).toEqual(
      expect.arrayContaining([
        `M#${m.merchantId}#MRR`,
        `M#${m.merchantId}#COHORT`,
        `M#${m.merchantId}#CHURN_REASONS`,
        `M#${m.merchantId}#MRR#SEG#plan#Pro`,
      ]),
    );
    const second = jobs.find((j) => j.retire.generation === 1)!;
    expect(second.retire.partitions).toEqual(expect.arrayContaining([`M#${m.merchantId}#MRR#G1`, `M#${m.merchantId}#G1#SETTINGS`]));
    const held = async (partitions: string[]) =>
      (await Promise.all(retirePartitions(partitions).map((partition) => queryAll({ partition }, [])))).flat().length;
    expect(await held(first.retire.partitions)).toBeGreaterThan(0);
    // Within its grace (30 s from the switch), a job with less time than that waits: it goes on as a new round, nothing deleted.
    expect(first.retire.after).toBeGreaterThan(Date.now() + 20_000);
    expect(await runRestateJob({ pk: first.pk, sk: first.sk }, Date.now() + 1_000)).toBe('continued');
    expect(await held(first.retire.partitions)).toBeGreaterThan(0);
    // Past it: every item of the older generations goes; the current one's stay, and every read is as before.
    for (const job of await queryAll<Job>({ partition: `M#${m.merchantId}#RESTATE` }, [])) {
      await db().send(new PutCommand({ TableName: tableName(), Item: { ...job, retire: { ...job.retire, after: Date.now() - 1 } } }));
      expect(await runRestateJob({ pk: job.pk, sk: job.sk }, Date.now() + 60_000)).toBe('done');
    }
    expect(await held([...first.retire.partitions, ...second.retire.partitions])).toBe(0);
    expect(await queryAll({ partition: `M#${m.merchantId}#RESTATE` }, [])).toEqual([]);
    expect(await held([`M#${m.merchantId}#MRR#G2`])).toBeGreaterThan(0);
    expect(await everything(m)).toEqual(figures);
  }, 120_000);

  it('a write sent while a real build runs waits for its switch and counts in the new zone, without being sent again', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const m = await newMerchant();
    await history(m);
    const c = (await ok(api.post('/customers', m.token, { email: 'during@gen.test' }), 201)).data.id;
    // The build's writes held a second each, so the write below meets its pause.
    const name = `slow-build-${Math.random()}`;
    db().middlewareStack.add(
      (next, context) => async (args) => {
        if ((context as { commandName?: string }).commandName === 'BatchWriteItemCommand') await new Promise((r) => setTimeout(r, 1_000));
        return next(args);
      },
      { step: 'initialize', priority: 'low', name },
    );
    try {
      const change = setZone(m.merchantId, 'Asia/Taipei');
      await new Promise((r) => setTimeout(r, 400));
      // 16:30 UTC on 1 March: 2 March in Taipei. Sent once, while the figures are held.
      const during = await api.post('/subscriptions', m.token, {
        customer_id: c,
        plan_name: 'Pro',
        billing_cycle: 'monthly',
        mrr: '9',
        started_at: '2026-03-01T16:30:00Z',
      });
      expect((await change).status).toBe(200);
      expect(during.status, JSON.stringify(during.body)).toBe(201);
    } finally {
      db().middlewareStack.remove(name);
    }
    const days = (await ok(api.get('/metrics/mrr?start_date=2026-03-01&end_date=2026-03-02&interval=day', m.token))).data;
    expect(days.map((d: { new: string }) => d.new)).toEqual(['0.00', '9.00']);
  }, 120_000);

  it('a retire job naming the generation that counts (a switch whose answer was lost) deletes nothing', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const m = await newMerchant();
    await history(m);
    expect((await setZone(m.merchantId, 'Asia/Taipei')).status).toBe(200);
    const figures = await everything(m);
    // As a build leaves for what it wrote when its switch failed without an answer, though the switch committed.
    const ws = new WriteSet();
    addRestateJob(ws, {
      merchant_id: m.merchantId,
      from_id: 0,
      round: 1,
      retire: { generation: 1, partitions: [`M#${m.merchantId}#MRR#G1`, `M#${m.merchantId}#COHORT#G1`], after: Date.now() - 1 },
    });
    await ws.commit();
    const jobs = await queryAll<{ pk: string; sk: string; retire?: { generation: number } }>(
      { partition: `M#${m.merchantId}#RESTATE` },
      [],
    );
    const wrong = jobs.find((j) => j.retire?.generation === 1)!;
    expect(await runRestateJob({ pk: wrong.pk, sk: wrong.sk }, Date.now() + 60_000)).toBe('done');
    expect(
      (await Promise.all(retirePartitions([`M#${m.merchantId}#MRR#G1`]).map((partition) => queryAll({ partition }, [])))).flat().length,
    ).toBeGreaterThan(0);
    expect(await everything(m)).toEqual(figures);
  }, 120_000);
});
