import { keys, webhookDeliveriesPartition } from '#lib/db/keys';
import { countQuery, listPage, type IndexQuery } from '#lib/db/query';
import { itemAbsent, type WriteSet } from '#lib/db/writes';

/**
 * The delivery log (decisions §8): one item per attempt under the endpoint, newest first, kept 30
 * days (TTL on `expires_at`). `GET /webhook-endpoints/{id}/deliveries` will list it.
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

/**
 * One offset page of an endpoint's log, newest first (a strongly consistent Query of its
 * partition, through the shared list paging). TTL-expired items DynamoDB has not removed yet are
 * left out. `total` counts the partition (the log is bounded by 30 days).
 */
export const listDeliveries = async (
  merchantId: string,
  endpointId: number,
  page: number,
  perPage: number,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<{ data: DeliveryLogEntry[]; total: number }> => {
  const query: IndexQuery = {
    partition: webhookDeliveriesPartition(merchantId, endpointId),
    filter: { expression: 'expires_at > :now', values: { ':now': nowSeconds } },
  };
  const { items, total } = await listPage<DeliveryLogItem>(query, () => countQuery(query), page, perPage);
  return { data: items.map(presentDelivery), total };
};
