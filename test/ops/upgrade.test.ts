import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { batchGet } from '#lib/db/batch-get';
import { db, tableName } from '#lib/db/client';
import { totalsKeys } from '#lib/db/counters';
import { customerSearchPartition, indexes, keys, legacyCounterPartitions, legacyCustomerSearchPartition } from '#lib/db/keys';
import { COUNTER_SHARDS } from '#lib/db/writes-constants';
import { newMerchant, useApi } from '../support/api.ts';
import { ok } from '../support/cli.ts';

/**
 * `ops upgrade` folds counters written in the layout before grouping (one partition, 256 shards)
 * into the grouped one: the lists' totals and the stats read the same before and after, and a
 * second run changes nothing.
 */
const api = useApi();

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** Moves every grouped counter item of the merchant to where the earlier layout kept it (shard + 200). */
const writeAsBeforeGrouping = async (merchantId: string, day: string): Promise<number> => {
  const grouped = [
    ...totalsKeys(merchantId, 'ORDERS'),
    ...totalsKeys(merchantId, 'CUSTOMERS'),
    ...range(COUNTER_SHARDS).flatMap((s) => [keys.statsDay(merchantId, day, s), keys.statsMonth(merchantId, day.slice(0, 7), s)]),
  ];
  const found = [...(await batchGet<Record<string, unknown>>(grouped)).values()];
  for (const item of found) {
    const sk = String(item.sk);
    const shard = Number(sk.slice(sk.lastIndexOf('#') + 1)) + 200;
    const legacySk = `${sk.slice(0, sk.lastIndexOf('#'))}#${String(shard).padStart(3, '0')}`;
    const legacyPk = String(item.pk).includes('#TOTALS#')
      ? legacyCounterPartitions.totals(merchantId)
      : legacyCounterPartitions.stats(merchantId, day.slice(0, 7));
    await db().send(new PutCommand({ TableName: tableName(), Item: { ...item, pk: legacyPk, sk: legacySk } }));
    await db().send(new DeleteCommand({ TableName: tableName(), Key: { pk: item.pk, sk: item.sk } }));
  }
  return found.length;
};

describe('ops upgrade: counters from before grouping', { timeout: 90_000 }, () => {
  it('folds them into the grouped shards once: totals and stats read as before, a second run folds nothing', async () => {
    const { merchantId, token } = await newMerchant();
    for (let i = 0; i < 6; i++) {
      const r = await api.post('/orders', token, {
        order_no: `U${i}`,
        amount: '10.50',
        status: i < 4 ? 'paid' : 'pending',
        customer_email: `u${i % 3}@upgrade.test`,
      });
      expect(r.status).toBe(201);
    }
    const read = async () => ({
      orders: (await api.get('/orders?per_page=1', token)).body.meta.total,
      paid: (await api.get('/orders?status=paid&per_page=1', token)).body.meta.total,
      customers: (await api.get('/customers?per_page=1', token)).body.meta.total,
      stats: (await api.get('/orders/stats', token)).body.data,
    });
    const before = await read();
    expect(before).toMatchObject({ orders: 6, paid: 4, customers: 3, stats: { today_revenue: '42.00', today_count: 6 } });

    const day = new Date().toISOString().slice(0, 10);
    expect(await writeAsBeforeGrouping(merchantId, day)).toBeGreaterThan(3);
    // The grouped reads do not see the old layout (the upgrade is needed).
    expect((await read()).orders).toBe(0);

    const first = await ok('upgrade', '--merchant', merchantId);
    expect(first['grouped counters'].folded).toBeGreaterThan(3);
    expect(await read()).toEqual(before);
    const second = await ok('upgrade', '--merchant', merchantId);
    expect(second['grouped counters']).toEqual({ folded: 0 });
    expect(await read()).toEqual(before);
  });

  it('answers 404 for a merchant that does not exist', async () => {
    const { ops } = await import('../support/cli.ts');
    const r = await ops('upgrade', '--merchant', 'mer_0000000000000000');
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr)).toMatchObject({ status: 404 });
  });
});

const getItem = async (key: { pk: string; sk: string }) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;

/** An order and a customer as the version before list entries wrote them: list keys on the item, no entries. */
const orderAsBeforeEntries = async (merchantId: string, orderNo: string) => {
  const order = (await getItem(keys.order(merchantId, orderNo)))!;
  const legacy = {
    ...indexes.ordersByCreated(merchantId, order.created_at, order.id),
    ...indexes.ordersByStatus(merchantId, order.status, order.created_at, order.id),
  };
  await db().send(new PutCommand({ TableName: tableName(), Item: { ...order, ...legacy } }));
  for (const list of ['all', 'status'] as const)
    await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.orderListEntry(merchantId, orderNo, list) }));
};
const customerAsBeforeEntries = async (merchantId: string, id: number) => {
  const customer = (await getItem(keys.customer(merchantId, id)))!;
  await db().send(
    new PutCommand({ TableName: tableName(), Item: { ...customer, ...indexes.customersByCreated(merchantId, customer.created_at, id) } }),
  );
  // The email marker as it was: its customer's id only.
  await db().send(new PutCommand({ TableName: tableName(), Item: { ...keys.customerEmail(merchantId, customer.email), customer_id: id } }));
};

describe('ops upgrade: orders and customers from before list entries', { timeout: 90_000 }, () => {
  it('lists them as before; writes to them keep them listed; the upgrade gives them entries and takes the keys off the items, once', async () => {
    const { merchantId, token } = await newMerchant();
    const orderNos: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await api.post('/orders', token, {
        order_no: `E${i}`,
        amount: '12.00',
        status: i < 2 ? 'paid' : 'pending',
        customer_email: `e${i % 3}@entries.test`,
      });
      expect(r.status).toBe(201);
      orderNos.push(r.body.data.order_no);
    }
    const customerIds = (await api.get('/customers', token)).body.data.map((c: { id: number }) => c.id);
    expect(customerIds).toHaveLength(3);
    const read = async () => ({
      orders: (await api.get('/orders', token)).body,
      paid: (await api.get('/orders?status=paid', token)).body,
      pending: (await api.get('/orders?status=pending&per_page=2', token)).body.data.map((o: { order_no: string }) => o.order_no),
      customers: (await api.get('/customers', token)).body,
    });
    const before = await read();

    for (const no of orderNos) await orderAsBeforeEntries(merchantId, no);
    for (const id of customerIds) await customerAsBeforeEntries(merchantId, id);
    // Rows of items carrying their own list keys are listed as the items.
    expect(await read()).toEqual(before);

    // A status change of such an order and an order of such a customer keep both listed.
    expect((await api.patch('/orders/E2', token, { status: 'paid' })).status).toBe(200);
    expect(
      (await api.post('/orders', token, { order_no: 'E5', amount: '3.00', status: 'paid', customer_email: 'e0@entries.test' })).status,
    ).toBe(201);
    const changed = await read();
    expect(changed.orders.meta.total).toBe(6);
    expect(changed.paid.data.map((o: { order_no: string }) => o.order_no)).toEqual(['E5', 'E2', 'E1', 'E0']);
    expect(changed.pending).toEqual(['E4', 'E3']);
    expect(changed.customers.data.map((c: { id: number }) => c.id)).toEqual(customerIds);
    expect(await getItem(keys.order(merchantId, 'E2'))).not.toHaveProperty('gsi1pk');
    // So does an email change of such a customer (its list entry moves to the new marker).
    expect((await api.put(`/customers/${customerIds[1]}`, token, { email: 'moved@entries.test' })).status).toBe(200);
    expect((await api.get('/customers', token)).body.data.map((c: { id: number }) => c.id)).toEqual(customerIds);
    expect(await getItem(keys.customer(merchantId, customerIds[1]))).not.toHaveProperty('gsi1pk');
    const moved = await read();

    const first = await ok('upgrade', '--merchant', merchantId);
    expect(first['list entries']).toEqual({ orders: 4, customers: 2 });
    expect(await read()).toEqual(moved);
    for (const no of orderNos) {
      const order = (await getItem(keys.order(merchantId, no)))!;
      for (const attr of ['gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk']) expect(order, no).not.toHaveProperty(attr);
      expect(order.gsi3pk, no).toBeDefined();
      expect(await getItem(keys.orderListEntry(merchantId, no, 'all')), no).toMatchObject({
        gsi1sk: expect.stringContaining(order.created_at),
      });
      expect(await getItem(keys.orderListEntry(merchantId, no, 'status')), no).toMatchObject({
        gsi2pk: expect.stringContaining(`#STATUS#${order.status}`),
      });
    }
    for (const id of customerIds) {
      const customer = (await getItem(keys.customer(merchantId, id)))!;
      expect(customer).not.toHaveProperty('gsi1pk');
      expect(customer.gsi4pk).toBeDefined();
      expect(await getItem(keys.customerEmail(merchantId, customer.email))).toMatchObject({
        customer_id: id,
        gsi1sk: expect.stringContaining(customer.created_at),
      });
    }

    const second = await ok('upgrade', '--merchant', merchantId);
    expect(second['list entries']).toEqual({ orders: 0, customers: 0 });
    expect(await read()).toEqual(moved);

    // A deleted customer leaves the list (its entry, the email marker, goes with it).
    const gone = (await getItem(keys.customer(merchantId, customerIds[0])))!;
    expect((await api.del(`/customers/${customerIds[0]}`, token)).status).toBe(204);
    expect((await api.get('/customers', token)).body.data.map((c: { id: number }) => c.id)).toEqual(customerIds.slice(1));
    expect(await getItem(keys.customerEmail(merchantId, gone.email))).toBeUndefined();
  });
});

describe('ops upgrade: customer search entries from before the search index had shards', { timeout: 90_000 }, () => {
  it("moves each live customer's entry from the one partition to its shard, sort key kept; a second run moves nothing", async () => {
    const { merchantId, token } = await newMerchant();
    const created = await api.post('/customers/batch', token, {
      customers: Array.from({ length: 6 }, (_, i) => ({ email: `s${i}@search-shards.test`, name: `Shard ${i}` })),
    });
    expect(created.status).toBe(200);
    const ids: number[] = created.body.data.results.created.map((c: { id: number }) => c.id);
    const search = async () => (await api.get('/customers?search=search-shards', token)).body;
    const before = await search();
    expect(before.data).toHaveLength(6);

    // Their search keys as the version before the shards wrote them: one partition for the merchant.
    const legacy = legacyCustomerSearchPartition(merchantId);
    const sortKeys = new Map<number, string>();
    for (const id of ids) {
      const { Attributes } = await db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.customer(merchantId, id),
          UpdateExpression: 'SET gsi4pk = :pk',
          ExpressionAttributeValues: { ':pk': legacy },
          ReturnValues: 'ALL_NEW',
        }),
      );
      sortKeys.set(id, Attributes!.gsi4sk);
    }
    // The sharded reads do not see the old partition (the upgrade is needed).
    expect((await search()).meta.total).toBe(0);
    // A deleted customer still under the old partition is left there (the step moves live customers only).
    const [deleted, ...live] = ids;
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.customer(merchantId, deleted),
        UpdateExpression: 'SET deleted_at = :at',
        ExpressionAttributeValues: { ':at': new Date().toISOString() },
      }),
    );

    const first = await ok('upgrade', '--merchant', merchantId);
    expect(first['customer search shards']).toEqual({ moved: live.length });
    expect((await search()).data).toEqual(before.data.filter((c: { id: number }) => c.id !== deleted));
    for (const id of live)
      expect(await getItem(keys.customer(merchantId, id)), String(id)).toMatchObject({
        gsi4pk: customerSearchPartition(merchantId, id),
        gsi4sk: sortKeys.get(id),
      });
    expect(await getItem(keys.customer(merchantId, deleted))).toMatchObject({ gsi4pk: legacy });

    const second = await ok('upgrade', '--merchant', merchantId);
    expect(second['customer search shards']).toEqual({ moved: 0 });
    expect((await search()).data).toEqual(before.data.filter((c: { id: number }) => c.id !== deleted));
  });
});
