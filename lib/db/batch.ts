import { deadline, retrying } from '#lib/db/retry';
import { ContentionError, DomainError } from '#lib/errors';
import { leaseShard, releaseShard } from '#lib/db/shards';
import { MAX_ACTIONS, WriteSet } from '#lib/db/writes';
import { logger } from '#lib/logger';

/**
 * The one batch engine (customers and orders imports): plan → pack → commit → report.
 * - plan: the caller turns items into units (one per customer or order_no), in array order;
 * - pack: consecutive units go into one transaction while it stays within DynamoDB's limits —
 *   the WriteSet itself merges shared items (stats, totals, a customer's figures), so packing
 *   measures the real transaction instead of estimating it;
 * - commit: one TransactWriteItems per chunk; a chunk that loses a race is redone unit by unit
 *   from fresh reads under the retry policy (bounded by the invocation's deadline);
 * - report: each unit reports itself once its writes are committed, so a later failure never
 *   loses what was already written.
 * Any movement a unit's writes need (figures, aggregates) joins through `write`, never here.
 */
export type BatchPlan<U> = {
  /** Adds the writes of `units` to `ws`; returns what to record once they are committed. */
  write: (ws: WriteSet, units: U[]) => Promise<() => void>;
  /** One unit on its own from fresh reads (one attempt: read, write, commit, report). */
  alone: (unit: U) => Promise<void>;
  /** A unit that could not be written (lost every race until the deadline, or failed). */
  failed: (unit: U, err: unknown) => void;
};

export type BatchOptions = {
  /** Adds a closing record (activity log) to the last transaction when room is left; called once. */
  finish?: (ws: WriteSet, pendingUnits: number) => void;
};

const ROOM_FOR_FINISH = 1;

export const runBatch = async <U>(units: U[], plan: BatchPlan<U>, opts: BatchOptions = {}): Promise<void> => {
  const limit = MAX_ACTIONS - (opts.finish ? ROOM_FOR_FINISH : 0);
  let finished = false;
  let start = 0;
  while (start < units.length) {
    // Pack: grow the chunk while its transaction fits.
    let end = start + 1;
    const shard = leaseShard();
    let ws = new WriteSet(shard);
    let onCommit = await plan.write(ws, units.slice(start, end));
    while (end < units.length) {
      const trial = new WriteSet(shard);
      const trialCommit = await plan.write(trial, units.slice(start, end + 1));
      if (trial.actions > limit) break;
      ws = trial;
      onCommit = trialCommit;
      end++;
    }
    const chunk = units.slice(start, end);
    const last = end === units.length;
    if (last && opts.finish && ws.actions + ROOM_FOR_FINISH <= MAX_ACTIONS) {
      opts.finish(ws, chunk.length);
      finished = true;
    }
    try {
      await ws.commit();
      releaseShard(shard, true);
      onCommit();
    } catch (err) {
      releaseShard(shard, false);
      finished = false;
      logger.debug('batch chunk lost a race; redoing its units one by one', { units: chunk.length, error: (err as Error).message });
      for (const unit of chunk) {
        try {
          // Past the deadline no unit gets even a first attempt: the answer must leave in time.
          if (Date.now() >= deadline()) throw new ContentionError();
          await retrying(() => plan.alone(unit));
        } catch (unitErr) {
          if (!(unitErr instanceof DomainError)) logger.error('batch unit failed', unitErr as Error);
          plan.failed(unit, unitErr);
        }
      }
    }
    start = end;
  }
  if (!finished && opts.finish) {
    // The closing record never costs the caller its report of what was committed.
    await retrying(async () => {
      const ws = new WriteSet();
      opts.finish!(ws, 0);
      await ws.commit();
    }).catch((err: Error) => logger.warn('batch closing record not written', { error: err.message }));
  }
};
