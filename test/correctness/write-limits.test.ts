import { BatchGetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { runBatch } from '#lib/db/batch';
import { db, tableName } from '#lib/db/client';
import { MAX_TRANSACTION_BYTES } from '#lib/db/writes';
import { ITEM_CEILING_BYTES, itemSize, takeWriteLimitBreaches, WriteLimitError } from '../support/write-limits.ts';

/**
 * The write-limit check every test runs under (test/support/write-limits.ts): a write past AWS's
 * limits never reaches DynamoDB Local and fails the test that made it. Here the breaches are
 * taken before `afterEach` sees them.
 */
const key = (sk: string) => ({ pk: `WRITE-LIMITS#${process.pid}`, sk });
const refused = async (write: Promise<unknown>) => {
  await expect(write).rejects.toBeInstanceOf(WriteLimitError);
  return takeWriteLimitBreaches();
};

describe('writes past AWS limits fail the test that makes them', () => {
  it('an item over 64 KB (put, in a transaction, or an update carrying that much) is refused and not stored', async () => {
    const big = 'x'.repeat(ITEM_CEILING_BYTES);
    expect((await refused(db().send(new PutCommand({ TableName: tableName(), Item: { ...key('big'), blob: big } })))).join()).toContain(
      'PutItem: an item of',
    );
    expect(
      (await db().send(new PutCommand({ TableName: tableName(), Item: { ...key('small'), blob: 'x'.repeat(60 * 1024) } }))).$metadata
        .httpStatusCode,
    ).toBe(200);
    expect(takeWriteLimitBreaches()).toEqual([]);
    expect(
      (
        await refused(
          db().send(
            new TransactWriteCommand({ TransactItems: [{ Put: { TableName: tableName(), Item: { ...key('big-tx'), blob: big } } }] }),
          ),
        )
      ).join(),
    ).toContain('TransactWriteItems Put');
    expect(
      (
        await refused(
          db().send(
            new UpdateCommand({
              TableName: tableName(),
              Key: key('small'),
              UpdateExpression: 'SET blob = :b',
              ExpressionAttributeValues: { ':b': big },
            }),
          ),
        )
      ).join(),
    ).toContain('an update carrying');
    const stored = await db().send(new PutCommand({ TableName: tableName(), Item: { ...key('probe') } }));
    expect(stored.$metadata.httpStatusCode).toBe(200);
  });

  it('a transaction over 100 actions is refused', async () => {
    const puts = Array.from({ length: 101 }, (_, i) => ({ Put: { TableName: tableName(), Item: key(`tx-${i}`) } }));
    expect(await refused(db().send(new TransactWriteCommand({ TransactItems: puts })))).toEqual([
      'TransactWriteItems: 101 actions (at most 100)',
    ]);
  });

  it('sizes follow DynamoDB: names and values, numbers by digits, maps and lists with overhead', () => {
    expect(itemSize({ pk: { S: 'abc' } })).toBe(5);
    expect(itemSize({ n: { N: '12345' } })).toBe(1 + 4);
    expect(itemSize({ m: { M: { a: { S: 'xy' } } } })).toBe(1 + 3 + 3 + 1);
    expect(itemSize({ l: { L: [{ BOOL: true }, { NULL: true }] } })).toBe(1 + 3 + 2 + 2);
  });
});

describe('the batch engine packs within both limits', () => {
  it('units of large items go out in transactions under 4 MB, each unit once', async () => {
    // 100 units of one 60 KB item: 100 actions would fit, 6 MB would not.
    const units = Array.from({ length: 100 }, (_, i) => i);
    const chunks: number[][] = [];
    await runBatch(
      units,
      {
        write: async (ws, chunk) => {
          for (const i of chunk) ws.put('big', { ...key(`packed-${i}`), blob: 'x'.repeat(60 * 1024) });
          expect(ws.bytes).toBeGreaterThan(chunk.length * 60 * 1024);
          return () => chunks.push(chunk);
        },
        alone: async () => {
          throw new Error('no unit is redone alone');
        },
        failed: (_, err) => {
          throw err;
        },
      },
      { merchantId: `write-limits-${process.pid}` },
    );
    expect(takeWriteLimitBreaches()).toEqual([]);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.flat().sort((a, b) => a - b)).toEqual(units);
    for (const chunk of chunks) expect(chunk.length * 60 * 1024).toBeLessThan(MAX_TRANSACTION_BYTES);
    const stored = await db().send(
      new BatchGetCommand({ RequestItems: { [tableName()]: { Keys: [key('packed-0'), key('packed-99')], ProjectionExpression: 'sk' } } }),
    );
    expect(stored.Responses?.[tableName()]).toHaveLength(2);
  }, 60_000);
});
