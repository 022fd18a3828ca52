import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { ENTRY_OF, indexes, indexPartitions, keys } from '#lib/db/keys';
import { itemRowsOf } from '#lib/db/query';
import { retrying } from '#lib/db/retry';
import { itemAbsent, versionIs, WriteSet } from '#lib/db/writes';
import type { OrderItem } from '#lib/orders/model';

export const getOrder = async (merchantId: string, orderNo: string): Promise<OrderItem | null> => {
  // No stored order_no is longer than 100 characters (a longer key would not even be a valid DynamoDB key).
  if (orderNo.length > 100) return null;
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.order(merchantId, orderNo), ConsistentRead: true }));
  return (Item as OrderItem | undefined) ?? null;
};

type Listed = Pick<OrderItem, 'order_no' | 'id' | 'status' | 'created_at' | 'customer_id'>;

/** The index attributes the order item carries: its customer's orders (gsi3, a partition of that customer's). */
export const orderIndexAttributes = (merchantId: string, o: Listed) => indexes.ordersByCustomer(merchantId, o.customer_id, o.created_at, o.id);

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
  { ...keys.orderListEntry(merchantId, o.order_no, 'all'), [ENTRY_OF]: keys.order(merchantId, o.order_no), ...indexes.ordersByCreated(merchantId, o.created_at, o.id) },
  { ...keys.orderListEntry(merchantId, o.order_no, 'status'), [ENTRY_OF]: keys.order(merchantId, o.order_no), ...indexes.ordersByStatus(merchantId, o.status, o.created_at, o.id) },
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
