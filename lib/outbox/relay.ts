import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { PutEventsRequestEntry, PutEventsResultEntry } from '@aws-sdk/client-eventbridge';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { config } from '#lib/config';
import { DEADLINE_MARGIN_MS, resendingFailures, withDeadline } from '#lib/db/retry';
import { logger } from '#lib/logger';
import { chunkBy } from '#lib/shared/chunks';
import type { Key } from '#lib/db/keys';
import { OUTBOX_ENTITY, stampPublishedNow } from '#lib/outbox/store';
import { asFunction, WORKER_FUNCTIONS } from '#lib/shared/invocation';
import { firstFailedRecord, processStreamBatch } from '#lib/shared/batch';

/**
 * The publishing half of the transactional outbox: the table's stream → EventBridge PutEvents.
 *
 * An outbox item is committed in the same transaction as the change it announces; its INSERT
 * stream record is how it is published (the sweeper, lib/outbox/sweeper.ts, publishes what the
 * stream never delivered). Delivery is at least once: a record is checkpointed (by the event
 * source mapping on AWS, by the local poller) only once every event up to it was accepted by
 * EventBridge; then the events' marks are stamped published (conditionally: lib/outbox/store.ts).
 *
 * - Entries go out in stream order, in calls of at most 10 entries and 256 KiB (PutEvents' limits).
 * - A partial failure (`FailedEntryCount`, per-entry `ErrorCode`) or a failed call sends the failed
 *   entries again, alone, after a full-jitter pause, a bounded number of times within the deadline.
 * - Entries still failing: the batch answers `batchItemFailures` with the sequence number of the
 *   FIRST failed record. For streams Lambda checkpoints before it and retries from it (so events
 *   after it that were published are published again: the at-least-once duplicates), bisecting,
 *   until the record expires from the stream (24 h: the shard waits, in order, while EventBridge
 *   is down). Later chunks are not sent: they would be sent again anyway.
 */

/** PutEvents takes at most 10 entries and 256 KiB of entries per call. */
export const PUT_EVENTS_MAX_ENTRIES = 10;
export const PUT_EVENTS_MAX_BYTES = 256 * 1024;
/** Attempts per entry in one invocation; the pause before attempt n+1 is random(0, min(2 s, 100 ms × 2^n)). */
export const PUBLISH_ATTEMPTS = 4;
const PUBLISH_BACKOFF = { baseMs: 100, capMs: 2_000 };

export type PutEventsOutput = { FailedEntryCount?: number; Entries?: PutEventsResultEntry[] };
/** One PutEvents call: EventBridge (lib/outbox/eventbridge.ts), the local bus, or a test double. */
export type Publish = (entries: PutEventsRequestEntry[]) => Promise<PutEventsOutput>;

/** The `detail` of every published event: the webhook body (docs/webhook-endpoints.md) plus the merchant. */
export type EventDetail = { id: string; type: string; created_at: string; merchant_id: string; data: { object: unknown } };

export type RelayOptions = {
  /** `source` of the events (EVENT_SOURCE, else `revenue-analytics-api`). */
  source?: string;
  /** The bus (EVENT_BUS_NAME); unset: the account's default bus. */
  eventBusName?: string;
  /** PutEvents attempts per entry in this invocation. */
  maxAttempts?: number;
  /** Epoch ms: no pause may end past it (the invocation's remaining time less a margin). */
  deadline?: number;
  sleep?: (ms: number) => Promise<void>;
  /** Stamps the marks of the events EventBridge accepted; unset: nothing is stamped. */
  markPublished?: MarkPublished;
};

export type RelayStats = {
  /** Records in the batch, and how many of them were outbox INSERTs. */
  records: number;
  events: number;
  /** Entries EventBridge accepted, PutEvents calls made, and entries sent again after failing. */
  published: number;
  calls: number;
  retried: number;
};
/** Marks stamped published, found already stamped (or expired), and left pending by a failed stamp. */
export type MarkStats = { marked: number; already: number; failed: number };
export type RelayResult = DynamoDBBatchResponse & { stats: RelayStats; marks?: MarkStats };
/** Stamps the marks of published events (lib/outbox/store.ts `markPublished`, or a test double). */
export type MarkPublished = (marks: Key[]) => Promise<{ marked: number; already: number }>;

/**
 * What the event source mapping's filter lets through (infra/constructs/outbox-relay.ts): INSERTs of
 * items whose `entity` is "outbox". Rate counters, data writes, updates and TTL deletions are not.
 */
export const isOutboxInsert = (record: DynamoDBRecord): boolean =>
  record.eventName === 'INSERT' && record.dynamodb?.NewImage?.entity?.S === OUTBOX_ENTITY;

/** The event an outbox item holds (as stored, or its stream image unmarshalled). Throws on a malformed item. */
export const eventOfItem = (item: Record<string, unknown>): EventDetail => {
  const { id, type, created_at, merchant_id, data } = item;
  if (
    typeof id !== 'string' ||
    typeof type !== 'string' ||
    typeof created_at !== 'string' ||
    typeof merchant_id !== 'string' ||
    typeof data !== 'string'
  ) {
    throw new Error(`outbox item ${String(id)} lacks one of id, type, created_at, merchant_id, data`);
  }
  let parsed: { object: unknown };
  try {
    parsed = JSON.parse(data);
  } catch {
    // Not the parser's message: it quotes the text, and event data is never logged.
    throw new Error(`outbox item ${id}: data is not JSON`);
  }
  return { id, type, created_at, merchant_id, data: parsed };
};

/** The mark an outbox item names (where it is stamped published); undefined on an item without one. */
export const markOfItem = (item: Record<string, unknown>): Key | undefined =>
  typeof item.mark_pk === 'string' && typeof item.mark_sk === 'string' ? { pk: item.mark_pk, sk: item.mark_sk } : undefined;

const imageOf = (record: DynamoDBRecord): Record<string, unknown> =>
  // The Lambda event's AttributeValue type differs from the SDK's only in binary values (none here).
  unmarshall(record.dynamodb!.NewImage as Record<string, AttributeValue>);

/** The PutEvents entry of an event. */
export const toEntry = (event: EventDetail, opts: { source: string; eventBusName?: string }): PutEventsRequestEntry => {
  const time = new Date(event.created_at);
  const detail: EventDetail = {
    id: event.id,
    type: event.type,
    created_at: event.created_at,
    merchant_id: event.merchant_id,
    data: event.data,
  };
  return {
    Source: opts.source,
    DetailType: event.type,
    Detail: JSON.stringify(detail),
    ...(Number.isFinite(time.getTime()) ? { Time: time } : {}),
    ...(opts.eventBusName ? { EventBusName: opts.eventBusName } : {}),
  };
};

/** An entry's size as PutEvents counts it: Time (14 bytes), Source, DetailType, Detail, Resources. */
export const entrySize = (e: PutEventsRequestEntry): number =>
  (e.Time ? 14 : 0) +
  [e.Source, e.DetailType, e.Detail, ...(e.Resources ?? [])].reduce((n, s) => n + (s ? Buffer.byteLength(s, 'utf8') : 0), 0);

/** Consecutive groups within PutEvents' limits (an entry too large on its own goes alone, and fails). */
export const chunkEntries = <T extends { entry: PutEventsRequestEntry }>(items: T[]): T[][] =>
  chunkBy(items, PUT_EVENTS_MAX_ENTRIES, PUT_EVENTS_MAX_BYTES, (item) => entrySize(item.entry));

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export type Pending = { index: number; event: EventDetail; entry: PutEventsRequestEntry; mark?: Key };
type Failure = { item: Pending; code: string; message?: string };

/** Publishes one chunk, sending failed entries again (one resend policy); returns the entries still failing. */
const publishChunk = async (
  chunk: Pending[],
  publish: Publish,
  opts: Required<Omit<RelayOptions, 'markPublished'>>,
  stats: RelayStats,
): Promise<Pending[]> => {
  const { failures, calls } = await resendingFailures<Pending, Failure>(
    chunk,
    async (pending) => {
      stats.calls++;
      let failures: Failure[];
      try {
        const out = await publish(pending.map((p) => p.entry));
        const results = out.Entries ?? [];
        // Results are positional; without them a reported failure cannot be placed: all failed.
        const unplaced = (out.FailedEntryCount ?? 0) > 0 && results.length !== pending.length;
        failures = pending.flatMap((item, i) =>
          unplaced || results[i]?.ErrorCode ? [{ item, code: results[i]?.ErrorCode ?? 'Unknown', message: results[i]?.ErrorMessage }] : [],
        );
      } catch (err) {
        const e = err as Error;
        failures = pending.map((item) => ({ item, code: e.name || 'Error', message: e.message }));
      }
      stats.published += pending.length - failures.length;
      return failures;
    },
    {
      ...PUBLISH_BACKOFF,
      maxAttempts: opts.maxAttempts,
      deadline: opts.deadline,
      sleep: opts.sleep,
      onRetry: (f) => (stats.retried += f.length),
    },
  );
  if (failures.length) {
    logger.warn('outbox events not published', {
      attempts: calls,
      failures: failures.map((f) => ({ event_id: f.item.event.id, type: f.item.event.type, error_code: f.code, error_message: f.message })),
    });
  }
  return failures.map((f) => f.item);
};

/**
 * The batch's PutEvents, behind the record handlers: each outbox INSERT's handler hands in its
 * event (`send`) and waits for its fate, every other record checks in (`skip`, `halt`). Once all
 * `count` records of the batch have, the events before the first record that failed to parse
 * are published in stream order (`publishInOrder`: chunks within PutEvents' limits, failures sent
 * again, no chunk after one still failing), and each handler learns whether EventBridge took its
 * event.
 */
const batchPublication = (count: number, publish: Publish, opts: Required<Omit<RelayOptions, 'markPublished'>>, stats: RelayStats) => {
  const events: Pending[] = [];
  let halted = Infinity;
  let arrived = 0;
  let allIn!: () => void;
  const outcome = new Promise<void>((resolve) => (allIn = resolve)).then(async () => {
    const sendable = events.filter((p) => p.index < halted).sort((a, b) => a.index - b.index);
    stats.events = sendable.length;
    const { published, failed } = await publishInOrder(sendable, publish, opts, stats);
    return { published, accepted: new Set(published.map((p) => p.index)), refused: new Set(failed.map((p) => p.index)) };
  });
  const arrive = () => {
    if (++arrived === count) allIn();
  };
  if (count === 0) allIn();
  return {
    /** Published events (their marks are stamped), once every record has checked in. */
    published: async () => (await outcome).published,
    skip: arrive,
    /** The record at `index` cannot be published: nothing from it on is. */
    halt: (index: number) => {
      halted = Math.min(halted, index);
      arrive();
    },
    send: async (item: Pending): Promise<void> => {
      events.push(item);
      arrive();
      const { accepted, refused } = await outcome;
      if (accepted.has(item.index)) return;
      if (refused.has(item.index)) throw new Error(`event ${item.event.id} not accepted by EventBridge`);
      throw new Error(`event ${item.event.id} not sent: a record before it failed`);
    },
  };
};

/**
 * Publishes the outbox INSERTs among `records` (stream order) and reports the first record that
 * must be retried, as a Lambda handler for a DynamoDB stream with ReportBatchItemFailures answers.
 * The record handler turns an outbox INSERT into its PutEvents entry (a malformed item fails its
 * record) and waits for the batch's publication; Powertools runs it on every record at once and
 * collects the failed ones (lib/shared/batch.ts). Every record from the first failed one on is
 * sent again by Lambda, so the answer names that one only.
 */
export const relayRecords = asFunction(
  WORKER_FUNCTIONS.outboxRelay,
  async (records: DynamoDBRecord[], publish: Publish, options: RelayOptions = {}): Promise<RelayResult> => {
    const opts: Required<Omit<RelayOptions, 'markPublished'>> = {
      source: options.source ?? config.eventSource(),
      eventBusName: options.eventBusName ?? config.eventBusName() ?? '',
      maxAttempts: options.maxAttempts ?? PUBLISH_ATTEMPTS,
      deadline: options.deadline ?? Infinity,
      sleep: options.sleep ?? sleep,
    };
    const stats: RelayStats = { records: records.length, events: 0, published: 0, calls: 0, retried: 0 };
    const batch = batchPublication(records.length, publish, opts, stats);
    // Each record's place in the batch (a record object handed in twice takes its places in turn).
    const places = new Map<DynamoDBRecord, number[]>();
    records.forEach((record, index) => places.set(record, [...(places.get(record) ?? []), index]));
    const response = await processStreamBatch(records, async (record) => {
      const index = places.get(record)?.shift();
      if (index === undefined) {
        // Not a record of `records` as handed in: its place, so what may go before it, is unknown.
        batch.halt(0);
        throw new Error('a record not of the batch');
      }
      if (!isOutboxInsert(record)) return batch.skip();
      let item: Pending;
      try {
        const image = imageOf(record);
        const event = eventOfItem(image);
        item = { index, event, entry: toEntry(event, opts), mark: markOfItem(image) };
      } catch (err) {
        // A malformed item cannot be published: it fails (and ends in the on-failure destination).
        logger.error('outbox record cannot be published', {
          sequence_number: record.dynamodb?.SequenceNumber,
          error: (err as Error).message,
        });
        batch.halt(index);
        throw err;
      }
      return batch.send(item);
    });
    const { batchItemFailures } = firstFailedRecord(records, response);
    if (!options.markPublished) return { batchItemFailures, stats };
    return { batchItemFailures, stats, marks: await stampPublished(await batch.published(), options.markPublished) };
  },
);

/**
 * Publishes `pending` in order, chunk by chunk (PutEvents' limits), each chunk's failures sent
 * again within the options' attempts and deadline; stops at the first chunk that still fails
 * (what follows would only be sent again). Returns what EventBridge accepted and what it did not.
 */
export const publishInOrder = async (
  pending: Pending[],
  publish: Publish,
  opts: Required<Omit<RelayOptions, 'markPublished'>>,
  stats: RelayStats,
): Promise<{ published: Pending[]; failed: Pending[] }> => {
  const published: Pending[] = [];
  for (const chunk of chunkEntries(pending)) {
    const failed = await publishChunk(chunk, publish, opts, stats);
    const refused = new Set(failed);
    published.push(...chunk.filter((p) => !refused.has(p)));
    if (failed.length) return { published, failed };
  }
  return { published, failed: [] };
};

/**
 * Stamps the marks of published events. A stamp that fails leaves its event pending, not lost:
 * the sweeper publishes it again after its grace period (a duplicate receivers drop by event id),
 * so the batch is not failed for it (which would publish the whole batch again).
 */
const stampPublished = async (published: Pending[], mark: MarkPublished): Promise<MarkStats> => {
  const marks = published.flatMap((p) => (p.mark ? [p.mark] : []));
  if (!marks.length) return { marked: 0, already: 0, failed: 0 };
  try {
    return { ...(await mark(marks)), failed: 0 };
  } catch (err) {
    logger.warn('outbox marks not stamped: the sweeper publishes their events again', {
      marks: marks.length,
      error: (err as Error).message,
    });
    return { marked: 0, already: 0, failed: marks.length };
  }
};

/**
 * The relay as a Lambda handler (DynamoDB stream event → partial batch response). The deployed
 * function publishes to EventBridge (functions/outbox/relay.ts); `npm start`'s poller invokes the
 * same handler with records of the same shape, publishing to the local bus or an emulator.
 */
export const createRelayHandler =
  (publish: Publish, options: Omit<RelayOptions, 'deadline'> = {}) =>
  async (event: DynamoDBStreamEvent, context: Context): Promise<DynamoDBBatchResponse> => {
    logger.addContext(context);
    const deadline = Date.now() + context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS;
    const { batchItemFailures, stats, marks } = await withDeadline(deadline, () =>
      relayRecords(event.Records ?? [], publish, { markPublished: stampPublishedNow, ...options, deadline }),
    );
    logger.info('outbox relay batch', { ...stats, ...marks, first_failed_sequence_number: batchItemFailures[0]?.itemIdentifier });
    return { batchItemFailures };
  };
