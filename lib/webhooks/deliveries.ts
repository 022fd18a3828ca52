import Decimal from 'decimal.js';
import { keys, webhookDeliveriesPartition, webhookDeliveryDaysPartition } from '#lib/db/keys';
import { batchGet } from '#lib/db/batch-get';
import { readCounterItems, sumShards } from '#lib/db/counters';
import { countQuery, listPage, type CursorPage, type IndexQuery, type PageRequest } from '#lib/db/query';
import { itemAbsent, type WriteSet } from '#lib/db/writes';
import { NotFoundError } from '#lib/errors';
import { isoDay, plusDays, utcDay } from '#lib/shared/time';

/**
 * The delivery log: one item per attempt under the endpoint, newest first, kept 30 days (TTL on
 * `expires_at`), each with the body sent (at most LOGGED_PAYLOAD_MAX_BYTES of it) and when the
 * queue tries again, so the list reads nothing else; and beside it the attempts counted per UTC day
 * (sharded ADDs in the transaction that logs the attempt), so the list's total is one bounded Query
 * whatever the log's length. The count partition's head (`keys.webhookDeliveryDaysHead`, no TTL)
 * is written and removed by the endpoint's create and delete transactions: it proves the endpoint
 * exists and that every attempt of the window was counted. `GET /webhook-endpoints/{id}/deliveries`
 * lists the log.
 */

export const DELIVERY_LOG_TTL_SECONDS = 30 * 24 * 3600;
/** The list shows today's attempts and those of the 29 UTC days before: all younger than their 30-day TTL. */
export const DELIVERY_LIST_DAYS = 30;
const COUNT_ATTR = 'attempts';

/**
 * How much of an attempt's body its log entry keeps (UTF-8 bytes). A page of the list is up to 100
 * entries and must stay one Query answer (DynamoDB stops a Query at 1 MB): with this much payload and
 * the longest error an entry stays under 9 KB (`test/webhooks/payload-bound.unit.test.ts`). Every
 * subscription and test body, and every order body without metadata, is smaller; an order whose
 * metadata (up to 16 KiB) makes its body longer is kept truncated, marked `payload_truncated`.
 */
export const LOGGED_PAYLOAD_MAX_BYTES = 6 * 1024;

export type DeliveryLogEntry = {
  event_id: string;
  event_type: string;
  /** 1 for the first attempt, then one more per retry (and per manual retry). */
  attempt: number;
  /** The HTTP status when a response arrived, else null. */
  status: number | null;
  /** `could not connect` (no HTTP answer, whatever the cause) or `refused url: …`; else null. */
  error: string | null;
  duration_ms: number;
  /** When the attempt started (ISO 8601). */
  at: string;
  /**
   * When the queue tries this delivery again (ISO 8601 UTC, to the second): the attempt's end plus
   * the schedule's pause (`nextRetryDelaySeconds`). Null when no try is due: delivered, the last
   * scheduled attempt (dead-lettered), a test event, or a manual retry with no queued retry pending.
   */
  next_attempt_at: string | null;
  /** The body sent (the JSON text that was signed), cut at LOGGED_PAYLOAD_MAX_BYTES; null for attempts logged before payloads were kept. */
  payload: string | null;
  /** True when `payload` is only the body's first LOGGED_PAYLOAD_MAX_BYTES bytes. */
  payload_truncated: boolean;
};

export type DeliveryLogItem = Omit<DeliveryLogEntry, 'next_attempt_at' | 'payload' | 'payload_truncated'> & {
  pk: string;
  sk: string;
  endpoint_id: number;
  expires_at: number;
  /** Absent on attempts logged before these were kept. */
  next_attempt_at?: string | null;
  payload?: string;
  payload_truncated?: boolean;
};

/**
 * What the log keeps of a body: all of it up to LOGGED_PAYLOAD_MAX_BYTES, else its first bytes up
 * to that bound, cut before a character (never inside one), marked truncated.
 */
export const loggedPayload = (body: string): { payload: string; payload_truncated: boolean } => {
  if (Buffer.byteLength(body, 'utf8') <= LOGGED_PAYLOAD_MAX_BYTES) return { payload: body, payload_truncated: false };
  const bytes = Buffer.from(body, 'utf8');
  let end = LOGGED_PAYLOAD_MAX_BYTES;
  // A UTF-8 continuation byte (10xxxxxx) at the cut means a character would be split: cut before it.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return { payload: bytes.subarray(0, end).toString('utf8'), payload_truncated: true };
};

/**
 * Adds one attempt to the endpoint's log (a put that must create: an attempt is logged once).
 * `sortAt` (ISO with milliseconds) orders attempts within one second; `entry.at` otherwise.
 */
export const addDeliveryLog = (ws: WriteSet, merchantId: string, endpointId: number, entry: DeliveryLogEntry, sortAt = entry.at): void => {
  // Bounded whatever the caller passes: an entry never holds more than LOGGED_PAYLOAD_MAX_BYTES of body.
  const kept = entry.payload === null ? null : loggedPayload(entry.payload);
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
      next_attempt_at: entry.next_attempt_at,
      ...(kept ? { payload: kept.payload } : {}),
      ...(entry.payload_truncated || kept?.payload_truncated ? { payload_truncated: true } : {}),
      expires_at: Math.floor(Date.parse(entry.at) / 1000) + DELIVERY_LOG_TTL_SECONDS,
    },
    itemAbsent,
  );
  const day = utcDay(entry.at);
  ws.update('delivery-day', keys.webhookDeliveryDay(merchantId, endpointId, day, ws.shard))
    .add(COUNT_ATTR, new Decimal(1))
    .set('expires_at', Math.floor(Date.parse(plusDays(day, 1)) / 1000) + DELIVERY_LOG_TTL_SECONDS); // the TTL from the day's end
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
  next_attempt_at: item.next_attempt_at ?? null,
  payload: item.payload ?? null,
  payload_truncated: item.payload_truncated === true,
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
  const firstDay = plusDays(isoDay(nowSeconds * 1000), -(DELIVERY_LIST_DAYS - 1));
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
  const { items, meta } = await listPage<DeliveryLogItem>(merchantId, attempts, count, req, identity);
  return { data: items.map(presentDelivery), meta };
};
