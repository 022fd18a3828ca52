import { DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { keys, metricsShardPartition } from '#lib/db/keys';
import { WriteSet } from '#lib/db/writes';
import { getMerchant } from '#lib/merchants/store';
import { RECOUNTS_PER_HOUR, resumeRecount, runRecountJob, settleRecounts } from '#lib/metrics/recount';
import { readTimeline } from '#lib/metrics/store';
import { mrrSeries } from '#lib/metrics/service';
import { backofficeJwt } from '../backoffice/support.ts';
import { newMerchant, ok, useApi } from '../support/api.ts';

/**
 * A settings change is a recount (docs/settings.md, "Recounts"; lib/metrics/recount.ts): the change
 * answers at once, every read keeps the figures of the settings before it, whole, with
 * `Recount-Pending: true`, no write is held or refused meanwhile, and one switch later every
 * figure equals a recomputation in the new settings. Here the worker is run by hand (its handler's
 * job, `runRecountJob`), so the test chooses when it runs, and how far.
 */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const api = useApi();
afterEach(() => {
  resetClock();
  vi.restoreAllMocks();
});

const admin = async (merchantId: string) => ({ authorization: `Bearer ${await backofficeJwt(merchantId, 'admin')}` });
/** A zone change, its recount left to run (or not) as the test says. */
const setZone = async (merchantId: string, timezone: string) =>
  api.request('PUT', '/settings', { headers: await admin(merchantId), body: { timezone }, settle: false });

const jobs = async (merchantId: string) =>
  ((
    await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.recountJob(merchantId, '').pk },
        ConsistentRead: true,
      }),
    )
  ).Items ?? []) as { pk: string; sk: string; from_id: number; round: number; retire?: number[]; successor?: number }[];

/** `n` customers on monthly subscriptions started around midnight in Taipei (16:00 UTC), a metadata pair each. */
const withCustomers = async (n: number) => {
  fixedClock('2026-03-10T12:00:00Z');
  const merchant = await newMerchant();
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const id = (await ok(api.post('/customers', merchant.token, { email: `r${i}@recount.test`, metadata: { team: 'core' } }), 201)).data.id;
    ids.push(id);
    await ok(
      api.post('/subscriptions', merchant.token, {
        customer_id: id,
        plan_name: i % 2 ? 'Pro' : 'Basic',
        billing_cycle: 'monthly',
        mrr: String(10 + i),
        started_at: `2026-0${1 + (i % 2)}-${String(10 + (i % 15)).padStart(2, '0')}T${i % 3 ? '16:01' : '15:59'}:00Z`,
      }),
      201,
    );
  }
  return { ...merchant, ids };
};

const RANGE = 'start_date=2026-01-01&end_date=2026-03-10&interval=day';
/** The stored figures, and the same computed from the timelines at read time (the metadata segment every customer matches). */
const storedAndComputed = async (token: string) => {
  const stored = await api.get(`/metrics/mrr?${RANGE}`, token);
  const computed = await ok(api.get(`/metrics/mrr?${RANGE}&metadata.team=core`, token));
  return { stored, computed };
};
const newDays = (data: { date: string; new: string }[]) => data.filter((e) => e.new !== '0.00').map((e) => e.date);

describe('a settings change is a recount', () => {
  it('answers at once; reads keep the zone before, whole, with Recount-Pending; writes meanwhile are neither held nor refused; the switch is exact', async () => {
    const { merchantId, token, ids } = await withCustomers(12);
    const before = await ok(api.get(`/metrics/mrr?${RANGE}`, token));
    const put = await setZone(merchantId, 'Asia/Taipei');
    expect(put.status).toBe(200);
    expect(put.headers.get('recount-pending')).toBe('true');
    expect(put.body.data.recount).toEqual({ status: 'pending', requested_at: '2026-03-10T12:00:00Z', switched_at: null });

    // Until the switch: the figures of UTC, whole, and the header on every answer that declares it.
    const during1 = await api.get(`/metrics/mrr?${RANGE}`, token);
    expect(during1.headers.get('recount-pending')).toBe('true');
    expect(during1.body.data).toEqual(before.data);
    expect((await api.get('/settings', token)).headers.get('recount-pending')).toBe('true');
    // Every read of figures says so: the customers' MRR, the stats, cohorts, plans, churn by reason.
    for (const path of [
      `/customers/${ids[0]}`,
      '/customers',
      '/orders/stats',
      '/metrics/cohorts',
      '/metrics/plans',
      '/metrics/churn-reasons',
    ])
      expect((await api.get(path, token)).headers.get('recount-pending'), path).toBe('true');

    // The worker counts the first customers only (its time runs out), and leaves the next job.
    const [job] = await jobs(merchantId);
    expect(await runRecountJob({ pk: job.pk, sk: job.sk }, Date.now() + 1)).toBe('continued');
    // Writes now: a customer the recount counted and one it did not, a new one; each answers at its first try.
    await ok(
      api.put(`/subscriptions/${(await ok(api.get(`/subscriptions?customer_id=${ids[0]}`, token))).data[0].id}`, token, { mrr: '99' }),
    );
    await ok(
      api.put(`/subscriptions/${(await ok(api.get(`/subscriptions?customer_id=${ids[11]}`, token))).data[0].id}`, token, { mrr: '77' }),
    );
    const late = (await ok(api.post('/customers', token, { email: 'late@recount.test', metadata: { team: 'core' } }), 201)).data.id;
    await ok(
      api.post('/subscriptions', token, {
        customer_id: late,
        plan_name: 'Pro',
        billing_cycle: 'monthly',
        mrr: '5',
        started_at: '2026-02-20T16:30:00Z',
      }),
      201,
    );
    // Still the zone before, whole: stored equals computed in UTC (the computed segment reads the merchant's figures zone).
    const mid = await storedAndComputed(token);
    expect(mid.stored.headers.get('recount-pending')).toBe('true');
    expect(mid.stored.body.data).toEqual(mid.computed.data);
    expect(newDays(mid.stored.body.data)).toContain('2026-01-12');

    await settleRecounts(merchantId);
    const settings = await ok(api.get('/settings', token));
    expect(settings.data.recount).toEqual({ status: 'done', requested_at: '2026-03-10T12:00:00Z', switched_at: '2026-03-10T12:00:00Z' });
    const after = await storedAndComputed(token);
    expect(after.stored.headers.get('recount-pending')).toBeNull();
    expect((await api.get(`/customers/${ids[0]}`, token)).headers.get('recount-pending')).toBeNull();
    expect(after.stored.body.data).toEqual(after.computed.data);
    // 12 January 16:01 UTC is the 13th in Taipei.
    expect(newDays(after.stored.body.data)).toContain('2026-01-13');
    expect(newDays(after.stored.body.data)).not.toContain('2026-01-12');
    // Every head counted in the generation that counts now; the one before is gone.
    const merchant = (await getMerchant(merchantId))!;
    for (const id of [...ids, late]) expect((await readTimeline(merchantId, id)).recounted).toBe(merchant.metrics_generation);
    const { Items } = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': metricsShardPartition(merchantId, null, 0, 0) },
      }),
    );
    expect(Items).toEqual([]);
    expect(await jobs(merchantId)).toEqual([]);
  }, 120_000);

  it('a newer change supersedes a recount under way: its generation is abandoned and deleted, the newer one switches', async () => {
    const { merchantId, token } = await withCustomers(6);
    await setZone(merchantId, 'Asia/Taipei');
    const first = (await getMerchant(merchantId))!.recount!.generation;
    const [job] = await jobs(merchantId);
    await runRecountJob({ pk: job.pk, sk: job.sk }, Date.now() + 1);
    await setZone(merchantId, 'America/New_York');
    await settleRecounts(merchantId);
    const merchant = (await getMerchant(merchantId))!;
    expect(merchant.figures_timezone).toBe('America/New_York');
    expect(merchant.metrics_generation).toBeGreaterThan(first);
    for (let shard = 0; shard < 8; shard++) {
      const { Items } = await db().send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': metricsShardPartition(merchantId, null, first, shard) },
        }),
      );
      expect(Items, `generation ${first} shard ${shard}`).toEqual([]);
    }
    const after = await storedAndComputed(token);
    expect(after.stored.body.data).toEqual(after.computed.data);
  }, 120_000);

  it('a recount that crashes mid-way resumes where it stopped: the customers it counted are not counted twice', async () => {
    const { merchantId, token } = await withCustomers(8);
    await setZone(merchantId, 'Asia/Taipei');
    const [job] = await jobs(merchantId);
    // Every customer counted, then the invocation dies at the switch (as a crash or a timeout would).
    const commit = WriteSet.prototype.commit;
    let counts = 0;
    let crashed = false;
    vi.spyOn(WriteSet.prototype, 'commit').mockImplementation(async function (this: WriteSet) {
      if (this.tags().includes('recount')) counts += 1;
      if (!crashed && this.tags().includes('merchant') && this.tags().includes('generation')) {
        crashed = true;
        throw new Error('the invocation died');
      }
      return commit.call(this);
    });
    await expect(runRecountJob({ pk: job.pk, sk: job.sk }, Date.now() + 60_000)).rejects.toThrow('the invocation died');
    const counted = counts;
    expect(counted).toBeGreaterThan(0);
    // The job is still there (the stream delivers it again); the figures before still answer.
    expect((await jobs(merchantId)).length).toBe(1);
    expect((await api.get(`/metrics/mrr?${RANGE}`, token)).headers.get('recount-pending')).toBe('true');
    await settleRecounts(merchantId);
    // Run again, it counted nobody twice: every head was marked with its count, so none was counted again.
    expect(counts).toBe(counted);
    const after = await storedAndComputed(token);
    expect(after.stored.body.data).toEqual(after.computed.data);
    expect((await getMerchant(merchantId))!.recount!.status).toBe('done');
  }, 120_000);

  it('the generation before is retired by the job after the switch, in rounds when its time runs out', async () => {
    const { merchantId, token } = await withCustomers(4);
    await setZone(merchantId, 'Asia/Taipei');
    const [count] = await jobs(merchantId);
    expect(await runRecountJob({ pk: count.pk, sk: count.sk }, Date.now() + 60_000)).toBe('continued');
    expect((await getMerchant(merchantId))!.recount!.status).toBe('done');
    // The retirement's job, given no time: it puts its next round (a new item) and deletes nothing yet.
    const [retire] = await jobs(merchantId);
    expect(retire).toMatchObject({ retire: [0], successor: (await getMerchant(merchantId))!.metrics_generation });
    expect(await runRecountJob({ pk: retire.pk, sk: retire.sk }, Date.now() - 1)).toBe('continued');
    const [next] = await jobs(merchantId);
    expect(next).toMatchObject({ retire: [0], round: 3 });
    expect(next.sk).not.toBe(retire.sk);
    await settleRecounts(merchantId);
    expect(await jobs(merchantId)).toEqual([]);
    for (let shard = 0; shard < 8; shard++) {
      const { Items } = await db().send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': metricsShardPartition(merchantId, null, 0, shard) },
        }),
      );
      expect(Items).toEqual([]);
    }
    const after = await storedAndComputed(token);
    expect(after.stored.body.data).toEqual(after.computed.data);
  }, 120_000);

  it('a read that began before the switch (its generation retired since) reads again in the generation that counts', async () => {
    const { merchantId, token } = await withCustomers(4);
    await setZone(merchantId, 'Asia/Taipei');
    await settleRecounts(merchantId);
    const now = await ok(api.get(`/metrics/mrr?${RANGE}`, token));
    // As a request that read its token just before the switch: generation 0, UTC; generation 0 is deleted by now.
    const stale = await mrrSeries(merchantId, { reportingCurrency: 'TWD', timezone: 'UTC', generation: 0 }, {
      start_date: '2026-01-01',
      end_date: '2026-03-10',
      interval: 'day',
    } as never);
    expect(stale.data).toEqual(now.data);
  }, 120_000);

  it('a job given up on (its dead-letter queue) is put again by ops metrics resume-recount, and the recount finishes', async () => {
    const { merchantId, token } = await withCustomers(4);
    await setZone(merchantId, 'Asia/Taipei');
    const [job] = await jobs(merchantId);
    await runRecountJob({ pk: job.pk, sk: job.sk }, Date.now() + 1);
    // The next round's record given up on: its item stays, unread; here it is gone altogether.
    for (const left of await jobs(merchantId))
      await db().send(new DeleteCommand({ TableName: tableName(), Key: { pk: left.pk, sk: left.sk } }));
    expect((await getMerchant(merchantId))!.recount!.status).toBe('pending');
    expect(await resumeRecount(merchantId)).toEqual({ resumed: true, generation: (await getMerchant(merchantId))!.recount!.generation });
    await settleRecounts(merchantId);
    expect((await getMerchant(merchantId))!.recount!.status).toBe('done');
    expect(await resumeRecount(merchantId)).toEqual({ resumed: false });
    const after = await storedAndComputed(token);
    expect(after.stored.body.data).toEqual(after.computed.data);
  }, 120_000);

  it(`at most ${RECOUNTS_PER_HOUR} recounts an hour: the next is 429 with Retry-After and changes nothing; the zone already set starts none`, async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const { merchantId, token } = await newMerchant();
    const zones = ['Asia/Taipei', 'UTC'];
    for (let i = 0; i < RECOUNTS_PER_HOUR; i++) {
      fixedClock(`2026-03-10T12:${String(i * 5).padStart(2, '0')}:00Z`);
      expect((await setZone(merchantId, zones[i % 2])).status).toBe(200);
    }
    // Setting the zone already set (UTC after ten changes) starts nothing, limit or not.
    const same = await setZone(merchantId, 'UTC');
    expect(same.status).toBe(200);
    fixedClock('2026-03-10T12:50:00Z');
    const refused = await setZone(merchantId, 'Asia/Tokyo');
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ message: 'Too Many Attempts.' });
    // The first of the ten started at 12:00: an hour later, at 13:00, there is room again.
    expect(refused.headers.get('retry-after')).toBe('600');
    expect((await ok(api.get('/settings', token))).data.timezone).toBe('UTC');
    // A rate change counts against the same limit.
    expect(
      (await api.request('PUT', '/exchange-rates/USD', { token, body: { rates: [{ month: '2026-01', rate: '30' }] }, settle: false }))
        .status,
    ).toBe(429);
    fixedClock('2026-03-10T13:00:01Z');
    expect((await setZone(merchantId, 'Asia/Tokyo')).status).toBe(200);
    await settleRecounts(merchantId);
    expect((await getMerchant(merchantId))!.figures_timezone).toBe('Asia/Tokyo');
  }, 120_000);
});
