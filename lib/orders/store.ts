import { GetCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { addTotal, listTotal, readShardSnapshots, sumShards } from '#lib/db/counters';
import { COUNTER_SHARDS } from '#lib/db/writes-constants';
import { db, tableName } from '#lib/db/client';
import { createdRange, ENTRY_OF, indexes, indexPartitions, keys, type Key } from '#lib/db/keys';
import { countQuery, itemRowsOf, listPage, type IndexQuery } from '#lib/db/query';
import { retrying } from '#lib/db/retry';
import { itemAbsent, versionIs, WriteConflict, WriteSet } from '#lib/db/writes';
import { keyId } from '#lib/db/batch-get';
import type { OrderItem } from '#lib/orders/model';
import {
  changed,
  hourAttr,
  newOrder,
  partialHours,
  QUARTERS_PER_HOUR,
  quarterAttr,
  revenueAttr,
  withLegacyQuarters,
  type StatsTerm,
} from '#lib/orders/rules';
import type { OrderListQuery } from '#lib/orders/schemas';
import type { IdempotencyRecord } from '#lib/db/idempotency';
import { utcDay, utcMonth } from '#lib/shared/time';
import { quarterOf } from '#lib/shared/zone';

/**
 * The orders' table adapter: keys and index attributes, reads, and the writes of a planned change
 * (the order, its list entries, the figures it moves), and what a failed write's tags mean.
 */

export const getOrder = async (merchantId: string, orderNo: string): Promise<OrderItem | null> => {
  // No stored order_no is longer than 100 characters (a longer key would not even be a valid DynamoDB key).
  if (orderNo.length > 100) return null;
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.order(merchantId, orderNo), ConsistentRead: true }));
  return (Item as OrderItem | undefined) ?? null;
};

/** The customer an order names, by key (deleted ones too: their orders still show them). */
export const getOrderCustomer = async (merchantId: string, customerId: number) => {
  const { Item } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.customer(merchantId, customerId), ConsistentRead: true }),
  );
  return Item as { email: string; name: string | null } | undefined;
};

type Listed = Pick<OrderItem, 'order_no' | 'id' | 'status' | 'created_at' | 'customer_id'>;

/** The index attributes the order item carries: its customer's orders (gsi3, a partition of that customer's). */
export const orderIndexAttributes = (merchantId: string, o: Listed) =>
  indexes.ordersByCustomer(merchantId, o.customer_id, o.created_at, o.id);

/** A new order as stored (rules: `newOrder`): its key and index attributes. */
export const newOrderItem = (merchantId: string, ...args: Parameters<typeof newOrder>): OrderItem => {
  const order = newOrder(...args);
  return { ...keys.order(merchantId, order.order_no), ...orderIndexAttributes(merchantId, order), ...order } as OrderItem;
};

/**
 * The order after a change of fields as stored: its index keys follow it, the version moves on.
 * List keys an earlier version kept on the item are dropped (its list entries carry them: `addOrderWrite`).
 */
export const rewriteOrder = (merchantId: string, order: OrderItem, changes: Partial<OrderItem>, at: string): OrderItem => {
  const next = withoutListKeys(changed(order, changes, at));
  return { ...next, ...orderIndexAttributes(merchantId, next) };
};

/** The merchant-wide list keys an order written by an earlier version carries on itself (moved to its entries). */
export const LEGACY_ORDER_INDEX_ATTRIBUTES = ['gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk'] as const;

/** The order without the merchant-wide list keys an earlier version kept on it. */
export const withoutListKeys = <T extends Record<string, unknown>>(order: T): T => {
  const out: Record<string, unknown> = { ...order };
  for (const attr of LEGACY_ORDER_INDEX_ATTRIBUTES) delete out[attr];
  return out as T;
};

/**
 * The order's list entries: all orders (gsi1) and by status (gsi2), two so that a status change
 * leaves the first alone. Each holds its index keys and names the order item (`ENTRY_OF`).
 */
export const orderListEntries = (merchantId: string, o: Listed) => [
  {
    ...keys.orderListEntry(merchantId, o.order_no, 'all'),
    [ENTRY_OF]: keys.order(merchantId, o.order_no),
    ...indexes.ordersByCreated(merchantId, o.created_at, o.id),
  },
  {
    ...keys.orderListEntry(merchantId, o.order_no, 'status'),
    [ENTRY_OF]: keys.order(merchantId, o.order_no),
    ...indexes.ordersByStatus(merchantId, o.status, o.created_at, o.id),
  },
];

/**
 * Adds to `ws` the list entries the order needs as `after` (written in the order's transaction,
 * under its condition): both for a new order (`before` null) and for one an earlier version wrote
 * (its list keys were on the item, `LEGACY_ORDER_INDEX_ATTRIBUTES`); else only an entry whose index
 * key moved (the status entry on a status change; both when an import gives the order its own date).
 */
const addOrderListEntries = (ws: WriteSet, merchantId: string, before: OrderItem | null, after: Listed): void => {
  const stored = before && before.gsi1pk === undefined ? orderListEntries(merchantId, before) : [];
  orderListEntries(merchantId, after).forEach((entry, i) => {
    const old = stored[i];
    if (old && JSON.stringify(old) === JSON.stringify(entry)) return;
    ws.put('order-list', entry);
  });
};

/** Adds the order's write to `ws`: the item (new, or guarded by the version it was computed from) and its list entries. */
export const addOrderWrite = (ws: WriteSet, merchantId: string, before: OrderItem | null, after: OrderItem): void => {
  ws.put('order', after, before ? versionIs(before.version) : itemAbsent);
  addOrderListEntries(ws, merchantId, before, after);
};

/** The idempotency record under `key` (strongly consistent): read again when the order_no is found taken. */
export const getIdempotencyRecord = async (key: ReturnType<typeof keys.idempotency>) => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }));
  return Item as IdempotencyRecord | undefined;
};

/** A failed create's tags: the order_no was taken, by a request without our idempotency record. */
export const orderNoTakenBy = (err: unknown) =>
  err instanceof WriteConflict && err.tags.includes('order') && !err.tags.includes('idempotency');

/**
 * A page of orders, newest first. By customer (gsi3, the orders themselves) when one is given, else
 * by status (gsi2), else all (gsi1), both of list entries whose orders are then read by key; the
 * created_at range narrows the sort key. Totals come from the TOTALS counters, fetched with the
 * page's orders, when no range or customer filter applies, so page 1 stays flat in the order count.
 */
export const ordersPage = (merchantId: string, customerId: number | undefined, q: OrderListQuery) => {
  const range = createdRange(q.start_date, q.end_date);
  let query: IndexQuery;
  if (customerId !== undefined) {
    query = {
      index: 'gsi3',
      partition: indexPartitions.ordersByCustomer(merchantId, customerId),
      ...(q.status ? { filter: { expression: '#fst = :fst', names: { '#fst': 'status' }, values: { ':fst': q.status } } } : {}),
    };
  } else if (q.status) {
    query = { index: 'gsi2', partition: indexPartitions.ordersByStatus(merchantId, q.status) };
  } else {
    query = { index: 'gsi1', partition: indexPartitions.orders(merchantId) };
  }
  query = { ...query, from: range.from, to: range.to };
  const countedByTotals = customerId === undefined && range.from === undefined && range.to === undefined;
  const total = countedByTotals ? listTotal(merchantId, 'ORDERS', q.status ? `orders_${q.status}` : 'orders') : () => countQuery(query);
  return listPage<OrderItem>(merchantId, query, total, q);
};

/**
 * The stats items `terms` name, each summed over its shards and filed by `termId`: every shard's
 * months, days and the hours a part of a day begins or ends in (`partialHours`), read as of one
 * instant per shard (`readShardSnapshots`). In UTC, 96 items: one TransactGetItems.
 */
export const readStatsTerms = async (merchantId: string, terms: StatsTerm[]) => {
  const months = [...new Set(terms.flatMap((t) => (t.kind === 'month' ? [t.month] : [])))];
  const days = [...new Set(terms.flatMap((t) => (t.kind === 'day' ? [t.day] : [])))];
  const hours = [...new Set(terms.flatMap((t) => (t.kind === 'day' ? partialHours(t).map((h) => `${t.day}|${h}`) : [])))].map((dh) => {
    const [day, hour] = dh.split('|');
    return { day, hour: Number(hour) };
  });
  const shardList = Array.from({ length: COUNTER_SHARDS }, (_, shard) => shard);
  const monthKeys = new Map(months.map((month) => [month, shardList.map((shard) => keys.statsMonth(merchantId, month, shard))]));
  const dayKeys = new Map(days.map((day) => [day, shardList.map((shard) => keys.statsDay(merchantId, day, shard))]));
  const hourKeys = new Map(
    days.map((day) => [
      day,
      hours.filter((h) => h.day === day).map((h) => shardList.map((s) => keys.statsHour(merchantId, day, h.hour, s))),
    ]),
  );
  const items = await readShardSnapshots(
    shardList.map((shard) => [
      ...[...monthKeys.values()].map((ks) => ks[shard]),
      ...[...dayKeys.values()].map((ks) => ks[shard]),
      ...[...hourKeys.values()].flat().map((ks) => ks[shard]),
    ]),
  );
  const found = (ks: Key[]): Record<string, unknown>[] =>
    ks.flatMap((k) => {
      const item = items.get(keyId(k));
      return item ? [item] : [];
    });
  const out = new Map<string, Record<string, Decimal>>();
  for (const [month, ks] of monthKeys) out.set(`M#${month}`, sumShards(found(ks)));
  for (const [day, ks] of dayKeys) {
    // Quarter-hours an earlier version kept on the day item count in their hours too.
    const counters = withLegacyQuarters(sumShards(found(ks)));
    for (const [attr, v] of Object.entries(sumShards(found(hourKeys.get(day)!.flat()))))
      counters[attr] = (counters[attr] ?? new Decimal(0)).plus(v);
    out.set(`D#${day}`, counters);
  }
  return out;
};

/**
 * `ops upgrade`: orders written before list entries existed (their list keys on the item) get their
 * entries, and the keys leave the item, in one transaction guarded by the order's version (a
 * concurrent write, which writes the entries itself, sends that order round again from a fresh
 * read). Found through the list of all orders; each is read by key. A second run moves nothing.
 */
export const moveOrderListKeys = async (merchantId: string): Promise<{ moved: number }> => {
  let moved = 0;
  for await (const rows of itemRowsOf({ index: 'gsi1', partition: indexPartitions.orders(merchantId), descending: false })) {
    for (const row of rows) {
      const wrote = await retrying(async () => {
        const order = await getOrder(merchantId, String(row.order_no));
        if (!order || order.gsi1pk === undefined) return false;
        const ws = new WriteSet(0);
        for (const entry of orderListEntries(merchantId, order)) ws.put('order-list', entry);
        const item = ws.update('order', keys.order(merchantId, order.order_no)).when(versionIs(order.version));
        for (const attr of LEGACY_ORDER_INDEX_ATTRIBUTES) item.remove(attr);
        await ws.commit();
        return true;
      });
      if (wrote) moved++;
    }
  }
  return { moved };
};

/**
 * What an order contributes to the pre-aggregated figures. Every order write turns the stored
 * state (`before`, null when new) and the new state (`after`) into ADD deltas in the same
 * transaction as the order, so figures and orders never disagree.
 */
export type OrderFigures = Pick<OrderItem, 'order_no' | 'amount' | 'currency' | 'status' | 'paid_at' | 'created_at' | 'customer_id'>;

const ONE = new Decimal(1);
const sign = (d: Decimal, negative: boolean) => (negative ? d.negated() : d);

/** Stats (per UTC day and month, per currency) and list totals, in this transaction's counter shard. */
export const addAggregateDeltas = (ws: WriteSet, merchantId: string, before: OrderFigures | null, after: OrderFigures | null) => {
  // The UTC day's counter, its hour's on the day item, and its quarter-hour's on the hour's item
  // (rules.ts `hourAttr`: time zones regroup them). Each item stays small at any hour of the day.
  const day = (at: string, attr: string, amount: Decimal) => {
    const quarter = quarterOf(Date.parse(at));
    const hour = Math.floor(quarter / QUARTERS_PER_HOUR);
    ws.update('stats', keys.statsDay(merchantId, utcDay(at), ws.shard))
      .add(attr, amount)
      .add(hourAttr(hour, attr), amount);
    ws.update('stats', keys.statsHour(merchantId, utcDay(at), hour, ws.shard)).add(quarterAttr(quarter, attr), amount);
  };
  const apply = (o: OrderFigures, negative: boolean) => {
    if (o.status === 'paid' && o.paid_at) {
      const amount = sign(new Decimal(o.amount), negative);
      day(o.paid_at, revenueAttr(o.currency), amount);
      ws.update('stats', keys.statsMonth(merchantId, utcMonth(o.paid_at), ws.shard)).add(revenueAttr(o.currency), amount);
    }
    if (o.status === 'paid') day(o.created_at, 'created_paid', sign(ONE, negative));
    addTotal(ws, merchantId, 'ORDERS', `orders_${o.status}`, sign(ONE, negative));
  };
  if (before) apply(before, true);
  if (after) apply(after, false);
  if (!before && after) {
    day(after.created_at, 'created', ONE);
    addTotal(ws, merchantId, 'ORDERS', 'orders', ONE);
  } else if (before && after && before.created_at !== after.created_at) {
    // An import gave the order its own date: it counts on that day.
    day(before.created_at, 'created', ONE.negated());
    day(after.created_at, 'created', ONE);
  }
};
