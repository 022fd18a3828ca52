import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { throttleBucket } from '#lib/db/retry';
import { activityRecords, uniqueNo } from '../orders/helpers.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { sdkTimeout } from '../support/faults.ts';

/**
 * A batch chunk whose every send loses its answer until the deadline is settled through its
 * receipt: the answer of each unit is what the table holds, and a fenced transaction never lands.
 */
const api = useApi();
let remove: (() => void) | undefined;
afterEach(() => remove?.());

const RECEIPT = '#BATCH_RECEIPT#';
const receiptOf = (input: any): { pk: string; sk: string } | undefined => {
  const item = input.TransactItems?.map((a: any) => a.Put?.Item).find((i: any) => String(i?.pk ?? '').includes(RECEIPT));
  return item && { pk: item.pk, sk: item.sk };
};

/**
 * Every send of a batch chunk's transaction (one carrying a receipt) answers TimeoutError: with
 * `land`, the first send reaches DynamoDB Local before its answer is lost; the others never reach it.
 */
const loseEverySend = (land: boolean) => {
  const stats = { sends: 0, input: undefined as any };
  const name = `batch-settle:${Math.random()}`;
  db().middlewareStack.add(
    ((next: any, context: any) => async (args: any) => {
      if (context.commandName !== 'TransactWriteItemsCommand' || !receiptOf(args.input)) return next(args);
      stats.sends++;
      stats.input ??= args.input; // as sent (NumberValue deltas and all)
      if (land && stats.sends === 1) await next(args);
      throw sdkTimeout();
    }) as never,
    { step: 'initialize', priority: 'low', name },
  );
  remove = () => db().middlewareStack.remove(name);
  return stats;
};

const rows = () => [0, 1, 2].map((i) => ({ order_no: uniqueNo(), amount: `${i + 1}.00`, customer_email: `settle${i}@example.com` }));
const receiptItem = async (key: { pk: string; sk: string }) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;

describe('a batch chunk never confirmed is settled through its receipt', () => {
  it('landed: its receipt is found committed, and its units answer created (and are logged once)', async () => {
    throttleBucket.refill();
    const { merchantId, token } = await newMerchant();
    const orders = rows();
    const lost = loseEverySend(true);
    const r = await api.post('/orders/batch', token, { orders });
    remove!();
    expect(lost.sends).toBeGreaterThan(1); // sent again while unanswered, then settled
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ total: 3, created: 3, failed: 0 });
    expect(r.body.data.results.created.map((c: any) => c.identifier)).toEqual(orders.map((o) => o.order_no));
    for (const o of orders) expect((await api.get(`/orders/${o.order_no}`, token)).status).toBe(200);
    const receipt = receiptOf(lost.input)!;
    expect(receipt.pk).toContain(`M#${merchantId}#BATCH_RECEIPT#`);
    expect(await receiptItem(receipt)).toMatchObject({ state: 'committed' });
    // The activity entry rode in the chunk: one entry, counting what the answer says.
    const entries = await activityRecords(merchantId);
    expect(entries.map((e) => ({ created: e.created, failed: e.failed }))).toEqual([{ created: 3, failed: 0 }]);
  });

  it('not landed: the fence is stored first, its units answer throttled, nothing is stored, and a late resend cannot land', async () => {
    throttleBucket.refill();
    const { merchantId, token } = await newMerchant();
    const orders = rows();
    const lost = loseEverySend(false);
    const r = await api.post('/orders/batch', token, { orders });
    remove!();
    expect(lost.sends).toBeGreaterThan(1);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ total: 3, created: 0, failed: 3 });
    expect(r.body.data.results.failed.map((f: any) => f.reason)).toEqual(['throttled', 'throttled', 'throttled']);
    const receipt = receiptOf(lost.input)!;
    expect(await receiptItem(receipt)).toMatchObject({ state: 'fenced' });

    // The same transaction, same token, sent late (as a request delayed on the network would be): refused on its receipt.
    const late = await db()
      .send(new TransactWriteCommand(lost.input))
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(late).toBeInstanceOf(TransactionCanceledException);
    for (const o of orders) expect((await api.get(`/orders/${o.order_no}`, token)).status).toBe(404);
    expect((await api.get('/orders', token)).body.meta.total).toBe(0);
    expect(await receiptItem(keys.batchReceipt(merchantId, receipt.pk.split(RECEIPT)[1]))).toMatchObject({ state: 'fenced' });
    // The closing record went on its own and counts the refusal.
    const entries = await activityRecords(merchantId);
    expect(entries.map((e) => ({ created: e.created, failed: e.failed }))).toEqual([{ created: 0, failed: 3 }]);
  });

  it('a unit redone alone whose answer is lost is settled the same way: landed, it answers created and is stored once', async () => {
    throttleBucket.refill();
    const { merchantId, token } = await newMerchant();
    const orders = rows();
    // The chunk (several orders) is refused outright, so its units are redone one by one; the first
    // unit's transaction reaches DynamoDB Local and its answer is lost.
    const stats = { chunks: 0, units: 0 };
    const name = `batch-settle-alone:${Math.random()}`;
    db().middlewareStack.add(
      ((next: any, context: any) => async (args: any) => {
        if (context.commandName !== 'TransactWriteItemsCommand' || !receiptOf(args.input)) return next(args);
        const orderPuts = args.input.TransactItems.filter((a: any) => a.Put?.Item?.sk === 'ORDER').length;
        if (orderPuts > 1) {
          stats.chunks++;
          throw Object.assign(new Error('refused for the test'), { name: 'ValidationException' });
        }
        stats.units++;
        if (stats.units === 1) {
          await next(args);
          throw sdkTimeout();
        }
        return next(args);
      }) as never,
      { step: 'initialize', priority: 'low', name },
    );
    remove = () => db().middlewareStack.remove(name);
    const r = await api.post('/orders/batch', token, { orders });
    remove();
    expect(stats.chunks).toBeGreaterThan(0);
    expect(stats.units).toBeGreaterThan(3); // the lost one was sent again (or settled), the others once
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ total: 3, created: 3, failed: 0 });
    for (const o of orders) expect((await api.get(`/orders/${o.order_no}`, token)).body.data.amount).toBe(o.amount);
    expect((await api.get('/orders', token)).body.meta.total).toBe(3);
    const entries = await activityRecords(merchantId);
    expect(entries.map((e) => ({ created: e.created, failed: e.failed }))).toEqual([{ created: 3, failed: 0 }]);
  });
});
