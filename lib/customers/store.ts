import { BatchGetCommand, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { db, tableName } from '#lib/db/client';
import { indexes, indexPartitions, keys, type Key } from '#lib/db/keys';
import type { WriteSet } from '#lib/db/writes';
import type { CustomerCreate } from '#lib/customers/schemas';
import type { CustomerItem } from '#lib/customers/model';

/** Customer persistence: reads and the write actions other modules add to their transactions. */

const live = (item: Record<string, unknown> | undefined): CustomerItem | null =>
  item && !item.deleted_at ? (item as CustomerItem) : null;

export const getCustomerById = async (merchantId: string, id: number): Promise<CustomerItem | null> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.customer(merchantId, id), ConsistentRead: true }));
  return live(Item);
};

/** By external_id through the sparse index (live customers only). */
export const getCustomerByExternalId = async (merchantId: string, externalId: string): Promise<CustomerItem | null> => {
  const { Items } = await db().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: 'gsi2',
      KeyConditionExpression: 'gsi2pk = :p',
      ExpressionAttributeValues: { ':p': indexPartitions.customerByExternalId(merchantId, externalId) },
      Limit: 1,
    }),
  );
  return live(Items?.[0]);
};

/** The path segment is an id when it is all digits, else an external_id (decisions §5). */
export const findCustomer = (merchantId: string, idOrExternalId: string): Promise<CustomerItem | null> =>
  /^\d{1,15}$/.test(idOrExternalId)
    ? getCustomerById(merchantId, Number(idOrExternalId))
    : getCustomerByExternalId(merchantId, idOrExternalId);

type Marker = { customer_id: number };

/** Customer ids of the live customers holding these emails (one BatchGetItem per 100). */
export const customerIdsByEmail = async (merchantId: string, emails: string[]): Promise<Map<string, number>> => {
  const found = await batchGet<Marker & Key>(emails.map((e) => keys.customerEmail(merchantId, e)));
  const out = new Map<string, number>();
  for (const email of emails) {
    const k = keys.customerEmail(merchantId, email);
    const marker = found.get(`${k.pk}|${k.sk}`);
    if (marker) out.set(email.toLowerCase(), Number(marker.customer_id));
  }
  return out;
};

/** Customers by id, deleted ones included (orders still show them). */
export const customersByIds = async (merchantId: string, ids: number[]): Promise<Map<number, CustomerItem>> => {
  const unique = [...new Set(ids)];
  const found = await batchGet<CustomerItem>(unique.map((id) => keys.customer(merchantId, id)));
  const out = new Map<number, CustomerItem>();
  for (const item of found.values()) out.set(Number(item.id), item);
  return out;
};

/** Strongly consistent BatchGetItem over any number of keys, retrying unprocessed keys. */
export const batchGet = async <T extends Record<string, unknown>>(list: Key[]): Promise<Map<string, T>> => {
  const out = new Map<string, T>();
  const seen = new Set<string>();
  const uniq = list.filter((k) => !seen.has(`${k.pk}|${k.sk}`) && seen.add(`${k.pk}|${k.sk}`));
  for (let i = 0; i < uniq.length; i += 100) {
    let pending: Key[] = uniq.slice(i, i + 100);
    for (let attempt = 0; pending.length; attempt++) {
      const res = await db().send(
        new BatchGetCommand({ RequestItems: { [tableName()]: { Keys: pending, ConsistentRead: true } } }),
      );
      for (const item of res.Responses?.[tableName()] ?? []) out.set(`${item.pk}|${item.sk}`, item as T);
      pending = (res.UnprocessedKeys?.[tableName()]?.Keys ?? []) as Key[];
      if (pending.length) await new Promise((r) => setTimeout(r, 20 * 2 ** Math.min(attempt, 5)));
    }
  }
  return out;
};

const notExists = { expression: 'attribute_not_exists(pk)' };

/** Adds a new customer (with its unique email and external_id markers and the live total) to `ws`. */
export const addCustomerCreate = (
  ws: WriteSet,
  merchantId: string,
  id: number,
  input: CustomerCreate,
  at: string,
): CustomerItem => {
  const item: CustomerItem = {
    ...keys.customer(merchantId, id),
    ...indexes.customersByCreated(merchantId, at, id),
    ...(input.external_id ? indexes.customerByExternalId(merchantId, input.external_id) : {}),
    id,
    email: input.email.toLowerCase(),
    name: input.name ?? null,
    phone: input.phone ?? null,
    external_id: input.external_id ?? null,
    metadata: input.metadata ?? null,
    order_count: 0,
    payment_version: 0,
    created_at: at,
    updated_at: at,
  };
  ws.put('customer', item, notExists);
  ws.put('email', { ...keys.customerEmail(merchantId, item.email), customer_id: id }, notExists);
  if (item.external_id) {
    ws.put('external_id', { ...keys.customerExternalId(merchantId, item.external_id), customer_id: id }, notExists);
  }
  ws.update('totals', keys.totals(merchantId)).add('customers', new Decimal(1));
  return item;
};

/** Guard: the customer is still live. */
export const liveCondition = { expression: 'attribute_exists(pk) AND attribute_not_exists(deleted_at)' };
