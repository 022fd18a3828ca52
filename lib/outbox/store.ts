import { randomBytes } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { now } from '#lib/clock';
import { batchGet, keyId } from '#lib/db/batch-get';
import { db, tableName } from '#lib/db/client';
import { keys, OUTBOX_SHARDS, outboxPartition, outboxShardOf, outboxPendingPartition, type Key } from '#lib/db/keys';
import { pagesOf } from '#lib/db/query';
import { retrying } from '#lib/db/retry';
import { itemAbsent, type WriteSet } from '#lib/db/writes';
import { formatTimestamp } from '#lib/shared/time';

/**
 * Webhook events are recorded in the same transaction as the change they announce (a change
 * committed is an event recorded), as two items:
 *
 * - the event (payload): the object exactly as the API returns it, under a key of its own
 *   (`OUTBOX_EVENT#M#<m>#<evt>`), so however large, its writes never meet another event's. Its
 *   stream INSERT is what the relay publishes (the stream filter matches `entity`);
 * - the mark: a small item in one of OUTBOX_SHARDS time-ordered partitions of the merchant
 *   (`OUTBOX#M#<m>#<ss>`), listed in the sparse pending index (gsi4) until the relay or the
 *   sweeper stamps it published. The replay reads marks by time; the sweeper reads pending ones.
 *
 * Both expire by TTL after OUTBOX_TTL_SECONDS. docs/events-and-outbox.md has the capacity arithmetic.
 */
export const EVENT_TYPES = [
  'order.created',
  'order.paid',
  'order.failed',
  'order.refunded',
  'order.cancelled',
  'subscription.created',
  'subscription.updated',
  'subscription.paused',
  'subscription.reactivated',
  'subscription.cancelled',
  'subscription.trial_converted',
  'subscription.trial_cancelled',
  'subscription.past_due',
  'subscription.recovered',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/**
 * Events for the service's own workers, never a webhook (the webhook rule matches EVENT_TYPES only):
 * `customer.renewal_grace`, a customer's last recurring order in its renewal grace, which the
 * scheduler settles when the grace runs out (lib/metrics/renewals.ts); `subscription.trial_imported`,
 * a trial imported by a batch and still running, whose conversion the scheduler applies.
 */
export const INTERNAL_EVENT_TYPES = ['customer.renewal_grace', 'subscription.trial_imported'] as const;
export type InternalEventType = (typeof INTERNAL_EVENT_TYPES)[number];
/** The bus event that arms a renewal check. */
export const RENEWAL_EVENT: InternalEventType = 'customer.renewal_grace';
/** The bus event that arms an imported trial's conversion (its object: id, status, trial_ends_at). */
export const TRIAL_EVENT: InternalEventType = 'subscription.trial_imported';

export const OUTBOX_ENTITY = 'outbox';
export const OUTBOX_MARK_ENTITY = 'outbox_mark';
/** Three days: the replay's reach, and the sweeper's for events the relay never published. */
export const OUTBOX_TTL_SECONDS = 3 * 24 * 3600;

/**
 * The figures of the capacity model (docs/events-and-outbox.md): the hottest merchant's event rate,
 * item sizes (upper bounds: a mark is asserted to stay under its bound), and the write units each
 * event costs on each partition the outbox touches. Transactional writes cost 2 WCU per KB.
 */
export const OUTBOX_CAPACITY = {
  /** 500 order writes/s + 100 subscription changes/s, one event each. */
  eventsPerSecond: 600,
  shards: OUTBOX_SHARDS,
  /** A mark item, and its pending index entry (gsi4 projects keys and `id` only): each under 1 KB. */
  markMaxBytes: 1024,
  /** An event item with the largest metadata (16 KB) and the rest of the object. */
  payloadMaxBytes: 20 * 1024,
  /** Mark partition: put in the transaction (2 × 1 KB) + the published stamp (1 KB, not transactional). */
  markWcuPerEvent: 3,
  /** Pending index partition: the entry's put (counted at the transactional 2) + its removal (1). */
  pendingWcuPerEvent: 3,
  /** The event's own partition, once: a transactional put of the payload (2 × 20 KB). */
  payloadWcuPerEvent: 40,
  /** The ceiling of any one partition key of a merchant. */
  partitionWcuLimit: 500,
} as const;

export const newEventId = (): string => `evt_${randomBytes(12).toString('hex')}`;

/** The pending index entry of a mark (gsi4: keys and `id` only, so each entry is small). */
const pendingIndex = (merchantId: string, eventId: string, sk: string) => ({
  gsi4pk: outboxPendingPartition(merchantId, outboxShardOf(eventId)),
  gsi4sk: sk,
});

/** Adds an outbox event carrying `object` exactly as the API returns it (two puts: the event and its mark). */
export const addOutboxEvent = (
  ws: WriteSet,
  merchantId: string,
  type: EventType | InternalEventType,
  object: unknown,
  at: string,
): string => {
  const id = newEventId();
  const ordinal = ws.tags().filter((t) => t === 'outbox').length;
  const mark = keys.outbox(merchantId, at, id, ordinal);
  // Published within seconds by the relay; kept a few days for the sweeper and the replay, then expired by TTL.
  const expires_at = Math.floor(Date.parse(at) / 1000) + OUTBOX_TTL_SECONDS;
  ws.put(
    'outbox',
    {
      ...keys.outboxEvent(merchantId, id),
      id,
      type,
      merchant_id: merchantId,
      created_at: at,
      // JSON text: an object's metadata may hold values a DynamoDB map cannot.
      data: JSON.stringify({ object }),
      // What the stream's event-source filter matches, so rate counters and data writes never reach the relay.
      entity: OUTBOX_ENTITY,
      // Where the relay stamps it published.
      mark_pk: mark.pk,
      mark_sk: mark.sk,
      expires_at,
    },
    itemAbsent,
  );
  ws.put(
    'outbox-mark',
    {
      ...mark,
      id,
      merchant_id: merchantId,
      created_at: at,
      entity: OUTBOX_MARK_ENTITY,
      expires_at,
      ...pendingIndex(merchantId, id, mark.sk),
    },
    itemAbsent,
  );
  return id;
};

/** An outbox event item as stored (the payload). */
export type OutboxItem = {
  pk: string;
  sk: string;
  id: string;
  type: string;
  merchant_id: string;
  created_at: string;
  data: string;
  mark_pk: string;
  mark_sk: string;
};
/** A mark as stored; `published_at` once the event was published. */
export type MarkItem = Key & { id: string; merchant_id: string; created_at: string; published_at?: string };

/** Marks stamped at once by `markPublished` (each its own UpdateItem). */
const MARK_CONCURRENCY = 10;

/**
 * Stamps marks published and takes them out of the pending index, each only while it exists and
 * is unpublished (a condition: a mark already stamped, or expired by TTL, is left alone and
 * counted as `already`). Throttling is retried by the one retry policy; what is still refused
 * throws: the events stay pending, and the sweeper publishes them again later (at least once).
 */
export const markPublished = async (marks: Key[], at: string): Promise<{ marked: number; already: number }> => {
  const result = { marked: 0, already: 0 };
  const stamp = async (key: Key) => {
    try {
      await retrying(() =>
        db().send(
          new UpdateCommand({
            TableName: tableName(),
            Key: key,
            UpdateExpression: 'SET published_at = :at REMOVE gsi4pk, gsi4sk',
            ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(published_at)',
            ExpressionAttributeValues: { ':at': at },
          }),
        ),
      );
      result.marked++;
    } catch (err) {
      if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
      result.already++;
    }
  };
  for (let i = 0; i < marks.length; i += MARK_CONCURRENCY) await Promise.all(marks.slice(i, i + MARK_CONCURRENCY).map(stamp));
  return result;
};

/** `markPublished` stamped with the current time (the relay's and the sweeper's stamp). */
export const stampPublishedNow = (marks: Key[]) => markPublished(marks, formatTimestamp(now()));

/** Marks of one shard still pending, created from `from` to `until` (the pending index: eventually consistent). */
export const pendingMarkPages = (merchantId: string, shard: number, from: string, until: string, pageSize = 100) =>
  pagesOf<{ pk: string; sk: string; id: string }>(
    { index: 'gsi4', partition: outboxPendingPartition(merchantId, shard), from, to: `${until}~`, descending: false },
    pageSize,
  );

/** Marks of one shard created at or after `since`, oldest first (the table: strongly consistent). */
export const markPagesSince = (merchantId: string, shard: number, since: string, pageSize = 100) =>
  pagesOf<MarkItem>({ partition: outboxPartition(merchantId, shard), from: since, descending: false }, pageSize);

/**
 * The events of `marks`, read with the marks themselves (strongly consistent): `unpublished` keeps
 * only those whose mark still exists without `published_at` (what the sweeper confirms on the
 * table before publishing again, since the index it found them in may be stale).
 */
export const eventsOfMarks = async (merchantId: string, marks: Key[], opts: { unpublished: boolean }): Promise<OutboxItem[]> => {
  const eventKeys = marks.map((mk) => keys.outboxEvent(merchantId, eventIdOfMark(mk)));
  const items = await batchGet<Record<string, unknown>>(opts.unpublished ? [...marks, ...eventKeys] : eventKeys);
  return marks.flatMap((mk, i) => {
    const event = items.get(keyId(eventKeys[i])) as OutboxItem | undefined;
    if (!event) return [];
    if (opts.unpublished) {
      const mark = items.get(keyId(mk)) as MarkItem | undefined;
      if (!mark || mark.published_at) return [];
    }
    return [event];
  });
};

const eventIdOfMark = (mk: Key): string => mk.sk.slice(mk.sk.lastIndexOf('#') + 1);

/** Every shard of a merchant's outbox. */
export const OUTBOX_SHARD_LIST = Array.from({ length: OUTBOX_SHARDS }, (_, s) => s);

/** A merchant's recorded events created at or after `since` (every shard, each oldest first), a page at a time. */
export async function* outboxEventPagesSince(merchantId: string, since: string, pageSize = 100): AsyncGenerator<OutboxItem[]> {
  for (const shard of OUTBOX_SHARD_LIST) {
    for await (const marks of markPagesSince(merchantId, shard, since, pageSize)) {
      const events = await eventsOfMarks(
        merchantId,
        marks.map(({ pk, sk }) => ({ pk, sk })),
        { unpublished: false },
      );
      if (events.length) yield events;
    }
  }
}
