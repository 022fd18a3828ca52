import { QueryCommand, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys, webhookDeliveriesPartition } from '#lib/db/keys';
import { MAX_QUERY_LIMIT } from '#lib/db/query';
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

/** Adds one attempt to the endpoint's log (a put that must create: an attempt is logged once). */
export const addDeliveryLog = (ws: WriteSet, merchantId: string, endpointId: number, entry: DeliveryLogEntry): void => {
  ws.put(
    'webhook-delivery',
    {
      ...keys.webhookDelivery(merchantId, endpointId, entry.at, entry.event_id, entry.attempt),
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
 * One offset page of an endpoint's log, newest first (base table Query, descending). Skipped
 * attempts are read as keys only; page 1 is one Query. TTL-expired items DynamoDB has not removed
 * yet are left out. `total` counts the partition (Select COUNT; the log is bounded by 30 days).
 */
export const listDeliveries = async (
  merchantId: string,
  endpointId: number,
  page: number,
  perPage: number,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<{ data: DeliveryLogEntry[]; total: number }> => {
  const base = {
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    FilterExpression: 'expires_at > :now',
    ExpressionAttributeValues: { ':pk': webhookDeliveriesPartition(merchantId, endpointId), ':now': nowSeconds },
    ScanIndexForward: false,
  };
  let total = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const res: QueryCommandOutput = await db().send(new QueryCommand({ ...base, Select: 'COUNT', ExclusiveStartKey: start }));
    total += res.Count ?? 0;
    start = res.LastEvaluatedKey;
  } while (start);

  const offset = (page - 1) * perPage;
  if (offset >= total) return { data: [], total };
  // Skip `offset` attempts (keys only), then read one page. With the TTL filter a Query may return
  // fewer items than its Limit, so both loops go on until they have enough or the partition ends.
  let skipped = 0;
  while (skipped < offset) {
    const res: QueryCommandOutput = await db().send(
      new QueryCommand({
        ...base,
        ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
        ProjectionExpression: '#pk, #sk',
        Limit: Math.min(offset - skipped, MAX_QUERY_LIMIT),
        ExclusiveStartKey: start,
      }),
    );
    skipped += res.Items?.length ?? 0;
    start = res.LastEvaluatedKey;
    if (!start) break;
  }
  if (skipped < offset) return { data: [], total };
  const items: DeliveryLogItem[] = [];
  while (items.length < perPage) {
    const res: QueryCommandOutput = await db().send(new QueryCommand({ ...base, Limit: perPage - items.length, ExclusiveStartKey: start }));
    items.push(...((res.Items ?? []) as DeliveryLogItem[]));
    start = res.LastEvaluatedKey;
    if (!start) break;
  }
  return { data: items.map(presentDelivery), total };
};
