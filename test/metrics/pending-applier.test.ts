import { randomBytes } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Context, DynamoDBRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import type { Key } from '#lib/db/keys';
import { PENDING_MOVES_ENTITY, type PendingMoves } from '#lib/db/writes';
import { pendingHome } from '#lib/metrics/store';
import { handlePendingMoves, isPendingMovesInsert } from '#lib/metrics/pending-applier';
import { awsErrors, failOnce, type Installed } from '../support/faults.ts';
import { streamRecord } from '../outbox/support/records.ts';

/**
 * The pending-moves applier against DynamoDB Local: stream records of pending-moves items (as the
 * mapping delivers them) → each item's ADDs applied once and the item deleted; what still fails is
 * reported, the rest applied all the same.
 */
/** Faults a test installed (each removes itself once fired): removed after the test whatever happened. */
const faults: Installed<unknown>[] = [];
afterEach(() => {
  for (const f of faults.splice(0)) f.uninstall();
});

const context = (remainingMs = 10_000) =>
  ({ getRemainingTimeInMillis: () => remainingMs, awsRequestId: 'req-1', functionName: 'pendingMovesApplier' }) as unknown as Context;

/** A merchant id of the real shape (`mer_` and 20 hex digits), new for each test. */
const merchant = () => `mer_${randomBytes(10).toString('hex')}`;
let n = 0;
/** A pending-moves item under the merchant's month home, put as a batch's transaction puts it; its INSERT record. */
const putPending = async (merchantId: string, moves: PendingMoves) => {
  const home = pendingHome(merchantId, 'M#2024-03', 0);
  const item = { pk: home.pk, sk: `${home.sk}#P#test-${++n}#000`, entity: PENDING_MOVES_ENTITY, moves: JSON.stringify(moves) };
  await db().send(new PutCommand({ TableName: tableName(), Item: item }));
  return { key: { pk: item.pk, sk: item.sk }, record: streamRecord('INSERT', item) };
};
const read = async (key: Key) => (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;
const target = (merchantId: string, sk: string): Key => ({ pk: pendingHome(merchantId, 'M#2024-03', 0).pk, sk });
const seq = (r: DynamoDBRecord) => r.dynamodb!.SequenceNumber!;

describe('the pending-moves applier', () => {
  it("applies each item's ADDs once and deletes it; an item already gone is a success", async () => {
    const m = merchant();
    const a = await putPending(m, [
      ['D#2024-03-05#00', { n: '7', ac: '1' }],
      ['M#2024-03#00', { n: '7', ac: '1' }],
    ]);
    const b = await putPending(m, [['M#2024-03#01', { n: '5' }]]);
    // Applied (and deleted) by someone else before its record arrives: its moves are not made again.
    await db().send(new DeleteCommand({ TableName: tableName(), Key: b.key }));

    expect(await handlePendingMoves({ Records: [a.record, b.record] }, context())).toEqual({ batchItemFailures: [] });
    expect(await read(target(m, 'D#2024-03-05#00'))).toMatchObject({ n: 7, ac: 1 });
    expect(await read(target(m, 'M#2024-03#00'))).toMatchObject({ n: 7, ac: 1 });
    expect(await read(target(m, 'M#2024-03#01'))).toBeUndefined();
    expect(await read(a.key)).toBeUndefined();
  });

  it('a record delivered twice, one after the other or at once, is counted once', async () => {
    const m = merchant();
    const a = await putPending(m, [['M#2024-03#00', { n: '3' }]]);
    expect(await handlePendingMoves({ Records: [a.record] }, context())).toEqual({ batchItemFailures: [] });
    expect(await handlePendingMoves({ Records: [a.record, a.record] }, context())).toEqual({ batchItemFailures: [] });
    expect(await read(target(m, 'M#2024-03#00'))).toMatchObject({ n: 3 });

    const b = await putPending(m, [['M#2024-03#00', { n: '4' }]]);
    const both = await Promise.all([
      handlePendingMoves({ Records: [b.record] }, context()),
      handlePendingMoves({ Records: [b.record] }, context()),
    ]);
    expect(both).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    expect(await read(target(m, 'M#2024-03#00'))).toMatchObject({ n: 7 });
  });

  it('ignores every record but a pending-moves INSERT: other items, updates and removals', async () => {
    const m = merchant();
    const a = await putPending(m, [['M#2024-03#00', { n: '2' }]]);
    const item = (await read(a.key))!;
    const others = [
      streamRecord('MODIFY', item),
      streamRecord('REMOVE', item),
      streamRecord('INSERT', { ...item, entity: 'order' }),
      streamRecord('INSERT', { pk: 'RATE#M#x#1', sk: 'RATE', count: 1 }),
    ];
    expect(others.map(isPendingMovesInsert)).toEqual([false, false, false, false]);
    expect(isPendingMovesInsert(a.record)).toBe(true);
    expect(await handlePendingMoves({ Records: others }, context())).toEqual({ batchItemFailures: [] });
    expect(await read(a.key)).toBeDefined();
    expect(await read(target(m, 'M#2024-03#00'))).toBeUndefined();
  });

  it('reports the record whose apply fails and applies the others; delivered again, it is applied', async () => {
    const m = merchant();
    const records = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => putPending(m, [[`M#2024-03#0${i}`, { n: String(i) }]])));
    const bad = records[2];
    const fault = failOnce('GetItem', () => Object.assign(new Error('injected: not authorized'), { name: 'AccessDeniedException' }), {
      when: (input) => input.Key?.sk === bad.key.sk,
    });
    faults.push(fault);
    const result = await handlePendingMoves({ Records: records.map((r) => r.record) }, context());
    expect(fault.stats.fired).toBe(true);
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: seq(bad.record) }] });
    for (const [i, r] of records.entries()) {
      if (r === bad) continue;
      expect(await read(target(m, `M#2024-03#0${i + 1}`))).toMatchObject({ n: i + 1 });
      expect(await read(r.key)).toBeUndefined();
    }
    expect(await read(target(m, 'M#2024-03#03'))).toBeUndefined();
    expect(await read(bad.key)).toBeDefined();

    // Lambda delivers again from the reported record: the ones after it were applied and cost a read.
    const again = await handlePendingMoves({ Records: records.slice(2).map((r) => r.record) }, context());
    expect(again).toEqual({ batchItemFailures: [] });
    expect(await read(target(m, 'M#2024-03#03'))).toMatchObject({ n: 3 });
    expect(await read(target(m, 'M#2024-03#04'))).toMatchObject({ n: 4 });
  });

  it('retries a throttled read or transaction by the one retry policy', async () => {
    const m = merchant();
    const a = await putPending(m, [['M#2024-03#00', { n: '9' }]]);
    const throttled = failOnce('TransactWriteItems', () =>
      awsErrors.transactionCanceled([awsErrors.throttlingReason(), awsErrors.noneReason()]),
    );
    const throttledRead = failOnce('GetItem', () => awsErrors.provisionedThroughputExceeded());
    faults.push(throttled, throttledRead);
    expect(await handlePendingMoves({ Records: [a.record] }, context())).toEqual({ batchItemFailures: [] });
    expect([throttled.stats.fired, throttledRead.stats.fired]).toEqual([true, true]);
    expect(await read(target(m, 'M#2024-03#00'))).toMatchObject({ n: 9 });
    expect(await read(a.key)).toBeUndefined();
  });

  it('tries nothing past its deadline: with under the margin left, every record is reported and stays pending', async () => {
    const m = merchant();
    const records = [await putPending(m, [['M#2024-03#00', { n: '1' }]]), await putPending(m, [['M#2024-03#01', { n: '1' }]])];
    const result = await handlePendingMoves({ Records: records.map((r) => r.record) }, context(1_000));
    expect(result.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(records.map((r) => seq(r.record)).sort());
    for (const r of records) expect(await read(r.key)).toBeDefined();
  });
});
