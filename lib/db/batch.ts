import { deadline, isUnanswered, retrying, settledError } from '#lib/db/retry';
import { ContentionError, DomainError, ThrottledError } from '#lib/errors';
import { METRIC_SHARDS } from '#lib/db/keys';
import { leaseShard, releaseShard } from '#lib/db/shards';
import { MAX_ACTIONS, MAX_EXPRESSION_BYTES, MAX_TRANSACTION_BYTES, WriteSet } from '#lib/db/writes';
import { logger } from '#lib/logger';

/**
 * The one batch engine (customers and orders imports): plan → pack → commit → report.
 * - plan: the caller turns items into units (one per customer or order_no), in array order;
 * - pack: consecutive units go into one transaction while it stays within DynamoDB's limits (100
 *   actions, 4 MB) — the WriteSet itself merges shared items (stats, totals, a customer's figures),
 *   so packing measures the real transaction instead of estimating it;
 * - commit: one TransactWriteItems per chunk, up to IN_FLIGHT at once when they name no common
 *   item (a chunk naming an item of one in flight waits for it, then is packed again from the state
 *   it left); a chunk that loses a race is redone unit by unit from fresh reads under the retry
 *   policy (bounded by the invocation's deadline); a chunk whose answer is lost is sent again as it
 *   is (its token: applied once), and never redone unit by unit: unconfirmed, its units answer busy;
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
  /**
   * Adds a closing record (the activity-log entry) to the last transaction when room is left, with
   * the number of units that transaction carries; else to a transaction of its own afterwards (0).
   */
  finish?: { actions: number; add: (ws: WriteSet, pendingUnits: number) => void | Promise<void> };
};
/**
 * Transactions of one batch in flight at once. Each waits mostly on DynamoDB (a 99-action
 * transaction takes a few hundred ms on DynamoDB Local), so independent chunks overlap.
 */
export const IN_FLIGHT = 4;
/**
 * Bytes a packed transaction may reach (its `WriteSet.bytes`), below DynamoDB's 4 MB: the rest is
 * room for the closing record and for the attribute type tags the request adds. Actions are
 * counted exactly, list entries and every other companion item a unit writes included.
 */
export const PACKED_BYTES = MAX_TRANSACTION_BYTES - 512 * 1024;

type Packed = { ws: WriteSet; end: number; onCommit: () => void };
type Flight = { ids: Set<string>; shard: number; done: Promise<void> };

export const runBatch = async <U>(units: U[], plan: BatchPlan<U>, opts: BatchOptions = {}): Promise<void> => {
  const roomForFinish = opts.finish?.actions ?? 0;
  const limit = MAX_ACTIONS - roomForFinish;
  let finished = false;
  const flights = new Set<Flight>();
  // Units per chunk so far: the first guess for the next chunk (imports are regular).
  let guess = 1;

  /**
   * The longest run of units from `start` whose transaction fits: gallops up from the last chunk's
   * size, then bisects (a unit never removes an action or a byte, so "fits" only turns false once).
   */
  const pack = async (start: number, shard: number): Promise<Packed> => {
    const build = async (end: number): Promise<Packed & { over: boolean }> => {
      // Aggregate moves go as pending-moves items, applied from the table stream (docs/metrics.md).
      const ws = new WriteSet(shard, { deferMoves: true });
      const onCommit = await plan.write(ws, units.slice(start, end));
      // A condition every unit adds to one item (the customer's, the subscription's) grows with the chunk.
      const over = ws.actions > limit || ws.bytes > PACKED_BYTES || ws.longestExpression > MAX_EXPRESSION_BYTES;
      return { ws, end, onCommit, over };
    };
    const first = await build(Math.min(units.length, start + guess));
    let fits: Packed | undefined = first.over ? undefined : first;
    let over = fits ? units.length + 1 : first.end;
    let lo = fits ? first.end : start + 1;
    // The guess fits and one more unit of its average size would not: take it without a trial build
    // (every build recomputes the units' figures, so this halves the work of a steady import).
    if (fits && first.end < units.length) {
      const n = first.end - start;
      if (first.ws.actions + first.ws.actions / n > limit || first.ws.bytes + first.ws.bytes / n > PACKED_BYTES) over = first.end + 1;
    }
    if (!fits) {
      const one = first.end === start + 1 ? first : await build(start + 1);
      fits = one; // a unit alone always goes (an oversized one fails at commit and is redone alone)
      lo = one.end;
      if (one.over) over = one.end;
    }
    for (let step = 1; over === units.length + 1 && lo < units.length; step *= 2) {
      const trial = await build(Math.min(units.length, lo + step));
      if (trial.over) over = trial.end;
      else ({ end: lo } = fits = trial);
    }
    while (over - lo > 1 && lo < units.length) {
      const trial = await build(Math.floor((lo + over) / 2));
      if (trial.over) over = trial.end;
      else ({ end: lo } = fits = trial);
    }
    guess = Math.max(1, fits.end - start);
    return fits;
  };

  const commitChunk = async (chunk: U[], packed: Packed, shard: number, carriesFinish: boolean): Promise<void> => {
    // Set once a send of this transaction got no answer: it may have landed, so its units are never written again.
    let unanswered = false;
    try {
      // The same transaction again while its answer is lost: its token makes DynamoDB apply it once.
      await retrying(
        () =>
          packed.ws.commit().catch((err: unknown) => {
            if (isUnanswered(err)) unanswered = true;
            throw err;
          }),
        { resendUnanswered: true },
      );
      releaseShard(shard, true);
      packed.onCommit();
    } catch (err) {
      releaseShard(shard, false);
      if (carriesFinish) finished = false;
      if (unanswered) {
        // Sent, perhaps applied, never confirmed before the deadline: each unit answers busy (the
        // client's retry of an upsert finds what landed), none is written a second time here.
        logger.warn('batch chunk unconfirmed: its units answer busy', { units: chunk.length, error: (err as Error).message });
        for (const unit of chunk) plan.failed(unit, new ThrottledError());
        return;
      }
      logger.debug('batch chunk lost a race; redoing its units one by one', { units: chunk.length, error: (err as Error).message });
      for (const unit of chunk) {
        try {
          // Past the deadline no unit gets even a first attempt: the answer must leave in time.
          if (Date.now() >= deadline()) throw new ContentionError();
          await retrying(() => plan.alone(unit));
        } catch (unitErr) {
          // A throttle, lost race or unanswered call reaches the plan as busy / contention, as a single request would answer it.
          const settled = settledError(unitErr);
          if (!(settled instanceof DomainError)) logger.error('batch unit failed', unitErr as Error);
          plan.failed(unit, settled);
        }
      }
    }
  };

  /** Packs chunk after chunk and sends each off, up to IN_FLIGHT at once. */
  const packAndCommit = async (): Promise<void> => {
    for (let start = 0; start < units.length; ) {
      while (flights.size >= IN_FLIGHT) await Promise.race([...flights].map((f) => f.done));
      let shard: number;
      let packed: Packed;
      for (;;) {
        // Concurrent chunks must not share an MRR aggregate item (its shard is the counter shard mod 8).
        const busy = new Set([...flights].map((f) => f.shard % METRIC_SHARDS));
        shard = leaseShard((s) => busy.has(s % METRIC_SHARDS));
        packed = await pack(start, shard);
        const last = packed.end === units.length;
        const ids = packed.ws.itemIds();
        // A chunk naming an item in flight waits for it (its state moves with that commit); the last
        // chunk waits for every other, so that the closing record it carries counts every unit.
        const blocking = [...flights].filter((f) => (last && opts.finish) || [...ids].some((id) => f.ids.has(id)));
        if (!blocking.length) break;
        releaseShard(shard, false);
        await Promise.all(blocking.map((f) => f.done));
      }
      const chunk = units.slice(start, packed.end);
      const last = packed.end === units.length;
      let carriesFinish = false;
      if (last && opts.finish && packed.ws.actions + roomForFinish <= MAX_ACTIONS) {
        await opts.finish.add(packed.ws, chunk.length);
        finished = carriesFinish = true;
      }
      const flight: Flight = { ids: packed.ws.itemIds(), shard, done: Promise.resolve() };
      flight.done = commitChunk(chunk, packed, shard, carriesFinish).finally(() => flights.delete(flight));
      flights.add(flight);
      start = packed.end;
    }
  };

  try {
    await packAndCommit();
  } finally {
    // Nothing of the batch is still under way when it answers, even when packing threw.
    await Promise.all([...flights].map((f) => f.done));
  }
  if (!finished && opts.finish) {
    // The closing record never costs the caller its report of what was committed.
    await retrying(async () => {
      const ws = new WriteSet();
      await opts.finish!.add(ws, 0);
      await ws.commit();
    }).catch((err: Error) => logger.warn('batch closing record not written', { error: err.message }));
  }
};
