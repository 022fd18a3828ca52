import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { limiter } from '#lib/shared/in-turn';
import { processStreamBatch } from '#lib/shared/batch';
import { DEADLINE_MARGIN_MS, deadline, retrying, withDeadline } from '#lib/db/retry';
import { applyPending, PENDING_MOVES_ENTITY } from '#lib/db/writes';
import { config } from '#lib/config';
import { type Key, keys, merchantOfKey } from '#lib/db/keys';
import { pacer as newPacer, tableShares } from '#lib/metrics/pace';
import { logger } from '#lib/logger';
import { asFunction, type WorkerFunction } from '#lib/shared/invocation';

/**
 * The pending-moves applier: the table's stream → `applyPending` for each pending-moves item put.
 *
 * Batches write the aggregate moves of their changes as pending-moves items (lib/db/writes.ts
 * `spillable`) instead of applying them in the request. Every read of the aggregates adds the
 * pending items in, so figures are exact at once; this function applies each item soon after (its
 * ADDs and its deletion in one transaction), so the items do not pile up and slow the reads.
 *
 * - Records are independent (each item names its own targets, and ADDs commute): up to
 *   APPLY_CONCURRENCY are applied at once, in no particular order. Powertools' batch processing
 *   runs the per-record handler and collects the failures (lib/shared/batch.ts).
 * - Each apply runs through the one retry policy (lib/db/retry.ts `retrying`) within the
 *   invocation's deadline. An item already gone (applied by another delivery of its record, a
 *   write's own follow-up or `ops metrics rebuild`) is a success: `applyPending` applies once.
 * - A record that still fails is reported in `batchItemFailures` (the others are applied all the
 *   same): the mapping retries from the lowest reported record, a bounded number of times, then
 *   sends the range to its dead-letter queue (infra/constructs/pending-moves-applier.ts). Records
 *   delivered again find their items gone and cost one read each.
 */

/** Items applied at once by one invocation. */
export const APPLY_CONCURRENCY = 4;

/**
 * Paced: on each metric shard of a merchant the applier takes at most `config.applierWcuPerSecond()`
 * write units a second (a ledger per shard and second in the table, shared by every instance), so a
 * backlog it catches up on never bursts onto a shard's keys. Its backlog is bounded
 * (`config.pendingBacklogBound()`), so waiting for the pace is bounded too; an item whose turn would come
 * after the invocation's deadline is left (reported, and delivered again).
 */
const pacers = /* @__PURE__ */ new Map<string, ReturnType<typeof newPacer>>();
const MAX_PACERS = 1024;
const paceOf = (merchantId: string) => async (wcu: number, shard: number) => {
  const id = `${merchantId}#${shard}`;
  let pacer = pacers.get(id);
  if (!pacer) {
    // A warm instance meets many merchants: forgetting pacers forgets only shares held for a quarter second.
    if (pacers.size >= MAX_PACERS) pacers.clear();
    pacer = newPacer(
      config.applierWcuPerSecond(),
      tableShares((second) => keys.applierPace(merchantId, shard, second)),
    );
    pacers.set(id, pacer);
  }
  const latest = deadline() - 1_000;
  const at = await pacer.book(wcu, latest);
  if (at > latest) throw new Error('no room in the pace before the deadline');
  if (at > Date.now()) await new Promise((r) => setTimeout(r, at - Date.now()));
};

/**
 * What the event source mapping's filter lets through (infra/constructs/pending-moves-applier.ts),
 * tested again here and by the local poller: INSERTs of items whose `entity` is "pending-moves".
 * Their deletion (REMOVE), aggregate updates and every other write are not.
 */
export const isPendingMovesInsert = (record: DynamoDBRecord): boolean =>
  record.eventName === 'INSERT' && record.dynamodb?.NewImage?.entity?.S === PENDING_MOVES_ENTITY;

export type ApplierStats = {
  /** Records in the batch, and how many of them were pending-moves INSERTs. */
  records: number;
  pending: number;
  /** Items applied by this invocation, found already gone, and still failing. */
  applied: number;
  gone: number;
  failed: number;
};

const keyOf = (record: DynamoDBRecord): Key => {
  const pk = record.dynamodb?.Keys?.pk?.S;
  const sk = record.dynamodb?.Keys?.sk?.S;
  if (!pk || !sk) throw new Error('stream record without its pk and sk');
  return { pk, sk };
};

/**
 * Applies the pending-moves items the INSERTs among `records` put, and reports those that could
 * not be applied, as a Lambda handler for a DynamoDB stream with ReportBatchItemFailures answers.
 * The record handler applies one item; Powertools runs it on every record and answers the failed
 * ones (lib/shared/batch.ts), at most APPLY_CONCURRENCY applying at once. Runs within the
 * surrounding `withDeadline` (lib/db/retry.ts): a record whose turn comes after the deadline is
 * not tried, and reported.
 */
export const applyPendingRecords = /* @__PURE__ */ asFunction(
  'pendingMovesApplier' satisfies WorkerFunction, // a literal: a property read would keep the call in every bundle
  async (records: DynamoDBRecord[]): Promise<DynamoDBBatchResponse & { stats: ApplierStats }> => {
    const stats: ApplierStats = { records: records.length, pending: 0, applied: 0, gone: 0, failed: 0 };
    const limited = limiter(APPLY_CONCURRENCY);
    const apply = async (record: DynamoDBRecord) => {
      const key = keyOf(record);
      if (Date.now() >= deadline()) throw new Error('the invocation has no time left');
      // A re-sent transaction that had landed is harmless: the next attempt finds the item gone.
      const merchantId = merchantOfKey(key.pk);
      const pace = merchantId ? paceOf(merchantId) : undefined;
      if (await retrying(() => applyPending(key, pace), { resendUnanswered: true })) stats.applied++;
      else stats.gone++;
    };
    const { batchItemFailures } = await processStreamBatch(records, async (record) => {
      // Anything else (the mapping's filter lets none through) is done with at once.
      if (!isPendingMovesInsert(record)) return;
      stats.pending++;
      try {
        await limited(() => apply(record));
      } catch (err) {
        stats.failed++;
        logger.warn('pending moves not applied', {
          pk: record.dynamodb?.Keys?.pk?.S,
          sk: record.dynamodb?.Keys?.sk?.S,
          sequence_number: record.dynamodb?.SequenceNumber,
          error: (err as Error).name,
          error_message: (err as Error).message,
        });
        throw err;
      }
    });
    return { batchItemFailures, stats };
  },
);

/**
 * The applier as a Lambda handler (DynamoDB stream event → partial batch response): the deployed
 * function (functions/metrics/pending-applier.ts) and `npm start`'s poller (infra/local/outbox-poller.ts)
 * invoke it alike.
 */
export const handlePendingMoves = /* @__PURE__ */ asFunction(
  'pendingMovesApplier' satisfies WorkerFunction, // a literal: a property read would keep the call in every bundle
  async (event: DynamoDBStreamEvent, context: Context): Promise<DynamoDBBatchResponse> => {
    logger.addContext(context);
    const end = Date.now() + context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS;
    const { batchItemFailures, stats } = await withDeadline(end, () => applyPendingRecords(event.Records ?? []));
    logger.info('pending moves applier batch', { ...stats, failed_sequence_numbers: batchItemFailures.map((f) => f.itemIdentifier) });
    return { batchItemFailures };
  },
);
