import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Context, DynamoDBRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { withDeadline } from '#lib/db/retry';
import { putExchangeRates } from '#lib/exchange-rates/service';
import { changeMerchant } from '#lib/merchants/settings';
import { restateCustomers } from '#lib/metrics/restate';
import { addRestateJob, handleRestateJobs, RESTATE_JOB_ENTITY, runRestateJob } from '#lib/metrics/restate-jobs';
import { restatePending } from '#lib/metrics/restate-pending';
import { WriteSet } from '#lib/db/writes';
import { passPacer, tableShares } from '#lib/metrics/pace';
import { newMerchant, ok, useApi } from '../support/api.ts';

/**
 * A pass after a rate or zone change that its request could not finish goes on by itself
 * (docs/exchange-rates.md, "After a rate change"): the request leaves a restate job, and the
 * restate worker (here its handler, given the stream records the mapping would give it) goes on
 * from where the pass stopped, round after round, until every customer is moved. Passes are what a
 * merchant past the generation build's bound gets (lib/metrics/generation.ts): here every merchant is.
 */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
process.env.GENERATION_BUILD_MAX_CUSTOMERS = '0';
const api = useApi();
afterEach(() => {
  resetClock();
  vi.restoreAllMocks();
});

type Job = { pk: string; sk: string; entity: string; currency?: string; from_id: number; round: number };
const jobsOf = async (merchantId: string) =>
  ((
    await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.restateJob(merchantId, '').pk },
        ConsistentRead: true,
      }),
    )
  ).Items ?? []) as Job[];

/** The record the stream mapping hands the worker for a job's INSERT. */
const recordOf = (job: Job, sequence = '1'): DynamoDBRecord => ({
  eventName: 'INSERT',
  dynamodb: {
    Keys: { pk: { S: job.pk }, sk: { S: job.sk } },
    NewImage: { pk: { S: job.pk }, sk: { S: job.sk }, entity: { S: job.entity } },
    SequenceNumber: sequence,
  },
});
const context = (ms = 60_000) => ({ getRemainingTimeInMillis: () => ms }) as Context;

/** A TWD merchant with `n` customers on USD subscriptions of 10 from 15 January 2026 (today 10 March). */
const inDollars = async (n: number) => {
  fixedClock('2026-03-10T12:00:00Z');
  const merchant = await newMerchant();
  const subscriptions = Array.from({ length: n }, (_, i) => ({
    external_id: `job-${i}`,
    customer_email: `job${i}@rates.test`,
    plan_name: 'Pro',
    billing_cycle: 'monthly',
    mrr: '10',
    currency: 'USD',
    started_at: '2026-01-15T00:00:00Z',
  }));
  await ok(api.post('/subscriptions/batch', merchant.token, { subscriptions }, { 'idempotency-key': `job-${Math.random()}` }));
  return merchant;
};
const marchMrr = async (token: string) =>
  (await ok(api.get('/metrics/mrr?start_date=2026-03-01&end_date=2026-03-10&interval=month', token))).data[0] as {
    mrr: string;
    unconverted: Record<string, string>;
  };
const MRR_PATH = '/metrics/mrr?start_date=2026-01-01&end_date=2026-03-10&interval=month';
const auth = (merchantId: string) => ({ merchantId, abilities: [], reportingCurrency: 'TWD', timezone: 'UTC', generation: 0 });

describe('restate jobs: a pass cut short goes on in the background', () => {
  it('a PUT with no time left for its pass leaves a job; the worker moves every customer, ends the job, and a redelivery does nothing', async () => {
    const { merchantId, token } = await inDollars(4);
    expect(await marchMrr(token)).toEqual(expect.objectContaining({ mrr: '0.00', unconverted: { USD: '40.00' } }));
    // The invocation's deadline 1.5 s away: the pass keeps 2 s to answer, so it stops before its first customer.
    await withDeadline(Date.now() + 1_500, () => putExchangeRates(auth(merchantId), 'USD', [{ month: '2026-01', rate: '30' }]));
    const [job, ...others] = await jobsOf(merchantId);
    expect(others).toEqual([]);
    expect(job).toMatchObject({ entity: RESTATE_JOB_ENTITY, currency: 'USD', from_id: 1, round: 1 });
    // Until the worker runs, the customers count at the old rates (none): still left out.
    expect((await marchMrr(token)).mrr).toBe('0.00');

    expect(await handleRestateJobs({ Records: [recordOf(job)] }, context())).toEqual({ batchItemFailures: [] });
    expect(await marchMrr(token)).toEqual(expect.objectContaining({ mrr: '1200.00', unconverted: {} }));
    expect(await jobsOf(merchantId)).toEqual([]);
    // The same record delivered again finds its job gone: nothing is run or written.
    expect(await runRestateJob({ pk: job.pk, sk: job.sk }, Date.now() + 60_000)).toBe('gone');
    expect(await jobsOf(merchantId)).toEqual([]);
  });

  it('a job out of time leaves the next round from where it stopped; one with no time at all is put again as it was', async () => {
    const { merchantId, token } = await inDollars(3);
    // A zone change whose pass had no time: a job without a currency (the zone's customers only).
    await changeMerchant(merchantId, { timezone: 'Asia/Taipei' }, Date.now() - 1);
    const [first] = await jobsOf(merchantId);
    expect(first).toMatchObject({ from_id: 1, round: 1 });
    expect(first.currency).toBeUndefined();

    // No time at all: the same job again, as a new item (a new INSERT for the stream).
    expect(await runRestateJob({ pk: first.pk, sk: first.sk }, Date.now() - 1)).toBe('deferred');
    const [again, ...rest] = await jobsOf(merchantId);
    expect(rest).toEqual([]);
    expect(again).toMatchObject({ from_id: 1, round: 1 });
    expect(again.sk).not.toBe(first.sk);

    // Time runs out once the first round's heads are read: the next round, from that round's first customer.
    const realNow = Date.now.bind(Date);
    const until = realNow() + 60_000;
    let reads = 0;
    const batch = await import('#lib/db/batch-get');
    const original = batch.batchGet;
    vi.spyOn(batch, 'batchGet').mockImplementation(async (...args: Parameters<typeof original>) => {
      reads += 1;
      return original(...args);
    });
    vi.spyOn(Date, 'now').mockImplementation(() => (reads > 0 ? until + 1 : realNow()));
    expect(await runRestateJob({ pk: again.pk, sk: again.sk }, until)).toBe('continued');
    vi.restoreAllMocks();
    const [second, ...more] = await jobsOf(merchantId);
    expect(more).toEqual([]);
    expect(second).toMatchObject({ from_id: 1, round: 2 });

    // With time, the next round finishes: the customers are in Taipei's days, and no job is left.
    expect(await runRestateJob({ pk: second.pk, sk: second.sk }, Date.now() + 60_000)).toBe('done');
    expect(await jobsOf(merchantId)).toEqual([]);
    expect(await restateCustomers(merchantId, 'TWD', 'Asia/Taipei')).toEqual({ customers_read: 3, moved: 0, done: true, next: null });
    expect((await marchMrr(token)).unconverted).toEqual({ USD: '30.00' });
  });

  it('a pass goes on from a customer id: the customers before it are not read', async () => {
    const { merchantId } = await inDollars(4);
    await changeMerchant(merchantId, { timezone: 'Asia/Taipei' }, Date.now() - 1);
    expect(await restateCustomers(merchantId, 'TWD', 'Asia/Taipei', { fromId: 3 })).toEqual({
      customers_read: 2,
      moved: 2,
      done: true,
      next: null,
    });
    expect(await restateCustomers(merchantId, 'TWD', 'Asia/Taipei')).toEqual({ customers_read: 4, moved: 2, done: true, next: null });
  });

  it('a pass keeps to its pace: a customer whose turn comes after the time left is left for the next round', async () => {
    const { merchantId } = await inDollars(3);
    await changeMerchant(merchantId, { timezone: 'Asia/Taipei' }, Date.now() - 1);
    // One write unit a second: a customer's transaction (its timeline head, 2 units) takes two
    // seconds' allowance. In about 2.5 s at most two of the three fit, however long the reads take;
    // the customers whose turn comes later are left, and the next pass moves exactly those.
    process.env.RESTATE_WCU_PER_SECOND = '1';
    let first: Awaited<ReturnType<typeof restateCustomers>>;
    try {
      first = await restateCustomers(merchantId, 'TWD', 'Asia/Taipei', { until: Date.now() + 2_500 });
    } finally {
      delete process.env.RESTATE_WCU_PER_SECOND;
    }
    expect(first).toMatchObject({ customers_read: 3, done: false, next: 1 });
    expect(first.moved).toBeLessThan(3);
    expect(await restateCustomers(merchantId, 'TWD', 'Asia/Taipei')).toEqual({
      customers_read: 3,
      moved: 3 - first.moved,
      done: true,
      next: null,
    });
  });

  it("a merchant's passes share one pace in the table: two at once never take more than a second's allowance, another merchant has its own", async () => {
    const [one, other] = [await newMerchant(), await newMerchant()];
    // A fixed clock: the passes book ahead without waiting, and the ledger shows where each share went.
    const at = Date.parse('2026-03-10T12:00:00Z');
    const second = Math.floor(at / 1_000);
    const costs = [7, 9, 18, 4, 12, 30, 5, 11];
    const run = (merchantId: string) => async () => {
      const pacer = passPacer(40, tableShares(merchantId), () => at);
      const turns: number[] = [];
      for (const wcu of costs) turns.push(await pacer.book(wcu));
      return turns;
    };
    const [a, b, c] = await Promise.all([run(one.merchantId)(), run(one.merchantId)(), run(other.merchantId)()]);
    const ledger = async (merchantId: string) =>
      ((
        await db().send(
          new QueryCommand({
            TableName: tableName(),
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': keys.restatePace(merchantId, 0).pk },
            ConsistentRead: true,
          }),
        )
      ).Items ?? []) as { sk: string; used: number; expires_at: number }[];
    const ours = await ledger(one.merchantId);
    const total = costs.reduce((x, y) => x + y, 0);
    // Both passes' 192 units went through one ledger, 40 a second at most: 5 seconds or more.
    expect(ours.every((s) => s.used <= 40 && s.expires_at === Number(s.sk) + 3_600)).toBe(true);
    expect(ours.reduce((x, s) => x + s.used, 0)).toBeGreaterThanOrEqual(2 * total);
    expect(Math.max(...a, ...b)).toBeGreaterThanOrEqual((second + 4) * 1_000);
    // The other merchant's pass, alone on its own ledger, took half as many seconds.
    const theirs = await ledger(other.merchantId);
    expect(theirs.reduce((x, s) => x + s.used, 0)).toBeGreaterThanOrEqual(total);
    expect(Math.max(...c)).toBeLessThan(Math.max(...a, ...b));
    expect(Math.max(...c)).toBeGreaterThanOrEqual((second + 2) * 1_000);
  });

  it('the answer says when customers are left for the background (Restate-Pending), and not when all moved', async () => {
    const { merchantId, token } = await inDollars(2);
    // A hundredth of a write unit a second: the first customer's turn (2 units or more) comes after
    // 200 s, far past the request's time (25 s in the tests), so the pass leaves it at once.
    process.env.RESTATE_WCU_PER_SECOND = '0.01';
    try {
      const cut = await api.put('/exchange-rates/USD', token, { rates: [{ month: '2026-01', rate: '30' }] });
      expect(cut.status, JSON.stringify(cut.body)).toBe(200);
      expect(cut.headers.get('restate-pending')).toBe('true');
    } finally {
      delete process.env.RESTATE_WCU_PER_SECOND;
    }
    expect(await jobsOf(merchantId)).toEqual([expect.objectContaining({ currency: 'USD', from_id: 1, round: 1 })]);
    // While the job waits, the settings, the rates and the whole's MRR reads (JSON and CSV) say so too.
    const READS = ['/settings', '/exchange-rates', MRR_PATH, '/metrics/summary', `${MRR_PATH}&currency=TWD`];
    const pendingOn = async () =>
      Promise.all(
        READS.map(async (path) => {
          const r = await api.get(path, token);
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          return r.headers.get('restate-pending');
        }),
      );
    expect(await pendingOn()).toEqual(READS.map(() => 'true'));
    const csv = await api.request('GET', MRR_PATH, { token, headers: { accept: 'text/csv' } });
    expect([csv.status, csv.headers.get('restate-pending')]).toEqual([200, 'true']);
    // A stored segment's own items carry no marker: its reads do not say it (docs/exchange-rates.md).
    expect((await api.get(`${MRR_PATH}&plan=Pro`, token)).headers.get('restate-pending')).toBeNull();
    const answers = () => Promise.all([MRR_PATH, '/metrics/summary'].map(async (path) => (await api.get(path, token)).body));
    // Repeated with time to spare: the customer left moves in the request, but the first PUT's job
    // still waits (no worker here), so the answer still says a pass is under way.
    const all = await api.put('/exchange-rates/USD', token, { rates: [{ month: '2026-01', rate: '30' }] });
    expect(all.status).toBe(200);
    expect(all.headers.get('restate-pending')).toBe('true');
    expect((await marchMrr(token)).mrr).toBe('600.00');
    const withMarker = await answers();
    // The worker ends the job (nothing left to move): no longer pending, and a PUT with time to spare says nothing.
    const [job] = await jobsOf(merchantId);
    expect(await handleRestateJobs({ Records: [recordOf(job)] }, context())).toEqual({ batchItemFailures: [] });
    expect(await jobsOf(merchantId)).toEqual([]);
    expect(await pendingOn()).toEqual(READS.map(() => null));
    // The marker never counted in the figures: the same answers without it (nothing moved since).
    expect(await answers()).toEqual(withMarker);
    const settled = await api.put('/exchange-rates/USD', token, { rates: [{ month: '2026-01', rate: '30' }] });
    expect(settled.status).toBe(200);
    expect(settled.headers.get('restate-pending')).toBeNull();
  });

  it('a job past its TTL that DynamoDB has not swept yet is not pending', async () => {
    const { merchantId } = await newMerchant();
    expect(await restatePending(merchantId)).toBe(false);
    // Put 8 days ago: its 7-day TTL has passed.
    fixedClock(new Date(Date.now() - 8 * 86_400_000).toISOString());
    const ws = new WriteSet();
    addRestateJob(ws, { merchant_id: merchantId, from_id: 1, round: 1 });
    await ws.commit();
    resetClock();
    expect(await jobsOf(merchantId)).toHaveLength(1);
    expect(await restatePending(merchantId)).toBe(false);
    const fresh = new WriteSet();
    addRestateJob(fresh, { merchant_id: merchantId, from_id: 1, round: 1 });
    await fresh.commit();
    expect(await restatePending(merchantId)).toBe(true);
  });

  it('the worker leaves other records alone and reports a job it could not run, so the mapping retries it', async () => {
    const { merchantId } = await inDollars(1);
    await changeMerchant(merchantId, { timezone: 'Asia/Taipei' }, Date.now() - 1);
    const [job] = await jobsOf(merchantId);
    const other: DynamoDBRecord = { ...recordOf(job, '7'), eventName: 'MODIFY' };
    const broken: DynamoDBRecord = {
      eventName: 'INSERT',
      dynamodb: { NewImage: { entity: { S: RESTATE_JOB_ENTITY } }, SequenceNumber: '9' },
    };
    expect(await handleRestateJobs({ Records: [other, broken] }, context())).toEqual({ batchItemFailures: [{ itemIdentifier: '9' }] });
    // The MODIFY ran nothing: the job is still there.
    expect((await jobsOf(merchantId)).map((j) => j.sk)).toEqual([job.sk]);
  });
});
