import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { keys, METRIC_SHARDS } from '#lib/db/keys';
import { applyPending, PENDING_MOVES_ENTITY, type PendingMoves } from '#lib/db/writes';
import { handlePendingMoves } from '#lib/metrics/pending-applier';
import { pendingHome } from '#lib/metrics/store';
import { streamRecord } from '../outbox/support/records.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { pendingItemsOf } from '../support/pending-items.ts';

/**
 * The pending-moves backlog (lib/db/writes.ts): every transaction putting pending-moves items adds
 * them to its metric shard's count under a bound, every apply takes one off, so a batch meeting a
 * full backlog is answered `throttled` and stores nothing; and the applier's pace on a shard's keys
 * (lib/metrics/pending-applier.ts). The suite runs both unpaced and unbounded (vitest.config.ts);
 * these tests set their own.
 */
const api = useApi();
const saved = { bound: process.env.PENDING_BACKLOG_BOUND, pace: process.env.APPLIER_WCU_PER_SECOND };
const restore = (name: string, value: string | undefined) => {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
};
afterEach(() => {
  restore('PENDING_BACKLOG_BOUND', saved.bound);
  restore('APPLIER_WCU_PER_SECOND', saved.pace);
});

const read = async (key: { pk: string; sk: string }) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;

/** The segments the test's subscriptions move (plan Pro, monthly, in the reporting currency). */
const SEGMENTS = [
  { dimension: 'plan', value: 'Pro' },
  { dimension: 'billing_cycle', value: 'monthly' },
];

/** The backlog counts of the merchant's metric shards. */
const counts = async (merchantId: string) =>
  Promise.all(Array.from({ length: METRIC_SHARDS }, async (_, s) => Number((await read(keys.pendingBacklog(merchantId, s)))?.n ?? 0)));

/** Each shard's count equals the pending items waiting in it. */
const expectCountsExact = async (merchantId: string) => {
  const items = await pendingItemsOf(merchantId, SEGMENTS);
  const byShard = Array.from({ length: METRIC_SHARDS }, (_, s) => items.filter((i) => Number(i.pending_shard) === s).length);
  expect(await counts(merchantId)).toEqual(byShard);
  return items;
};

const subscriptions = (run: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    external_id: `${run}-${i}`,
    customer_email: `${run}-${i}@backlog.test`,
    plan_name: 'Pro',
    mrr: '30.00',
    billing_cycle: 'monthly',
    started_at: `202${i % 4}-0${1 + (i % 9)}-15T10:00:00Z`,
  }));

describe('the pending-moves backlog', () => {
  it('counts every pending item in its shard; a batch meeting a full backlog is answered throttled and stores nothing; applied, it goes', async () => {
    const { merchantId, token } = await newMerchant();
    const total = async () => (await api.get('/subscriptions', token)).body.meta.total as number;
    const first = await api.post('/subscriptions/batch', token, { subscriptions: subscriptions('a', 3) }, { 'idempotency-key': 'b-a' });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data.results.created).toHaveLength(3);
    const waiting = await expectCountsExact(merchantId);
    expect(waiting.length).toBeGreaterThan(0);

    // A bound of one item a shard: a back-dated subscription moves the whole's and its segments'
    // months and cohorts, several pending items, whichever shard it goes to.
    process.env.PENDING_BACKLOG_BOUND = '1';
    const second = await api.post('/subscriptions/batch', token, { subscriptions: subscriptions('b', 10) }, { 'idempotency-key': 'b-b' });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    const failed = second.body.data.results.failed as { reason: string; identifier: string }[];
    expect(failed.map((f) => f.identifier).sort()).toEqual(
      subscriptions('b', 10)
        .map((s) => s.external_id)
        .sort(),
    );
    expect(new Set(failed.map((f) => f.reason))).toEqual(new Set(['throttled']));
    expect(await total()).toBe(3);
    expect(await expectCountsExact(merchantId)).toHaveLength(waiting.length);

    // The applier catches up: every item applied once, every count back to 0, and the refused items go through.
    for (const item of waiting) expect(await applyPending({ pk: item.pk, sk: item.sk })).toBe(true);
    expect(await counts(merchantId)).toEqual(Array(METRIC_SHARDS).fill(0));
    restore('PENDING_BACKLOG_BOUND', saved.bound);
    const third = await api.post('/subscriptions/batch', token, { subscriptions: subscriptions('b', 1) }, { 'idempotency-key': 'b-c' });
    expect(third.body.data.results.created).toHaveLength(1);
    expect(await total()).toBe(4);
    await expectCountsExact(merchantId);
  });
});

describe('the applier’s pace', () => {
  it('takes at most its write units a second from a shard’s keys, every item applied once', async () => {
    process.env.APPLIER_WCU_PER_SECOND = '60';
    const merchantId = `mer_${randomBytes(10).toString('hex')}`;
    const home = pendingHome(merchantId, 'M#2024-03', 3);
    // Eight items of ten moves each: 2 × 12 write units on the shard's key an apply (the moves, the delete; the count is another key).
    const moves: PendingMoves = Array.from({ length: 10 }, (_, d) => [`D#2024-03-${String(d + 1).padStart(2, '0')}#03`, { n: '1' }]);
    const records = [];
    for (let i = 0; i < 8; i++) {
      const item = {
        pk: home.pk,
        sk: `${home.sk}#P#pace-${i}#000`,
        entity: PENDING_MOVES_ENTITY,
        moves: JSON.stringify(moves),
        pending_shard: 3,
      };
      await db().send(new PutCommand({ TableName: tableName(), Item: item }));
      records.push(streamRecord('INSERT', item));
    }
    const started = Date.now();
    const context = {
      getRemainingTimeInMillis: () => 30_000,
      awsRequestId: 'r',
      functionName: 'pendingMovesApplier',
    } as unknown as Context;
    expect(await handlePendingMoves({ Records: records }, context)).toEqual({ batchItemFailures: [] });
    const seconds = (Date.now() - started) / 1000;
    // 8 × 22 = 176 units at 60 a second: the last ones wait for the third ledger second (over 1 s on).
    expect(seconds).toBeGreaterThan(1);
    expect(await read({ pk: home.pk, sk: 'D#2024-03-01#03' })).toMatchObject({ n: 8 });
    const ledger = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :a)',
        ExpressionAttributeValues: { ':pk': keys.applierPace(merchantId, 3, 0).pk, ':a': 'A#03#' },
        ConsistentRead: true,
      }),
    );
    const used = (ledger.Items ?? []).map((i) => Number(i.used));
    expect(used.length).toBeGreaterThanOrEqual(3);
    for (const u of used) expect(u).toBeLessThanOrEqual(60);
    expect(used.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(176);
  });
});
