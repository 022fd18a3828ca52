import { GetCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { db, tableName } from '#lib/db/client';
import { batchGet, keyId } from '#lib/db/batch-get';
import { readTotals } from '#lib/db/counters';
import { keys, webhookEndpointIndexes, webhookEndpointListPartition, type Key } from '#lib/db/keys';
import { listPage, queryAll, type IndexQuery } from '#lib/db/query';
import { retrying } from '#lib/db/retry';
import { itemAbsent, versionIs, WriteConflict, WriteSet } from '#lib/db/writes';
import type { EventType } from '#lib/outbox/store';
import { now } from '#lib/clock';
import { isoDay, plusDays } from '#lib/shared/time';
import { deleteDeliveryDaysHead, putDeliveryDaysHead } from '#lib/webhooks/deliveries';
import type { DeliveryStateItem } from '#lib/webhooks/delivery';
import type { WebhookEndpointItem } from '#lib/webhooks/model';
import { MAX_WEBHOOK_ENDPOINTS, receives, type Endpoint, type Plan } from '#lib/webhooks/rules';
import type { WebhookEndpointListQuery } from '#lib/webhooks/schemas';

/**
 * The webhook endpoints' table adapter: keys and reads, the writes of a planned change (the
 * endpoint under its version, its list entry, the count that caps them, the delivery log's heads)
 * and what a failed write's tags mean.
 */

/** The merchant's endpoint count: one totals item whose condition enforces the cap on create. */
export const endpointCountKey = (merchantId: string) => keys.totals(merchantId, 'WEBHOOK_ENDPOINTS', 0);
export const ENDPOINT_COUNT_ATTR = 'endpoints';

/** A webhook endpoint by id, read by key (strongly consistent). */
export const getWebhookEndpointItem = async (merchantId: string, id: number): Promise<WebhookEndpointItem | null> => {
  if (!Number.isSafeInteger(id) || id < 1) return null;
  const { Item } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.webhookEndpoint(merchantId, id), ConsistentRead: true }),
  );
  return (Item as WebhookEndpointItem | undefined) ?? null;
};

/** The endpoint as stored: its key, and its place in the merchant's list (gsi1). */
export const endpointItem = (merchantId: string, e: Endpoint): WebhookEndpointItem => ({ ...keys.webhookEndpoint(merchantId, e.id), ...e });
const withIndex = (merchantId: string, e: WebhookEndpointItem) => ({ ...e, ...webhookEndpointIndexes.all(merchantId, e.created_at, e.id) });

const ONE = new Decimal(1);

/**
 * Adds a new endpoint to `ws`: the item, its delivery log's heads, its list entry, and the count,
 * whose condition keeps the merchant within the cap (tag `endpoint-count`: `limitReachedBy`).
 */
export const addEndpointCreate = (ws: WriteSet, merchantId: string, item: WebhookEndpointItem): void => {
  ws.put('endpoint', withIndex(merchantId, item), itemAbsent);
  ws.put('log-head', keys.webhookDeliveryLogHead(merchantId, item.id), itemAbsent);
  putDeliveryDaysHead(ws, merchantId, item.id);
  putListEntry(ws, merchantId, item);
  ws.update('endpoint-count', endpointCountKey(merchantId))
    .add(ENDPOINT_COUNT_ATTR, ONE)
    .when({
      expression: 'attribute_not_exists(#n) OR #n < :max',
      names: { '#n': ENDPOINT_COUNT_ATTR },
      values: { ':max': MAX_WEBHOOK_ENDPOINTS },
    });
};

/** A failed create's tags: the merchant already has as many endpoints as the cap allows. */
export const limitReachedBy = (err: unknown) => err instanceof WriteConflict && err.tags.includes('endpoint-count');

/** Adds a planned change to `ws`: the endpoint guarded by the version read, its list entry, and its health cleared when the plan says so. */
export const addEndpointChange = (ws: WriteSet, merchantId: string, before: WebhookEndpointItem, plan: Plan<WebhookEndpointItem>): void => {
  ws.put('endpoint', withIndex(merchantId, plan.next), versionIs(before.version));
  // Written even when it did not change: an endpoint from before list entries gets its entry.
  putListEntry(ws, merchantId, plan.next);
  if (plan.healthReset) ws.delete('health', keys.webhookEndpointHealth(merchantId, before.id));
};

/** Adds a hard delete to `ws` (the encrypted secrets go with the item): its log's heads, its list entry, one off the count. */
export const addEndpointDelete = (ws: WriteSet, merchantId: string, item: WebhookEndpointItem): void => {
  ws.delete('endpoint', keys.webhookEndpoint(merchantId, item.id), versionIs(item.version));
  ws.delete('log-head', keys.webhookDeliveryLogHead(merchantId, item.id));
  deleteDeliveryDaysHead(ws, merchantId, item.id);
  deleteListEntry(ws, merchantId, item.id);
  ws.update('endpoint-count', endpointCountKey(merchantId)).add(ENDPOINT_COUNT_ATTR, ONE.negated());
};

/** A page of the merchant's endpoints, newest first; the total comes from the endpoint count (strongly consistent). */
export const endpointsPage = (merchantId: string, q: WebhookEndpointListQuery) => {
  const query: IndexQuery = { index: 'gsi1', partition: webhookEndpointIndexes.partitions.all(merchantId) };
  const count = async () => (await readTotals(merchantId, 'WEBHOOK_ENDPOINTS'))[ENDPOINT_COUNT_ATTR]?.toNumber() ?? 0;
  return listPage<WebhookEndpointItem>(merchantId, query, count, q);
};

/** The endpoint and its delivery of one webhook, in one BatchGetItem (for a manual retry). */
export const getDelivery = async (merchantId: string, id: number, eventId: string) => {
  const endpointKey = keys.webhookEndpoint(merchantId, id);
  const stateKey = keys.webhookDeliveryState(merchantId, id, eventId);
  const found = await batchGet([endpointKey, stateKey]);
  return {
    endpoint: found.get(keyId(endpointKey)) as WebhookEndpointItem | undefined,
    state: found.get(keyId(stateKey)) as DeliveryStateItem | undefined,
  };
};

type ListEntry = Pick<WebhookEndpointItem, 'id' | 'status' | 'events'>;

/**
 * The endpoint's entry in the merchant's endpoint list, in the transaction that writes the
 * endpoint itself (under its version condition): the fan-out's copy of what it filters on.
 */
export const putListEntry = (ws: WriteSet, merchantId: string, e: ListEntry): void => {
  ws.put('list-entry', { ...keys.webhookEndpointListEntry(merchantId, e.id), id: e.id, status: e.status, events: e.events });
};
export const deleteListEntry = (ws: WriteSet, merchantId: string, id: number): void => {
  ws.delete('list-entry', keys.webhookEndpointListEntry(merchantId, id));
};

/**
 * The delivery fan-out: the merchant's enabled endpoints subscribed to `type`, from a strongly
 * consistent Query of the endpoint list partition (at most 20 small items: one page), beside the
 * endpoint count. An endpoint created or re-enabled a moment before the event is in it; an index
 * would show it only after its lag. Endpoints written before list entries existed have none until
 * their next change: while the count says some are missing, the index adds them (entries win).
 */
export const endpointsReceiving = async (merchantId: string, type: EventType): Promise<ListEntry[]> => {
  const fields = ['id', 'status', 'events'];
  const [entries, totals] = await Promise.all([
    queryAll<ListEntry>({ partition: webhookEndpointListPartition(merchantId), descending: false }, fields),
    readTotals(merchantId, 'WEBHOOK_ENDPOINTS'),
  ]);
  let all = entries.map((e) => ({ ...e, id: Number(e.id) }));
  if ((totals[ENDPOINT_COUNT_ATTR]?.toNumber() ?? 0) > all.length) {
    const listed = new Set(all.map((e) => e.id));
    const indexed = await queryAll<ListEntry>(
      { index: 'gsi1', partition: webhookEndpointIndexes.partitions.all(merchantId), descending: false },
      fields,
    );
    all = [...all, ...indexed.map((e) => ({ ...e, id: Number(e.id) })).filter((e) => !listed.has(e.id))];
  }
  return all.filter((e) => receives(e, type));
};

/**
 * `ops webhooks backfill`: gives every endpoint of the merchant written before list entries and
 * delivery counts existed its list entry (the fan-out stops reading the index for it) and its
 * delivery-count head (its log's total comes from the counts once they cover the list's window). Endpoints are found by key, every id
 * the merchant's sequence has handed out (no index read decides a write); each entry is written
 * beside a check of the endpoint's version, so a concurrent change (which writes its own entry)
 * makes that one go round again from a fresh read. Running it twice writes nothing the second time.
 */
export const backfillEndpointList = async (merchantId: string): Promise<{ endpoints: number; written: number }> => {
  const seq = (await batchGet([keys.sequences(merchantId)])).get(keyId(keys.sequences(merchantId)));
  const ids = Array.from({ length: Number(seq?.webhook_endpoint ?? 0) }, (_, i) => i + 1);
  const owned = (id: number) => [
    keys.webhookEndpoint(merchantId, id),
    keys.webhookEndpointListEntry(merchantId, id),
    keys.webhookDeliveryDaysHead(merchantId, id),
  ];
  const found = await batchGet(ids.flatMap(owned));
  const has = (key: Key) => found.has(keyId(key));
  let endpoints = 0;
  let written = 0;
  for (const id of ids) {
    const [endpoint, entry, daysHead] = owned(id);
    if (!has(endpoint)) continue;
    endpoints++;
    if (has(entry) && has(daysHead)) continue;
    const wrote = await retrying(async () => {
      const e = await getWebhookEndpointItem(merchantId, id);
      if (!e) return false;
      const ws = new WriteSet();
      ws.check('endpoint', endpoint, versionIs(e.version));
      if (!has(entry)) putListEntry(ws, merchantId, e);
      // Today's earlier attempts were not counted: its counts are whole from tomorrow.
      if (!has(daysHead)) putDeliveryDaysHead(ws, merchantId, id, plusDays(isoDay(now()), 1));
      await ws.commit();
      return true;
    });
    if (wrote) written++;
  }
  return { endpoints, written };
};
