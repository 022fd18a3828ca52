import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { GENERATION_SHARDS, keys } from '#lib/db/keys';
import { DEADLINE_MARGIN_MS } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { addRateTablePut, readRateTable } from '#lib/exchange-rates/store';
import { createMerchant } from '#lib/merchants/service';
import { changeMerchant } from '#lib/merchants/settings';
import { addRestateJob, handleRestateJobs, RESTATE_JOB_ENTITY, type RestateJob } from '#lib/metrics/restate-jobs';
import { retirePartitions } from '#lib/metrics/generation';
import { addTimelineChange, EMPTY_TIMELINE, readTimeline } from '#lib/metrics/store';
import { orderLine, type Timeline } from '#lib/metrics/timeline';
import { PENDING_MOVES_PK_PATTERNS } from '../../infra/constructs/pending-moves-applier.ts';
import { RESTATE_WORKER_GRANTS } from '../../infra/constructs/restate-worker.ts';
import type { TableAction } from '../../infra/constructs/api-function.ts';
import { streamRecord } from '../outbox/support/records.ts';
import { iamLike, recordSentRequests, type Sent } from '../support/sent-requests.ts';

/**
 * The requests the restate worker sends, as DynamoDB receives them, checked against its IAM grants
 * on AWS (RESTATE_WORKER_GRANTS): every GetItem, BatchGetItem key, Query and action of a
 * transaction on a partition its grant for that action names. DynamoDB Local checks no IAM: this
 * is where a pass reaching a new kind of item would fail before AWS refused it.
 */

const { during } = recordSentRequests('restate-worker-iam:record');

const allowed = (action: TableAction, pk: string) =>
  RESTATE_WORKER_GRANTS.some((g) => g.action === action && g.leadingKeys.some((p) => iamLike(p, pk)));

/** Each request as IAM authorises it: one (action, partition key) per item it names. */
const authorised = ({ operation, body }: Sent): { action: string; pk: string }[] => {
  const pkOf = (key: Record<string, { S: string }>) => key.pk.S;
  switch (operation) {
    case 'GetItem':
      return [{ action: 'GetItem', pk: pkOf(body.Key) }];
    case 'UpdateItem':
      return [{ action: 'UpdateItem', pk: pkOf(body.Key) }];
    case 'BatchGetItem':
      return Object.values(body.RequestItems as Record<string, { Keys: Record<string, { S: string }>[] }>).flatMap((r) =>
        r.Keys.map((k) => ({ action: 'BatchGetItem', pk: pkOf(k) })),
      );
    case 'Query': {
      expect(body.IndexName, 'no index query').toBeUndefined();
      const [, name, value] = /^(#?\w+) = (:\w+)/.exec(body.KeyConditionExpression)!;
      expect(body.ExpressionAttributeNames?.[name] ?? name).toBe('pk');
      return [{ action: 'Query', pk: body.ExpressionAttributeValues[value].S }];
    }
    case 'BatchWriteItem':
      return Object.values(body.RequestItems as Record<string, Record<string, any>[]>).flatMap((writes) =>
        writes.map((w) => ({ action: 'BatchWriteItem', pk: pkOf(w.PutRequest?.Item ?? w.DeleteRequest.Key) })),
      );
    case 'TransactWriteItems':
      return (body.TransactItems as Record<string, any>[]).map((item) => {
        const [kind, op] = Object.entries(item)[0]!;
        const action = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'ConditionCheckItem' }[kind]!;
        return { action, pk: pkOf(op.Item ?? op.Key) };
      });
    default:
      return [{ action: operation, pk: '' }];
  }
};

const context = (remainingMs: number) =>
  ({ getRemainingTimeInMillis: () => remainingMs, awsRequestId: 'req-1', functionName: 'restateWorker' }) as unknown as Context;

/** The job items of the merchant, read apart from the recording. */
const jobs = async (merchantId: string) => {
  const { Items } = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.restateJob(merchantId, '').pk },
      ConsistentRead: true,
    }),
  );
  return Items ?? [];
};

/** Puts a job (as a request cut short does) and runs the worker on its INSERT: the requests it sent, and the result. */
const runJob = async (job: RestateJob, remainingMs = 60_000) => {
  const ws = new WriteSet();
  addRestateJob(ws, job);
  await ws.commit();
  const [item] = await jobs(job.merchant_id);
  return runRecord(streamRecord('INSERT', item!), remainingMs);
};
const runRecord = async (rec: ReturnType<typeof streamRecord>, remainingMs = 60_000) => {
  const { result, requests } = await during(() => handleRestateJobs({ Records: [rec] }, context(remainingMs)));
  return { result, requests: requests.flatMap(authorised), record: rec };
};

/** Paid monthly orders in USD, `count` of them a week apart from 2020 on, late in the UTC day (the next day in Taipei): a long timeline. */
const usdOrders = (count: number): Timeline =>
  Object.fromEntries(
    Array.from({ length: count }, (_, i) => {
      const paidAt = `${new Date(Date.parse('2020-01-06T20:00:00Z') + i * 7 * 86_400_000).toISOString().slice(0, 19)}Z`;
      return [
        `OLONG-${i}`,
        orderLine({ status: 'paid', amount: String(10 + (i % 7)), currency: 'USD', billing_cycle: 'monthly', paid_at: paidAt }),
      ];
    }),
  );

let merchantId: string;
beforeAll(async () => {
  const merchant = await createMerchant('restate worker iam', 'TWD');
  merchantId = merchant.merchant_id;
  // Customers 1 and 2 have timelines (a short one; one long enough for chunks, and to spill its moves
  // into pending-moves items); customer 3 has none.
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.sequences(merchantId),
      UpdateExpression: 'ADD #c :n',
      ExpressionAttributeNames: { '#c': 'customer' },
      ExpressionAttributeValues: { ':n': 3 },
    }),
  );
  for (const [id, timeline] of [
    [1, usdOrders(3)],
    [2, usdOrders(400)],
  ] as const) {
    const ws = new WriteSet();
    await addTimelineChange(ws, merchantId, { reportingCurrency: 'TWD', timezone: 'UTC', generation: 0 }, id, EMPTY_TIMELINE, timeline);
    await ws.commit();
  }
  expect((await readTimeline(merchantId, 2)).chunks?.size).toBeGreaterThan(1);
}, 120_000);

const expectInsideGrants = (requests: { action: string; pk: string }[]) => {
  expect(requests.length).toBeGreaterThan(0);
  for (const { action, pk } of requests) expect(allowed(action as TableAction, pk), `${action} ${pk}`).toBe(true);
};

/** USD's rate from 2020-01 changed to `rate`, and the pass the change leaves run to its end. */
const rateChangePass = async (rate: string) => {
  const ws = new WriteSet();
  addRateTablePut(ws, merchantId, { ...(await readRateTable(merchantId, 'USD')), rates: { '2020-01': rate, '2021-06': '31' } });
  await ws.commit();
  const ran = await runJob({ merchant_id: merchantId, currency: 'USD', from_id: 1, round: 1 });
  expect(ran.result).toEqual({ batchItemFailures: [] });
  expect(await jobs(merchantId)).toEqual([]);
  return ran;
};

describe("the restate worker's requests stay inside its IAM grants", () => {
  it('a rate change: both customers read whole (one chunked), converted again and written, the rates read and checked, the job ended', async () => {
    const { requests } = await rateChangePass('30');
    expectInsideGrants(requests);
    const actions = new Set(requests.map((r) => r.action));
    for (const action of ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem'])
      expect(actions, action).toContain(action);
  }, 120_000);

  it('a zone change: every customer moved to the new zone, moves past one transaction spilled and applied', async () => {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.merchant(merchantId),
        UpdateExpression: 'SET #z = :z',
        ExpressionAttributeNames: { '#z': 'timezone' },
        ExpressionAttributeValues: { ':z': 'Asia/Taipei' },
      }),
    );
    const { result, requests } = await runJob({ merchant_id: merchantId, from_id: 1, round: 1 });
    expect(result).toEqual({ batchItemFailures: [] });
    expect((await readTimeline(merchantId, 2)).zone).toBe('Asia/Taipei');
    expectInsideGrants(requests);
    // Pending-moves items were put, then read, applied and deleted.
    const inMetrics = (action: string) =>
      requests.some((r) => r.action === action && PENDING_MOVES_PK_PATTERNS.some((p) => iamLike(p, r.pk)));
    for (const action of ['PutItem', 'GetItem', 'UpdateItem', 'DeleteItem']) expect(inMetrics(action), action).toBe(true);
  }, 120_000);

  it('a job without time left is put again as a new item; a record delivered twice finds its job gone', async () => {
    const deferred = await runJob({ merchant_id: merchantId, from_id: 2, round: 3 }, DEADLINE_MARGIN_MS + 1_000);
    expect(deferred.result).toEqual({ batchItemFailures: [] });
    expectInsideGrants(deferred.requests);
    const [next] = await jobs(merchantId);
    expect(next).toMatchObject({ entity: RESTATE_JOB_ENTITY, from_id: 2, round: 3 });
    expect(deferred.requests.filter((r) => r.action === 'PutItem').map((r) => r.pk)).toEqual([keys.restateJob(merchantId, '').pk]);

    const ran = await runRecord(streamRecord('INSERT', next!));
    expect(ran.result).toEqual({ batchItemFailures: [] });
    const again = await runRecord(ran.record);
    expect(again.result).toEqual({ batchItemFailures: [] });
    expect(again.requests).toEqual([{ action: 'GetItem', pk: keys.restateJob(merchantId, '').pk }]);
    expect(await jobs(merchantId)).toEqual([]);
  }, 120_000);

  it("a pass that meets a build's pause reads the generation copy until the pause ends, then moves its customers", async () => {
    const pausedUntil = Date.now() + 1_000;
    for (let shard = 0; shard < GENERATION_SHARDS; shard++)
      await db().send(
        new PutCommand({
          TableName: tableName(),
          Item: { ...keys.generation(merchantId, shard), generation: 0, paused_until: pausedUntil },
        }),
      );
    const { requests } = await rateChangePass('29');
    expect(Date.now()).toBeGreaterThanOrEqual(pausedUntil);
    expect(requests.some((r) => r.action === 'GetItem' && r.pk.startsWith(keys.generation(merchantId, 0).pk.replace(/\d+$/, '')))).toBe(
      true,
    );
  }, 120_000);

  it("a retire job: an older generation's items read by partition and deleted, nothing else", async () => {
    // A zone change builds generation 1 (in the request's function) and leaves generation 0's retirement.
    await changeMerchant(merchantId, { timezone: 'Europe/Paris' });
    const [job] = (await jobs(merchantId)) as (RestateJob & { pk: string; sk: string })[];
    expect(job.retire?.generation).toBe(0);
    await db().send(new PutCommand({ TableName: tableName(), Item: { ...job, retire: { ...job.retire!, after: Date.now() - 1 } } }));
    const { result, requests } = await runRecord(streamRecord('INSERT', job as unknown as Record<string, unknown>));
    expect(result).toEqual({ batchItemFailures: [] });
    expect(await jobs(merchantId)).toEqual([]);
    expectInsideGrants(requests);
    const deleted = requests.filter((r) => r.action === 'BatchWriteItem');
    expect(deleted.length).toBeGreaterThan(0);
    // Every partition of the older generation read; deletes only there (an empty one, such as churn by reason here, has none).
    // The job names the aggregates by the prefix of their 8 shard partitions; each is read.
    const partitions = retirePartitions(job.retire!.partitions);
    expect(partitions.length).toBeGreaterThan(job.retire!.partitions.length);
    expect(new Set(requests.filter((r) => r.action === 'Query').map((r) => r.pk))).toEqual(new Set(partitions));
    for (const { pk } of deleted) expect(partitions).toContain(pk);
  }, 120_000);
});
