import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { DEADLINE_MARGIN_MS } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { putExchangeRates } from '#lib/exchange-rates/service';
import { createMerchant, createToken } from '#lib/merchants/service';
import { changeMerchant } from '#lib/settings/service';
import { getMerchant } from '#lib/merchants/store';
import { handleRecountJobs, RECOUNT_JOB_ENTITY } from '#lib/metrics/recount';
import { addTimelineChange, EMPTY_TIMELINE, readTimeline } from '#lib/metrics/store';
import { orderLine, type Timeline } from '#lib/metrics/timeline';
import { PENDING_MOVES_PK_PATTERNS } from '../../infra/constructs/pending-moves-applier.ts';
import { RECOUNT_WORKER_GRANTS } from '../../infra/constructs/recount-worker.ts';
import type { TableAction } from '../../infra/constructs/api-function.ts';
import { streamRecord } from '../outbox/support/records.ts';
import { iamLike, recordSentRequests, type Sent } from '../support/sent-requests.ts';

/**
 * The requests the recount worker sends, as DynamoDB receives them, checked against its IAM grants
 * on AWS (RECOUNT_WORKER_GRANTS): every GetItem, BatchGetItem key, Query, BatchWriteItem item and
 * action of a transaction on a partition its grant for that action names. DynamoDB Local checks no
 * IAM: this is where a recount reaching a new kind of item would fail before AWS refused it.
 */

const { during } = recordSentRequests('recount-worker-iam:record');

const allowed = (action: TableAction, pk: string) =>
  RECOUNT_WORKER_GRANTS.some((g) => g.action === action && g.leadingKeys.some((p) => iamLike(p, pk)));

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
  ({ getRemainingTimeInMillis: () => remainingMs, awsRequestId: 'req-1', functionName: 'recountWorker' }) as unknown as Context;

/** The job items of the merchant, read apart from the recording. */
const jobs = async (merchantId: string) => {
  const { Items } = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.recountJob(merchantId, '').pk },
      ConsistentRead: true,
    }),
  );
  return Items ?? [];
};

const runRecord = async (rec: ReturnType<typeof streamRecord>, remainingMs = 60_000) => {
  const { result, requests } = await during(() => handleRecountJobs({ Records: [rec] }, context(remainingMs)));
  return { result, requests: requests.flatMap(authorised), record: rec };
};

/** Runs the worker on every job of the merchant's, as the stream hands them over, until none is left: every request it sent. */
const runAll = async (remainingMs = 60_000) => {
  const all: { action: string; pk: string }[] = [];
  for (let round = 0; round < 20; round++) {
    const pending = await jobs(merchantId);
    if (!pending.length) return all;
    for (const job of pending) {
      const ran = await runRecord(streamRecord('INSERT', job), remainingMs);
      expect(ran.result).toEqual({ batchItemFailures: [] });
      all.push(...ran.requests);
    }
  }
  throw new Error('the jobs never ended');
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
const auth = () => ({ merchantId, abilities: [], reportingCurrency: 'TWD', timezone: 'UTC', generation: 0 });
beforeAll(async () => {
  const merchant = await createMerchant('recount worker iam', 'TWD');
  merchantId = merchant.merchant_id;
  // Its token: the switch writes the figures' state on it.
  await createToken(merchantId);
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

describe("the recount worker's requests stay inside its IAM grants", () => {
  it('a rate change: every customer counted (one chunked, its moves spilled and applied), the switch, the older generation retired', async () => {
    await putExchangeRates(auth(), 'USD', [
      { month: '2020-01', rate: '30' },
      { month: '2021-06', rate: '31' },
    ]);
    const requests = await runAll();
    expectInsideGrants(requests);
    const actions = new Set(requests.map((r) => r.action));
    for (const action of [
      'GetItem',
      'BatchGetItem',
      'Query',
      'PutItem',
      'UpdateItem',
      'DeleteItem',
      'ConditionCheckItem',
      'BatchWriteItem',
    ])
      expect(actions, action).toContain(action);
    // The switch wrote the token's copy of the figures' state, and the older generation's items went.
    expect(requests.some((r) => r.action === 'UpdateItem' && r.pk.startsWith('TOKEN#'))).toBe(true);
    expect((await getMerchant(merchantId))?.recount?.status).toBe('done');
    expect(requests.some((r) => r.action === 'BatchWriteItem' && r.pk.startsWith(`${keys.merchant(merchantId).pk}#MRR#`))).toBe(true);
  }, 120_000);

  it('a job without time left is put again as a new item; a record delivered twice finds its job gone', async () => {
    await changeMerchant(merchantId, { timezone: 'Asia/Taipei' });
    const [job] = await jobs(merchantId);
    const deferred = await runRecord(streamRecord('INSERT', job!), DEADLINE_MARGIN_MS + 1_000);
    expect(deferred.result).toEqual({ batchItemFailures: [] });
    expectInsideGrants(deferred.requests);
    const [next] = await jobs(merchantId);
    expect(next).toMatchObject({ entity: RECOUNT_JOB_ENTITY, from_id: 1, round: 2 });
    const again = await runRecord(deferred.record);
    expect(again.result).toEqual({ batchItemFailures: [] });
    expect(again.requests).toEqual([{ action: 'GetItem', pk: keys.recountJob(merchantId, '').pk }]);
    expectInsideGrants(await runAll());
    expect((await readTimeline(merchantId, 2)).recounted).toBe((await getMerchant(merchantId))?.metrics_generation);
  }, 120_000);

  it('a recount superseded by a newer change: the older job ends, the newer one retires what the older counted', async () => {
    await changeMerchant(merchantId, { timezone: 'Europe/Paris' });
    const [first] = await jobs(merchantId);
    // The first job counts customer 1 only (then runs out of time), and a newer change comes.
    await runRecord(streamRecord('INSERT', first!), DEADLINE_MARGIN_MS + 3_500);
    await changeMerchant(merchantId, { timezone: 'America/New_York' });
    const requests = await runAll();
    expectInsideGrants(requests);
    expect((await getMerchant(merchantId))?.figures_timezone).toBe('America/New_York');
  }, 120_000);
});
