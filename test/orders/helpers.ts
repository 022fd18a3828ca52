import { INVALID_DATA, NOT_FOUND as NOT_FOUND_MESSAGE } from '#lib/errors';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { expect } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { activityIndexes, ENTRY_OF, indexPartitions, keys, type Key } from '#lib/db/keys';
import { batchGet, keyId } from '#lib/db/batch-get';
import { eventsOfMarks, markPagesSince, OUTBOX_SHARD_LIST, type OutboxItem } from '#lib/outbox/store';
import type { useApi } from '../support/api.ts';
import { allPages } from '../support/pages.ts';

/** Shared helpers of the orders tests: request bodies and direct reads of what is stored. */

export type Api = ReturnType<typeof useApi>;

export const INVALID = INVALID_DATA;
export const NOT_FOUND = { message: NOT_FOUND_MESSAGE };

let seq = 0;
export const uniqueNo = (prefix = 'ORD') => `${prefix}-${process.pid}-${++seq}-${Math.random().toString(36).slice(2, 7)}`;

export const orderBody = (over: Record<string, unknown> = {}) => ({
  order_no: uniqueNo(),
  amount: '1200.00',
  customer_email: 'buyer@example.com',
  ...over,
});

/** POST /orders that must succeed. */
export const createOrder = async (api: Api, token: string, over: Record<string, unknown> = {}, headers?: Record<string, string>) => {
  const r = await api.post('/orders', token, orderBody(over), headers);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data;
};

const queryAllItems = async (input: { pk?: string; index?: string; partition?: string }) => {
  const out: Record<string, any>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const res = await db().send(
      new QueryCommand({
        TableName: tableName(),
        ...(input.index
          ? {
              IndexName: input.index,
              KeyConditionExpression: `${input.index}pk = :p`,
              ExpressionAttributeValues: { ':p': input.partition },
            }
          : { KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': input.pk }, ConsistentRead: true }),
        ExclusiveStartKey: startKey,
      }),
    );
    out.push(...(res.Items ?? []));
    startKey = res.LastEvaluatedKey;
  } while (startKey);
  return out;
};

/** The merchant's outbox (webhook events recorded in the order transactions), oldest first. */
export const outboxEvents = async (merchantId: string): Promise<Record<string, any>[]> => {
  // The shards in parallel: tests read the outbox while deliveries race them.
  const shards = await Promise.all(
    OUTBOX_SHARD_LIST.map(async (shard) => {
      const events: OutboxItem[] = [];
      for await (const marks of markPagesSince(merchantId, shard, '0'))
        events.push(...(await eventsOfMarks(merchantId, marks, { unpublished: false })));
      return events;
    }),
  );
  const events = shards.flat();
  // Every shard's events, back in the order they were recorded (time, then order within a transaction).
  return events.sort((a, b) => (a.mark_sk < b.mark_sk ? -1 : 1)).map((e) => ({ ...e, data: JSON.parse(e.data) }));
};
export const outboxFor = async (merchantId: string, orderNo: string) =>
  (await outboxEvents(merchantId)).filter((e) => e.data.object.order_no === orderNo);

/** The merchant's activity-log records. */
export const activityRecords = (merchantId: string) =>
  queryAllItems({ index: 'gsi1', partition: activityIndexes.partitions.all(merchantId) });

/** The items a list index's rows name: a list entry's item read by key, an item carrying its own keys as it is. */
const listedItems = async (rows: Record<string, any>[]) => {
  const named = rows.map((r): Key | null => r[ENTRY_OF] ?? null);
  const found = await batchGet(named.filter((k): k is Key => k !== null));
  return rows.flatMap((r, i) => {
    const item = named[i] ? found.get(keyId(named[i])) : r;
    return item ? [item as Record<string, any>] : [];
  });
};

/** Orders and (live) customers as stored, read from the list indexes. */
export const storedOrders = async (merchantId: string) =>
  listedItems(await queryAllItems({ index: 'gsi1', partition: indexPartitions.orders(merchantId) }));
export const storedCustomers = async (merchantId: string) =>
  listedItems(await queryAllItems({ index: 'gsi1', partition: indexPartitions.customers(merchantId) }));

/** A customer item as stored, deleted ones included (the API hides those), by its key; undefined when absent. */
export const storedCustomer = async (merchantId: string, id: number): Promise<Record<string, any> | undefined> =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: keys.customer(merchantId, id), ConsistentRead: true }))).Item;

/**
 * The derived figures of a stored customer item, read from its attributes (`ltv_<CCY>`, `order_count`,
 * payment times) independently of the application's presentation code: the shape `pickFigures` gives.
 */
export const figuresOfStoredCustomer = (item: Record<string, any>, reportingCurrency = 'TWD') => {
  const ltvs = Object.entries(item)
    .filter(([k]) => /^ltv_[A-Z]{3}$/.test(k))
    .map(([k, v]) => [k.slice(4), new Decimal(String(v))] as const);
  return {
    ltv: (ltvs.find(([c]) => c === reportingCurrency)?.[1] ?? new Decimal(0)).toFixed(2),
    ltv_by_currency: Object.fromEntries(
      ltvs
        .filter(([, v]) => !v.isZero())
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([c, v]) => [c, v.toFixed(2)]),
    ),
    order_count: Number(item.order_count ?? 0),
    first_payment_at: item.first_payment_at ?? null,
    last_payment_at: item.last_payment_at ?? null,
  };
};

/** Orders, customers and outbox events stored for a merchant (for "nothing stored" checks). */
export const storedCounts = async (merchantId: string) => {
  const [orders, customers, outbox] = await Promise.all([storedOrders(merchantId), storedCustomers(merchantId), outboxEvents(merchantId)]);
  return { orders: orders.length, customers: customers.length, outbox: outbox.length };
};

/** Every order of the merchant through GET /orders, all pages (by cursor). */
export const listAll = async (api: Api, token: string, query = '') => {
  const { items, total } = await allPages(api, token, `/orders${query ? `?${query}` : ''}`);
  return { orders: items, total };
};

export const expect422 = (res: { status: number; body: any }, field: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(res.body.message).toBe(INVALID);
  expect(Object.keys(res.body.errors)).toEqual([field]);
  expect(res.body.errors[field].length).toBeGreaterThan(0);
  for (const m of res.body.errors[field]) expect(typeof m).toBe('string');
};

/** A customer's derived figures recomputed from its orders (docs/customers.md). */
export const figuresFromOrders = (orders: any[], reportingCurrency = 'TWD') => {
  const paid = orders.filter((o) => o.status === 'paid');
  const byCurrency = new Map<string, Decimal>();
  for (const o of paid) byCurrency.set(o.currency, (byCurrency.get(o.currency) ?? new Decimal(0)).plus(o.amount));
  const ltvByCurrency = Object.fromEntries(
    [...byCurrency]
      .filter(([, v]) => !v.isZero())
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => [k, v.toFixed(2)]),
  );
  const times = orders
    .filter((o) => (o.status === 'paid' || o.status === 'refunded') && o.paid_at)
    .map((o) => o.paid_at as string)
    .sort();
  return {
    ltv: (byCurrency.get(reportingCurrency) ?? new Decimal(0)).toFixed(2),
    ltv_by_currency: ltvByCurrency,
    order_count: paid.length,
    first_payment_at: times[0] ?? null,
    last_payment_at: times.at(-1) ?? null,
  };
};

/** The derived figures of a customer as the API returns them (toEqual: nested objects compare exactly). */
export const pickFigures = (c: any) => ({
  ltv: c.ltv,
  ltv_by_currency: c.ltv_by_currency,
  order_count: c.order_count,
  first_payment_at: c.first_payment_at,
  last_payment_at: c.last_payment_at,
});

/** Asserts the stored figures of a customer equal those recomputed from its orders (read through the API). */
export const expectFiguresMatchOrders = async (api: Api, token: string, customerId: number, reportingCurrency = 'TWD') => {
  const { orders } = await listAll(api, token, `customer_id=${customerId}`);
  const c = await api.get(`/customers/${customerId}`, token);
  expect(c.status).toBe(200);
  const expected = figuresFromOrders(orders, reportingCurrency);
  expect(pickFigures(c.body.data), `customer ${customerId}`).toEqual(expected);
  return expected;
};
