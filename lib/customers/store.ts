import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { batchGet, keyId } from '#lib/db/batch-get';
import { addTotal, listTotal } from '#lib/db/counters';
import { db, tableName } from '#lib/db/client';
import {
  customerSearchPartition,
  customerSearchPartitions,
  ENTRY_OF,
  indexes,
  indexPartitions,
  keys,
  legacyCustomerSearchPartition,
  LTV_PART_PREFIX,
  type Key,
} from '#lib/db/keys';
import { itemAbsent, WriteConflict, WriteSet } from '#lib/db/writes';
import { InvalidError, type FieldErrors } from '#lib/errors';
import { itemRowsOf, pagesOf, queryAll, type IndexQuery } from '#lib/db/query';
import { retrying } from '#lib/db/retry';
import { EXTERNAL_ID_MAX, type CustomerCreate } from '#lib/customers/schemas';
import type { CustomerItem, LtvPart } from '#lib/customers/model';
import { EMAIL_TAKEN, EXTERNAL_ID_TAKEN, isIdSegment, type ProfileChanges, type SearchRow } from '#lib/customers/rules';
import { decodeMetadata } from '#lib/shared/metadata';

/**
 * The customers' table adapter: reads by key and index, the write actions (theirs and those other
 * resources add to their transactions), and what a failed write's tags mean.
 */

const live = (item: Record<string, unknown> | undefined): CustomerItem | null => (item && !item.deleted_at ? (item as CustomerItem) : null);

/** A customer's LTV parts (its paid orders in other currencies by year), one strongly consistent Query of its partition. */
export const readLtvParts = (merchantId: string, customerId: number): Promise<LtvPart[]> =>
  queryAll<LtvPart>(
    { partition: keys.customer(merchantId, customerId).pk, from: LTV_PART_PREFIX, to: `${LTV_PART_PREFIX}~`, descending: false },
    [],
  );

export const getCustomerById = async (merchantId: string, id: number): Promise<CustomerItem | null> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.customer(merchantId, id), ConsistentRead: true }));
  return live(Item);
};

/**
 * A live customer by id and, in the same BatchGetItem (strongly consistent), its timeline head,
 * which its figures are read from (the heads map is keyed by `keyId`).
 */
export const customerWithStanding = async (
  merchantId: string,
  id: number,
): Promise<{ customer: CustomerItem; heads: Map<string, Record<string, unknown>> } | null> => {
  const ck = keys.customer(merchantId, id);
  const found = await batchGet<Record<string, unknown>>([ck, keys.customerTimeline(merchantId, id)]);
  const customer = live(found.get(keyId(ck)));
  if (!customer) return null;
  found.delete(keyId(ck));
  return { customer, heads: found };
};

/**
 * By external_id for reads (GET): the sparse index, one request, eventually consistent on AWS like
 * the lists. Writes never use it: they resolve through the marker (`resolveForWrite`).
 */
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
  const item = live(Items?.[0]);
  return item && item.external_id === externalId ? item : null;
};

/**
 * The customer a write addresses: by id, or by external_id through its uniqueness marker — a
 * strongly consistent GetItem of the marker, then of the customer, which must still hold that
 * external_id. Never an index (it can be stale on AWS and name the previous holder).
 */
export const resolveForWrite = async (merchantId: string, idOrExternalId: string): Promise<CustomerItem | null> => {
  if (isIdSegment(idOrExternalId)) return getCustomerById(merchantId, Number(idOrExternalId));
  if (idOrExternalId.length > EXTERNAL_ID_MAX) return null;
  const { Item: marker } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.customerExternalId(merchantId, idOrExternalId), ConsistentRead: true }),
  );
  if (!marker) return null;
  const customer = await getCustomerById(merchantId, Number(marker.customer_id));
  return customer && customer.external_id === idOrExternalId ? customer : null;
};

type Marker = { customer_id: number };

/** Customer ids of the live customers holding these emails (one BatchGetItem per 100). */
export const customerIdsByEmail = async (merchantId: string, emails: string[]): Promise<Map<string, number>> => {
  const found = await batchGet<Marker & Key>(emails.map((e) => keys.customerEmail(merchantId, e)));
  const out = new Map<string, number>();
  for (const email of emails) {
    const k = keys.customerEmail(merchantId, email);
    const marker = found.get(keyId(k));
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

export { batchGet, keyId };

/**
 * The customer's email marker, which is also its entry in the merchant's customer list (gsi1): it
 * is put when the customer is created, moved with its email and deleted with it, exactly the life
 * of a live customer, so the figures orders move on the customer item never reach the list and the
 * entry costs no write of its own.
 */
export const emailMarker = (merchantId: string, email: string, id: number, createdAt: string) => ({
  ...keys.customerEmail(merchantId, email),
  customer_id: id,
  [ENTRY_OF]: keys.customer(merchantId, id),
  ...indexes.customersByCreated(merchantId, createdAt, id),
});

/**
 * Scalar metadata pairs indexed per customer: a change of every one of them (a delete and a put
 * each) plus the customer's own items stays within one transaction's 100 actions.
 */
export const MAX_INDEXED_METADATA = 40;

/**
 * The metadata pairs the customer metadata index holds (docs/customers.md): each entry whose value
 * is a string, number or boolean, as `[key, String(value)]`, the first MAX_INDEXED_METADATA of
 * them in key order; objects, arrays and null are not indexed.
 */
export const indexedMetadata = (stored: unknown): [key: string, value: string][] =>
  Object.entries(decodeMetadata(stored) ?? {})
    .filter(([, v]) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, MAX_INDEXED_METADATA)
    .map(([k, v]) => [k, String(v)]);

const pairId = ([k, v]: [string, string]) => `${k}\u0000${v}`;

/** Adds to `ws` the metadata index entries of a customer whose metadata goes from `before` to `after` (JSON text): the new pairs put, the gone ones deleted. */
const addMetadataIndex = (ws: WriteSet, merchantId: string, id: number, before: unknown, after: unknown) => {
  const old = new Map(indexedMetadata(before).map((p) => [pairId(p), p]));
  const next = new Map(indexedMetadata(after).map((p) => [pairId(p), p]));
  for (const [pid, [k, v]] of old) if (!next.has(pid)) ws.delete('metadata_index', keys.customerMetadata(merchantId, k, v, id));
  for (const [pid, [k, v]] of next)
    if (!old.has(pid)) ws.put('metadata_index', { ...keys.customerMetadata(merchantId, k, v, id), customer_id: id });
};

/** The customer still has the metadata the write replaces (its index entries move with it). */
const holdsMetadata = (metadata: string | null | undefined) =>
  metadata
    ? { expression: '#c_md = :c_md', names: { '#c_md': 'metadata' }, values: { ':c_md': metadata } }
    : {
        expression: 'attribute_not_exists(#c_md) OR attribute_type(#c_md, :c_md_null)',
        names: { '#c_md': 'metadata' },
        values: { ':c_md_null': 'NULL' },
      };

/** Adds a new customer (with its unique email marker, its list entry, its external_id marker and the live total) to `ws`. */
/** A new customer, written `at`; `createdAt` is when it became one (an import's own date; default `at`). */
export const addCustomerCreate = (
  ws: WriteSet,
  merchantId: string,
  id: number,
  input: CustomerCreate,
  at: string,
  createdAt = at,
): CustomerItem => {
  const item: CustomerItem = {
    ...keys.customer(merchantId, id),
    ...indexes.customerSearch(merchantId, createdAt, id),
    ...(input.external_id ? indexes.customerByExternalId(merchantId, input.external_id) : {}),
    id,
    email: input.email.toLowerCase(),
    name: input.name ?? null,
    phone: input.phone ?? null,
    external_id: input.external_id ?? null,
    metadata: input.metadata ?? null,
    order_count: 0,
    payment_version: 0,
    created_at: createdAt,
    updated_at: at,
  };
  ws.put('customer', item, itemAbsent);
  ws.put('email', emailMarker(merchantId, item.email, id, createdAt), itemAbsent);
  addMetadataIndex(ws, merchantId, id, null, item.metadata);
  if (item.external_id) {
    ws.put('external_id', { ...keys.customerExternalId(merchantId, item.external_id), customer_id: id }, itemAbsent);
  }
  addTotal(ws, merchantId, 'CUSTOMERS', 'customers', new Decimal(1));
  return item;
};

/** The 422 for unique fields whose marker write failed, or null when the conflict was something else. */
export const takenError = (err: unknown): InvalidError | null => {
  if (!(err instanceof WriteConflict)) return null;
  const errors: FieldErrors = {};
  if (err.tags.includes('email')) errors.email = [EMAIL_TAKEN];
  if (err.tags.includes('external_id')) errors.external_id = [EXTERNAL_ID_TAKEN];
  return Object.keys(errors).length ? new InvalidError(errors) : null;
};

/** Guard: the customer is still live. */
export const liveCondition = { expression: 'attribute_exists(pk) AND attribute_not_exists(deleted_at)' };

/** A marker may be removed only by the customer that holds it (a missing one is fine). */
const markerOwnedBy = (id: number) => ({
  expression: 'attribute_not_exists(pk) OR customer_id = :owner',
  values: { ':owner': id },
});

/** The customer still has the email (and external_id) whose markers the write moves. */
const holdsEmail = (email: string) => ({
  expression: '#c_email = :c_email',
  names: { '#c_email': 'email' },
  values: { ':c_email': email },
});
const holdsExternalId = (externalId: string | null) =>
  externalId
    ? { expression: '#c_ext = :c_ext', names: { '#c_ext': 'external_id' }, values: { ':c_ext': externalId } }
    : {
        expression: 'attribute_not_exists(#c_ext) OR attribute_type(#c_ext, :c_null)',
        names: { '#c_ext': 'external_id' },
        values: { ':c_null': 'NULL' },
      };

/**
 * Adds a profile update to `ws`: SETs only the changed profile fields (derived figures written by
 * orders are left alone) and moves the email / external_id markers in the same transaction.
 * Tags: `customer` (gone, or its email/external_id changed meanwhile), `email`, `external_id` (taken).
 */
export const addCustomerUpdate = (
  ws: WriteSet,
  merchantId: string,
  current: CustomerItem,
  changes: ProfileChanges,
  at: string,
): CustomerItem => {
  const update = ws.update('customer', keys.customer(merchantId, current.id)).when(liveCondition).when(holdsEmail(current.email));
  for (const [field, value] of Object.entries(changes)) update.set(field, value);
  update.set('updated_at', at);
  if (changes.email !== undefined && changes.email !== current.email) {
    // The list entry moves with the marker (a customer of an earlier version leaves its own list keys for it).
    ws.put('email', emailMarker(merchantId, changes.email, current.id, current.created_at), itemAbsent);
    update.remove('gsi1pk').remove('gsi1sk');
    ws.delete('old_email', keys.customerEmail(merchantId, current.email), markerOwnedBy(current.id));
  }
  if (changes.metadata !== undefined) {
    update.when(holdsMetadata(current.metadata));
    addMetadataIndex(ws, merchantId, current.id, current.metadata, changes.metadata);
  }
  if (changes.external_id !== undefined) {
    update.when(holdsExternalId(current.external_id ?? null));
    if (current.external_id) {
      ws.delete('old_external_id', keys.customerExternalId(merchantId, current.external_id), markerOwnedBy(current.id));
    }
    if (changes.external_id) {
      ws.put('external_id', { ...keys.customerExternalId(merchantId, changes.external_id), customer_id: current.id }, itemAbsent);
      update.setAll(indexes.customerByExternalId(merchantId, changes.external_id));
    } else if (current.external_id) {
      update.remove('gsi2pk').remove('gsi2sk');
    }
  }
  return { ...current, ...changes, updated_at: at };
};

/**
 * Adds a soft delete to `ws`: stamps deleted_at, leaves the list (its entry, the email marker, is
 * deleted; the keys an item of an earlier version carries itself are removed), the search and
 * external_id indexes, frees the email and external_id for reuse, and decrements the live total. Email, name and the figures
 * stay on the item because orders still show them.
 */
export const addCustomerDelete = (ws: WriteSet, merchantId: string, current: CustomerItem, at: string): void => {
  ws.update('customer', keys.customer(merchantId, current.id))
    .when(liveCondition)
    .when(holdsEmail(current.email))
    .when(holdsExternalId(current.external_id ?? null))
    .set('deleted_at', at)
    .set('updated_at', at)
    .remove('gsi1pk')
    .remove('gsi1sk')
    .remove('gsi4pk')
    .remove('gsi4sk')
    .remove('gsi2pk')
    .remove('gsi2sk');
  ws.delete('email', keys.customerEmail(merchantId, current.email), markerOwnedBy(current.id));
  if (current.external_id) {
    ws.delete('external_id', keys.customerExternalId(merchantId, current.external_id), markerOwnedBy(current.id));
  }
  addTotal(ws, merchantId, 'CUSTOMERS', 'customers', new Decimal(-1));
};

/** Live customers of the merchant, from the sharded totals (kept by the create/delete transactions). */
export const customerTotal = (merchantId: string) => listTotal(merchantId, 'CUSTOMERS', 'customers');

/**
 * The live customers' list, newest first: their entries in gsi1, then the customers by key (one
 * deleted after the index was read is left out).
 */
export const customersList = (merchantId: string): IndexQuery => ({
  index: 'gsi1',
  partition: indexPartitions.customers(merchantId),
  live: (item) => !item.deleted_at,
});

/**
 * id, email and name of every live customer, newest first (for in-memory search), from the search
 * index: its shards Queried at once, each newest first, merged by their sort key (created_at, then id).
 */
export const customerSearchRows = async (merchantId: string): Promise<SearchRow[]> => {
  const shards = await Promise.all(
    customerSearchPartitions(merchantId).map((partition) =>
      queryAll<SearchRow & { gsi4sk: string }>({ index: 'gsi4', partition }, ['id', 'email', 'name', 'gsi4sk']),
    ),
  );
  return shards
    .flat()
    .sort((a, b) => (a.gsi4sk < b.gsi4sk ? 1 : a.gsi4sk > b.gsi4sk ? -1 : 0))
    .map(({ gsi4sk: _sk, ...row }) => row);
};

/**
 * `ops upgrade`: live customers written before list entries existed (their list keys on the item)
 * get their entry (their email marker takes the keys), and the keys leave the item (which gets its
 * search keys if it had none), in one transaction on condition that the customer is still live,
 * listed under those keys and holding that email, and the marker still its own: a concurrent delete
 * or email change sends it round again from a fresh read; every other customer write updates
 * attributes of its own. Found through the customer list; each is read by key. A second run moves
 * nothing.
 */
export const moveCustomerListKeys = async (merchantId: string): Promise<{ moved: number }> => {
  let moved = 0;
  for await (const rows of itemRowsOf(customersList(merchantId))) {
    for (const row of rows) {
      const wrote = await retrying(async () => {
        const listed = (await getCustomerById(merchantId, Number(row.id))) as (CustomerItem & { gsi1sk?: string }) | null;
        if (!listed?.gsi1sk) return false;
        const ws = new WriteSet(0);
        const { pk: _pk, sk: _sk, customer_id: _id, ...entry } = emailMarker(merchantId, listed.email, listed.id, listed.created_at);
        ws.update('email', keys.customerEmail(merchantId, listed.email))
          .when({ expression: 'customer_id = :c_id', values: { ':c_id': listed.id } })
          .setAll(entry);
        const item = ws
          .update('customer', keys.customer(merchantId, listed.id))
          .when(liveCondition)
          .when(holdsEmail(listed.email))
          .when({ expression: '#c_lsk = :c_lsk', names: { '#c_lsk': 'gsi1sk' }, values: { ':c_lsk': listed.gsi1sk } })
          .remove('gsi1pk')
          .remove('gsi1sk');
        for (const [attr, value] of Object.entries(indexes.customerSearch(merchantId, listed.created_at, listed.id)))
          item.setIfAbsent(attr, value);
        await ws.commit();
        return true;
      });
      if (wrote) moved++;
    }
  }
  return { moved };
};

/**
 * `ops upgrade`: live customers whose search entry is still in the index's one partition of before
 * its shards get it moved to their shard (the partition key only: the sort key stays), one UpdateItem
 * each on condition that the customer is still live and still under the old partition (a delete
 * meanwhile removed the keys; a customer written since has them in its shard). Found through that
 * partition, a page at a time; a second run moves nothing.
 */
export const moveCustomerSearchKeys = async (merchantId: string): Promise<{ moved: number }> => {
  const old = legacyCustomerSearchPartition(merchantId);
  let moved = 0;
  for await (const rows of pagesOf<{ id: number }>({ index: 'gsi4', partition: old, descending: false }, 100)) {
    for (const row of rows) {
      const id = Number(row.id);
      const wrote = await retrying(() =>
        db()
          .send(
            new UpdateCommand({
              TableName: tableName(),
              Key: keys.customer(merchantId, id),
              UpdateExpression: 'SET gsi4pk = :shard',
              ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleted_at) AND gsi4pk = :old',
              ExpressionAttributeValues: { ':shard': customerSearchPartition(merchantId, id), ':old': old },
            }),
          )
          .then(
            () => true,
            (err: Error) => {
              if (err.name === 'ConditionalCheckFailedException') return false;
              throw err;
            },
          ),
      );
      if (wrote) moved++;
    }
  }
  return { moved };
};
