import Decimal from 'decimal.js';
import { keys, webhookDeliveriesPartition, webhookDeliveryDaysPartition } from '#lib/db/keys';
import { batchGet } from '#lib/db/batch-get';
import { readCounterItems, sumShards } from '#lib/db/counters';
import { countQuery, listPage, type CursorPage, type IndexQuery, type PageRequest } from '#lib/db/query';
import { itemAbsent, type WriteSet } from '#lib/db/writes';
import { NotFoundError } from '#lib/errors';
import { utcDay } from '#lib/shared/time';

/**
 * The delivery log: one item per attempt under the endpoint, newest first, kept 30 days (TTL on
 * `expires_at`), and beside it the attempts counted per UTC day (sharded ADDs in the transaction
 * that logs the attempt), so the list's total is one bounded Query whatever the log's length. The
 * count partition's head (`keys.webhookDeliveryDaysHead`, no TTL) is written and removed by the
 * endpoint's create and delete transactions: it proves the endpoint exists and that every attempt
 * of the window was counted. `GET /webhook-endpoints/{id}/deliveries` lists the log.
 */

export const DELIVERY_LOG_TTL_SECONDS = 30 * 24 * 3600;
/** The list shows today's attempts and those of the 29 UTC days before: all younger than their 30-day TTL. */
export const DELIVERY_LIST_DAYS = 30;
const DAY_MS = 24 * 3600 * 1000;
const COUNT_ATTR = 'attempts';

export type DeliveryLogEntry = {
  event_id: string;
  event_type: string;
  /** 1 for the first attempt, then one more per retry (and per manual retry). */
  attempt: number;
  /** The HTTP status when a response arrived, else null. */
  status: number | null;
  /** `timeout`, a connection error code or `refused url: …` when no acceptable answer; else null. */
  error: string | null;
  duration_ms: number;
  /** When the attempt started (ISO 8601). */
  at: string;
};

export type DeliveryLogItem = DeliveryLogEntry & { pk: string; sk: string; endpoint_id: number; expires_at: number };

/**
 * Adds one attempt to the endpoint's log (a put that must create: an attempt is logged once).
 * `sortAt` (ISO with milliseconds) orders attempts within one second; `entry.at` otherwise.
 */
export const addDeliveryLog = (ws: WriteSet, merchantId: string, endpointId: number, entry: DeliveryLogEntry, sortAt = entry.at): void => {
  ws.put(
    'webhook-delivery',
    {
      ...keys.webhookDelivery(merchantId, endpointId, sortAt, entry.event_id, entry.attempt),
      endpoint_id: endpointId,
      event_id: entry.event_id,
      event_type: entry.event_type,
      attempt: entry.attempt,
      status: entry.status,
      error: entry.error,
      duration_ms: entry.duration_ms,
      at: entry.at,
      expires_at: Math.floor(Date.parse(entry.at) / 1000) + DELIVERY_LOG_TTL_SECONDS,
    },
    itemAbsent,
  );
  const day = utcDay(entry.at);
  ws.update('delivery-day', keys.webhookDeliveryDay(merchantId, endpointId, day, ws.shard))
    .add(COUNT_ATTR, new Decimal(1))
    .set('expires_at', Math.floor(Date.parse(day) / 1000) + DELIVERY_LOG_TTL_SECONDS + 24 * 3600);
};

const COMPLETE_FROM = 'complete_from';

/**
 * In the endpoint's create and delete transactions: its counts are complete while it exists. For
 * an endpoint created before the counts (the backfill), `completeFrom` is the first UTC day all of
 * whose attempts are counted: until it starts the list's window, the list still counts item by item.
 */
export const putDeliveryDaysHead = (ws: WriteSet, merchantId: string, endpointId: number, completeFrom?: string): void => {
  ws.put(
    'days-head',
    { ...keys.webhookDeliveryDaysHead(merchantId, endpointId), ...(completeFrom ? { [COMPLETE_FROM]: completeFrom } : {}) },
    itemAbsent,
  );
};
export const deleteDeliveryDaysHead = (ws: WriteSet, merchantId: string, endpointId: number): void => {
  ws.delete('days-head', keys.webhookDeliveryDaysHead(merchantId, endpointId));
};

/** The log entry as the API will return it (no keys, no TTL). */
export const presentDelivery = (item: DeliveryLogItem): DeliveryLogEntry => ({
  event_id: item.event_id,
  event_type: item.event_type,
  attempt: Number(item.attempt),
  status: item.status == null ? null : Number(item.status),
  error: item.error ?? null,
  duration_ms: Number(item.duration_ms),
  at: item.at,
});

/**
 * Whether the endpoint exists, from strongly consistent reads by key in one BatchGetItem: its log
 * head, or the endpoint item itself (an endpoint created before heads were written has none).
 */
const endpointExists = async (merchantId: string, endpointId: number): Promise<boolean> =>
  (await batchGet([keys.webhookDeliveryLogHead(merchantId, endpointId), keys.webhookEndpoint(merchantId, endpointId)])).size > 0;

/**
 * One page of an endpoint's log, newest first, with its total; NotFoundError when the endpoint
 * does not exist (its attempts outlive a delete until their TTL). Every read is a strongly
 * consistent read of the table, never an index. The total is one Query of the day counts of the
 * window up to their head (the head proves the endpoint exists), in parallel with the page's Query:
 * page 1 and a cursor page cost the same 2 requests however long the log. An endpoint created
 * before the counts (no head, or a backfilled head whose counts start inside the window) is counted
 * item by item and checked by key.
 */
export const listDeliveries = async (
  merchantId: string,
  endpointId: number,
  req: PageRequest,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<{ data: DeliveryLogEntry[]; meta: CursorPage<DeliveryLogItem>['meta'] }> => {
  const partition = webhookDeliveriesPartition(merchantId, endpointId);
  const firstDay = utcDay(new Date(nowSeconds * 1000 - (DELIVERY_LIST_DAYS - 1) * DAY_MS).toISOString());
  // From the window's first day to just below the log head: '~' < '~ENDPOINT', above every ISO time.
  const attempts: IndexQuery = { partition, from: firstDay, to: '~' };
  // Cursors name the log, not the day its window started at.
  const identity: IndexQuery = { partition, to: '~' };
  const head = keys.webhookDeliveryDaysHead(merchantId, endpointId);
  const count = async () => {
    const items = await readCounterItems(
      webhookDeliveryDaysPartition(merchantId, endpointId),
      keys.webhookDeliveryDay(merchantId, endpointId, firstDay, 0).sk.slice(0, -3),
      head.sk,
    );
    const headItem = items.find((i) => i.sk === head.sk);
    // A head from the backfill counts from its first whole day: earlier days' attempts were not counted.
    const complete = headItem && !(String(headItem[COMPLETE_FROM] ?? '') > firstDay);
    if (complete) return sumShards(items.filter((i) => i !== headItem))[COUNT_ATTR]?.toNumber() ?? 0;
    const [total, exists] = await Promise.all([countQuery(attempts), endpointExists(merchantId, endpointId)]);
    if (!exists) throw new NotFoundError();
    return total;
  };
  const { items, meta } = await listPage<DeliveryLogItem>(attempts, count, req, identity);
  return { data: items.map(presentDelivery), meta };
};
