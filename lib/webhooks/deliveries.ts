import { keys, webhookDeliveriesPartition } from '#lib/db/keys';
import { batchGet } from '#lib/db/batch-get';
import { countQuery, cursorAfter, listPage, queryPage, type CursorPage, type IndexQuery, type PageRequest } from '#lib/db/query';
import { cursorMeta } from '#lib/shared/pagination';
import { itemAbsent, type WriteSet } from '#lib/db/writes';
import { NotFoundError } from '#lib/errors';
import { getWebhookEndpointItem } from '#lib/webhooks/store';

/**
 * The delivery log (decisions §8): one item per attempt under the endpoint, newest first, kept 30
 * days (TTL on `expires_at`), and the log head (`keys.webhookDeliveryLogHead`, no TTL), which the
 * endpoint's create and delete transactions write and remove. `GET /webhook-endpoints/{id}/deliveries`
 * lists it.
 */

export const DELIVERY_LOG_TTL_SECONDS = 30 * 24 * 3600;

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

/** Live items only: an attempt's TTL may have passed before DynamoDB removes it; the head has none. */
const live = (nowSeconds: number) => ({ expression: 'attribute_not_exists(expires_at) OR expires_at > :now', values: { ':now': nowSeconds } });

/**
 * Whether the endpoint exists, from strongly consistent reads by key in one BatchGetItem: its log
 * head, or the endpoint item itself (an endpoint created before heads were written has none).
 */
const endpointExists = async (merchantId: string, endpointId: number): Promise<boolean> =>
  (await batchGet([keys.webhookDeliveryLogHead(merchantId, endpointId), keys.webhookEndpoint(merchantId, endpointId)])).size > 0;

/**
 * One offset page of an endpoint's log, newest first, with its total; NotFoundError when the
 * endpoint does not exist (its attempts outlive a delete until their TTL). Every read is a
 * strongly consistent read of the table, never an index. Page 1 is the count of the attempts in
 * parallel with one Query of the partition that includes the log head (`~ENDPOINT`, first when
 * newest first): the head proves the endpoint exists, so the endpoint item is not read (4 requests
 * with the pipeline's two). Deeper pages check existence beside the count, then skip: O(offset).
 */
export const listDeliveries = async (
  merchantId: string,
  endpointId: number,
  req: PageRequest,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<{ data: DeliveryLogEntry[]; meta: CursorPage<DeliveryLogItem>['meta'] }> => {
  const partition = webhookDeliveriesPartition(merchantId, endpointId);
  // Inclusive bound below the head: '~' < '~ENDPOINT', above every ISO time.
  const attempts: IndexQuery = { partition, to: '~', filter: live(nowSeconds) };
  // Cursors name the log, not the instant its TTL filter was read at.
  const identity: IndexQuery = { partition, to: '~' };
  if (req.page > 1 || req.cursor !== undefined) {
    const count = async () => {
      const [total, exists] = await Promise.all([countQuery(attempts), endpointExists(merchantId, endpointId)]);
      if (!exists) throw new NotFoundError();
      return total;
    };
    const { items, meta } = await listPage<DeliveryLogItem>(attempts, count, req, identity);
    return { data: items.map(presentDelivery), meta };
  }
  const perPage = req.per_page;
  const [total, items] = await Promise.all([
    countQuery(attempts),
    queryPage<DeliveryLogItem>({ partition, filter: live(nowSeconds) }, 0, perPage + 1),
  ]);
  const headSk = keys.webhookDeliveryLogHead(merchantId, endpointId).sk;
  const hasHead = items[0]?.sk === headSk;
  // No head: deleted or never created (404), or created before heads were written (none were
  // backfilled), which only the endpoint item itself can tell apart: one more read, for those only.
  if (!hasHead && !(await getWebhookEndpointItem(merchantId, endpointId))) throw new NotFoundError();
  const page = hasHead ? items.slice(1) : items.slice(0, perPage);
  const next = cursorAfter(attempts, identity, 0, page, perPage, total);
  return { data: page.map(presentDelivery), meta: cursorMeta(0, perPage, total, page.length, next) };
};
