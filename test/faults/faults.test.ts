import { eventually } from '../support/eventually.ts';
import {
  DeleteItemCommand,
  ProvisionedThroughputExceededException,
  PutItemCommand,
  QueryCommand as NativeQueryCommand,
  ThrottlingException,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { db, requestCounter, tableName } from '#lib/db/client';
import { awsErrors, failOnce, staleIndexReads, throttle, transactionConflictModel } from '../support/faults.ts';

/** Every key here lives under a prefix no other test file uses. */
const run = `M#faults-${Math.random().toString(36).slice(2, 10)}`;
let n = 0;
const key = (label = 'X') => ({ pk: `${run}#${label}-${++n}`, sk: 'X' });

const uninstalls: Array<() => void> = [];
const track = <T extends { uninstall(): void }>(installed: T): T => {
  uninstalls.push(() => installed.uninstall());
  return installed;
};
afterEach(() => {
  while (uninstalls.length) uninstalls.pop()!();
  expect(faultNames()).toEqual([]);
});

const faultNames = () =>
  db()
    .middlewareStack.identify()
    .filter((s) => s.startsWith('faults:'));
const send = (command: unknown): Promise<any> => db().send(command as any);
const get = async ({ pk, sk }: { pk: string; sk: string }) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: { pk, sk }, ConsistentRead: true }))).Item;
const put = (item: Record<string, unknown>) => db().send(new PutCommand({ TableName: tableName(), Item: item }));
const txPut = (...items: Record<string, unknown>[]) =>
  new TransactWriteCommand({ TransactItems: items.map((Item) => ({ Put: { TableName: tableName(), Item } })) });
const waitFor = (cond: () => boolean) => eventually(cond, 5_000, 'the held transaction', 5, 5);
/** Own enumerable properties an SDK error carries, minus the transport ones. */
const shape = (err: object) =>
  Object.keys(err)
    .filter((k) => !['$metadata', '$response', '$retryable'].includes(k))
    .sort();

describe('where the middlewares sit', () => {
  it('initialize sees a document command in native form and a client command marshalled; build sees both marshalled', async () => {
    const seen: Record<string, unknown[]> = { initialize: [], build: [] };
    const names = ['probe-init', 'probe-build'].map((p) => `${p}-${run}`);
    db().middlewareStack.add(
      (next) => async (args: any) => {
        seen.initialize.push(args.input.Item?.pk);
        return next(args);
      },
      { step: 'initialize', priority: 'low', name: names[0] },
    );
    db().middlewareStack.add(
      (next) => async (args: any) => {
        seen.build.push(args.input.Item?.pk);
        return next(args);
      },
      { step: 'build', name: names[1] },
    );
    try {
      const a = key();
      const b = key();
      await put(a);
      await send(new PutItemCommand({ TableName: tableName(), Item: { pk: { S: b.pk }, sk: { S: b.sk } } }));
      expect(seen.initialize).toEqual([a.pk, { S: b.pk }]);
      expect(seen.build).toEqual([{ S: a.pk }, { S: b.pk }]);
    } finally {
      names.forEach((name) => db().middlewareStack.remove(name));
    }
  });

  it('runs once per send, whatever the SDK retries, and the request counter still counts the faulted call', async () => {
    const t = track(throttle({ rate: 1, commands: ['GetItem'] }));
    requestCounter.reset();
    await expect(get(key())).rejects.toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(t.stats.injected).toBe(1);
    expect(requestCounter.byCommand.GetItemCommand).toBe(1);
  });

  it('installs and uninstalls repeatedly under unique names', () => {
    const a = transactionConflictModel();
    const b = transactionConflictModel();
    const c = throttle({ rate: 0 });
    expect(new Set(faultNames()).size).toBe(3);
    a.uninstall();
    a.uninstall();
    b.uninstall();
    c.uninstall();
    expect(faultNames()).toEqual([]);
    track(transactionConflictModel()).uninstall();
    expect(faultNames()).toEqual([]);
  });
});

describe('transactionConflictModel', () => {
  it('cancels exactly one of two concurrent transactions naming the same item, with the AWS reasons shape', async () => {
    const model = track(transactionConflictModel({ holdMs: 50 }));
    const shared = key('shared');
    const own = [key('own'), key('own')];
    const results = await Promise.allSettled([
      send(txPut({ ...own[0], by: 0 }, { ...shared, by: 0 })),
      send(txPut({ ...own[1], by: 1 }, { ...shared, by: 1 })),
    ]);
    const rejected = results.flatMap((r, i) => (r.status === 'rejected' ? [{ i, err: r.reason }] : []));
    expect(rejected).toHaveLength(1);
    const [{ i: loser, err }] = rejected;
    expect(err).toBeInstanceOf(TransactionCanceledException);
    expect(err.name).toBe('TransactionCanceledException');
    expect(err.CancellationReasons).toEqual([
      { Code: 'None' },
      { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' },
    ]);
    expect(err.message).toBe('Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]');
    expect(model.stats).toMatchObject({ transactions: 2, conflicts: 1, singleWriteConflicts: 0 });
    // The loser never reached DynamoDB Local; the winner's writes are all there.
    expect(await get(own[loser])).toBeUndefined();
    expect(await get(own[1 - loser])).toEqual({ ...own[1 - loser], by: 1 - loser });
    expect(await get(shared)).toEqual({ ...shared, by: 1 - loser });
    expect(model.held()).toEqual([]);
  });

  it('its TransactionCanceledException has the shape of one DynamoDB Local throws', async () => {
    const k = key();
    await put(k);
    const real = await send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: tableName(), Item: key() } },
          { Put: { TableName: tableName(), Item: k, ConditionExpression: 'attribute_not_exists(pk)' } },
        ],
      }),
    ).catch((e) => e);
    expect(real).toBeInstanceOf(TransactionCanceledException);
    expect(real.CancellationReasons).toEqual([
      { Code: 'None' },
      { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' },
    ]);
    const ours = awsErrors.transactionCanceled([awsErrors.noneReason(), awsErrors.conflictReason()]);
    expect(shape(ours)).toEqual(shape(real));
    expect(ours.$fault).toBe(real.$fault);
    expect((ours as unknown as { __type: string }).__type).toBe(real.__type);
    expect(ours.$metadata).toMatchObject({ httpStatusCode: real.$metadata.httpStatusCode, attempts: 1 });
  });

  it('a single-item write on a held item fails with TransactionConflictException; other writes and reads pass', async () => {
    const model = track(transactionConflictModel({ holdMs: 1000 }));
    const held = key('held');
    await put({ ...held, v: 0 });
    const free = key('free');
    const tx = send(txPut({ ...held, v: 1 }));
    await waitFor(() => model.held().length === 1);

    const attempts = [
      () => put({ ...held, v: 2 }),
      () =>
        send(
          new UpdateCommand({ TableName: tableName(), Key: held, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': 3 } }),
        ),
      () => send(new DeleteCommand({ TableName: tableName(), Key: held })),
      // client-dynamodb commands reach the middleware marshalled: the key is recognised all the same
      () => send(new PutItemCommand({ TableName: tableName(), Item: { pk: { S: held.pk }, sk: { S: held.sk }, v: { N: '4' } } })),
      () => send(new DeleteItemCommand({ TableName: tableName(), Key: { pk: { S: held.pk }, sk: { S: held.sk } } })),
    ];
    for (const attempt of attempts) {
      const err = await attempt().catch((e) => e);
      expect(err).toBeInstanceOf(TransactionConflictException);
      expect(err.name).toBe('TransactionConflictException');
    }
    expect(model.stats.singleWriteConflicts).toBe(attempts.length);
    // another item is free; reads are never blocked
    await put(free);
    expect(await get(free)).toEqual(free);
    expect(await get(held)).toBeDefined();
    expect(model.held()).toHaveLength(1);

    await tx;
    expect(model.held()).toEqual([]);
    await put({ ...held, v: 5 });
    expect(await get(held)).toEqual({ ...held, v: 5 });
  });

  it('holds across Update, Delete and ConditionCheck actions too, and releases on a failed transaction', async () => {
    const model = track(transactionConflictModel({ holdMs: 300 }));
    const [u, d, c, p] = [key('u'), key('d'), key('c'), key('p')];
    await Promise.all([u, d, c].map((k) => put(k)));
    const first = send(
      new TransactWriteCommand({
        TransactItems: [
          { Update: { TableName: tableName(), Key: u, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': 1 } } },
          { Delete: { TableName: tableName(), Key: d } },
          // fails: the whole transaction is cancelled by DynamoDB Local, after holding its items
          { ConditionCheck: { TableName: tableName(), Key: c, ConditionExpression: 'attribute_not_exists(pk)' } },
        ],
      }),
    ).catch((e) => e);
    await waitFor(() => model.held().length === 3);
    const second = await send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: tableName(), Item: p } },
          { ConditionCheck: { TableName: tableName(), Key: c, ConditionExpression: 'attribute_exists(pk)' } },
          { Delete: { TableName: tableName(), Key: d } },
        ],
      }),
    ).catch((e) => e);
    expect(second).toBeInstanceOf(TransactionCanceledException);
    expect(second.CancellationReasons).toEqual([
      { Code: 'None' },
      { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' },
      { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' },
    ]);
    const firstErr = await first;
    expect(firstErr).toBeInstanceOf(TransactionCanceledException);
    expect(firstErr.CancellationReasons.map((r: { Code: string }) => r.Code)).toEqual(['None', 'None', 'ConditionalCheckFailed']);
    expect(model.held()).toEqual([]);
    expect(model.stats).toMatchObject({ transactions: 2, conflicts: 1, singleWriteConflicts: 0 });
    await send(txPut(p, c)); // nothing held any more
    expect(await get(p)).toEqual(p);
  });

  it('sequential transactions never conflict; after uninstall concurrent ones all reach DynamoDB Local', async () => {
    const model = track(transactionConflictModel());
    const shared = key('shared');
    for (let i = 0; i < 3; i++) await send(txPut({ ...shared, i }));
    expect(model.stats).toMatchObject({ transactions: 3, conflicts: 0, singleWriteConflicts: 0 });
    model.uninstall();
    const results = await Promise.allSettled([0, 1, 2, 3].map((i) => send(txPut({ ...shared, i }))));
    // DynamoDB Local itself serialises them (it may still refuse one; it never answers TransactionConflict from us)
    expect(model.stats.transactions).toBe(3);
    expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThan(0);
  });
});

describe('staleIndexReads', () => {
  const indexQuery = (gsi1pk: string, extra: Record<string, unknown> = {}) =>
    new QueryCommand({
      TableName: tableName(),
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': gsi1pk },
      ScanIndexForward: false,
      ...extra,
    });
  const listed = async (gsi1pk: string, extra?: Record<string, unknown>) =>
    ((await db().send(indexQuery(gsi1pk, extra))).Items ?? []).map((i) => i.pk);

  it('after freeze an index Query returns the recorded page while GetItem sees the new item', async () => {
    const stale = track(staleIndexReads());
    const list = `${run}#LIST-${++n}`;
    const a = { ...key('a'), gsi1pk: list, gsi1sk: '1' };
    const b = { ...key('b'), gsi1pk: list, gsi1sk: '2' };
    await put(a);

    expect(await stale.record(() => listed(list))).toEqual([a.pk]);
    expect(stale.stats.recorded).toBe(1);
    await put(b);
    expect(await listed(list)).toEqual([b.pk, a.pk]); // not frozen yet: fresh
    stale.freeze();

    expect(await listed(list)).toEqual([a.pk]); // the index as it was
    expect(await get(b)).toEqual(b); // the table is up to date
    expect(stale.stats.served).toBe(1);
    // the same query written with another key order is the same query
    const reordered = await db().send(
      new QueryCommand({
        ExpressionAttributeValues: { ':p': list },
        ScanIndexForward: false,
        KeyConditionExpression: 'gsi1pk = :p',
        IndexName: 'gsi1',
        TableName: tableName(),
      }),
    );
    expect(reordered.Items?.map((i) => i.pk)).toEqual([a.pk]);
    expect(stale.stats.served).toBe(2);
    // a query never recorded goes to DynamoDB Local
    expect(await listed(list, { Limit: 5 })).toEqual([b.pk, a.pk]);
    expect(stale.stats.passedThrough).toBe(1);
    // a base-table Query is not an index read
    const base = await db().send(
      new QueryCommand({ TableName: tableName(), KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': b.pk } }),
    );
    expect(base.Items).toHaveLength(1);

    stale.thaw();
    expect(await listed(list)).toEqual([b.pk, a.pk]);
    stale.freeze();
    expect(await listed(list)).toEqual([a.pk]);
    stale.uninstall();
    expect(await listed(list)).toEqual([b.pk, a.pk]);
  });

  it('serves deep copies, records the first answer, and replays marshalled answers for client commands', async () => {
    const stale = track(staleIndexReads());
    const list = `${run}#LIST-${++n}`;
    const a = { ...key('a'), gsi1pk: list, gsi1sk: '1', tags: new Set(['x']) };
    await put(a);
    const native = () =>
      send(
        new NativeQueryCommand({
          TableName: tableName(),
          IndexName: 'gsi1',
          KeyConditionExpression: 'gsi1pk = :p',
          ExpressionAttributeValues: { ':p': { S: list } },
        }),
      );
    await stale.record(async () => {
      await listed(list);
      await native();
      await put({ ...key('b'), gsi1pk: list, gsi1sk: '2' });
      await listed(list); // the same input again: the first answer is kept
    });
    expect(stale.stats.recorded).toBe(2);
    stale.freeze();

    const first = await db().send(indexQuery(list));
    expect(first.Items?.map((i) => i.pk)).toEqual([a.pk]);
    expect(first.Items?.[0].tags).toEqual(new Set(['x']));
    first.Items!.push({ pk: 'mutated' });
    expect(await listed(list)).toEqual([a.pk]);

    const raw = await native();
    expect(raw.Items).toEqual([expect.objectContaining({ pk: { S: a.pk } })]);
    expect(stale.stats).toEqual({ recorded: 2, served: 3, passedThrough: 0 });
  });

  it('select narrows which calls are frozen', async () => {
    const stale = track(staleIndexReads({ select: (op, input) => op === 'Query' && input.IndexName === 'gsi2' }));
    const list = `${run}#LIST-${++n}`;
    await put({ ...key('a'), gsi1pk: list, gsi1sk: '1' });
    await stale.record(() => listed(list));
    await put({ ...key('b'), gsi1pk: list, gsi1sk: '2' });
    stale.freeze();
    expect(await listed(list)).toHaveLength(2);
    expect(stale.stats).toEqual({ recorded: 0, served: 0, passedThrough: 0 });
  });
});

describe('throttle', () => {
  it('rate 1 fails every selected call with ProvisionedThroughputExceededException before DynamoDB Local; others pass', async () => {
    const t = track(throttle({ rate: 1, commands: ['PutItem', 'GetItemCommand'] }));
    const k = key();
    const err = await put(k).catch((e) => e);
    expect(err).toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(err.name).toBe('ProvisionedThroughputExceededException');
    expect(err.$fault).toBe('client');
    await expect(get(k)).rejects.toBeInstanceOf(ProvisionedThroughputExceededException);
    await send(
      new UpdateCommand({ TableName: tableName(), Key: k, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': 1 } }),
    );
    expect(t.stats).toMatchObject({ seen: 2, injected: 2, byCommand: { PutItem: 1, GetItem: 1 } });
    t.uninstall();
    expect(await get(k)).toEqual({ ...k, v: 1 }); // the put never landed; the update did
  });

  it('throttled transactions come back as TransactionCanceledException with a ThrottlingError reason, or as the chosen error', async () => {
    const k = [key(), key(), key()];
    const canceled = throttle({ rate: 1, transactionCancelShare: 1, seed: 7 });
    const err = await send(txPut(...k)).catch((e) => e);
    canceled.uninstall();
    expect(err).toBeInstanceOf(TransactionCanceledException);
    const codes = err.CancellationReasons.map((r: { Code: string }) => r.Code);
    expect(codes.filter((c: string) => c === 'ThrottlingError')).toHaveLength(1);
    expect(codes.filter((c: string) => c === 'None')).toHaveLength(2);
    expect(err.CancellationReasons.find((r: { Code: string }) => r.Code === 'ThrottlingError').Message).toMatch(/Throughput exceeds/);
    expect(err.CancellationReasons.find((r: { Code: string }) => r.Code === 'None')).toEqual({ Code: 'None' });
    expect(canceled.stats.canceledTransactions).toBe(1);

    const plain = throttle({ rate: 1, transactionCancelShare: 0, error: 'ThrottlingException' });
    await expect(send(txPut(...k))).rejects.toBeInstanceOf(ThrottlingException);
    plain.uninstall();
    for (const item of k) expect(await get(item)).toBeUndefined();
  });

  it('rate 0 never fails', async () => {
    const t = track(throttle({ rate: 0 }));
    const k = key();
    for (let i = 0; i < 20; i++) await put({ ...k, i });
    await send(txPut({ ...k, i: 20 }));
    expect(await get(k)).toEqual({ ...k, i: 20 });
    expect(t.stats).toMatchObject({ seen: 22, injected: 0 });
  });

  it('the same seed fails the same calls', async () => {
    const pattern = async (seed: number) => {
      const t = throttle({ rate: 0.5, commands: ['GetItem'], seed });
      try {
        const out: boolean[] = [];
        for (let i = 0; i < 24; i++)
          out.push(
            await get(key()).then(
              () => true,
              () => false,
            ),
          );
        return out;
      } finally {
        t.uninstall();
      }
    };
    const one = await pattern(42);
    expect(await pattern(42)).toEqual(one);
    expect(one).toContain(true);
    expect(one).toContain(false);
    expect(await pattern(43)).not.toEqual(one);
  });

  it('refuses a rate outside 0..1', () => {
    expect(() => throttle({ rate: 1.5 })).toThrow(/rate/);
    expect(faultNames()).toEqual([]);
  });
});

describe('failOnce', () => {
  it('fails the next matching call only, then removes itself', async () => {
    const k = key();
    const f = track(
      failOnce('TransactWriteItemsCommand', () => awsErrors.provisionedThroughputExceeded(), {
        when: (input) => input.TransactItems.length === 1,
      }),
    );
    await send(txPut(key(), key())); // not matching `when`
    expect(f.stats.fired).toBe(false);
    await expect(send(txPut(k))).rejects.toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(f.stats.fired).toBe(true);
    expect(faultNames()).toEqual([]);
    await send(txPut(k));
    expect(await get(k)).toEqual(k);
  });

  it('takes any error, e.g. a conflict cancellation the application must retry', async () => {
    track(failOnce('PutItem', () => awsErrors.transactionConflict()));
    await expect(put(key())).rejects.toBeInstanceOf(TransactionConflictException);
    await put(key());
  });
});
