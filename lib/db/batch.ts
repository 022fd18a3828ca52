import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { backoffMs, DEADLINE_MARGIN_MS, deadline, isUnanswered, retrying, retryKind, settledError, withReserve } from '#lib/db/retry';
import { ContentionError, DomainError, InvalidError, RecountingError, ThrottledError, UnconfirmedError } from '#lib/errors';
import { type Key, keys, METRIC_SHARDS } from '#lib/db/keys';
import { leaseShard, releaseShard } from '#lib/db/shards';
import { epochSeconds } from '#lib/db/ttl';
import {
  itemAbsent,
  MAX_ACTIONS,
  MAX_EXPRESSION_BYTES,
  MAX_TRANSACTION_BYTES,
  PendingBacklogFull,
  WriteConflict,
  WriteSet,
} from '#lib/db/writes';
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
 *   is (its token: applied once), and never redone unit by unit; still unconfirmed as the deadline
 *   nears, it is settled through its receipt (`settleChunk`) and its units answer what it decided;
 * - report: each unit reports itself once its writes are committed, so a later failure never
 *   loses what was already written.
 * Any movement a unit's writes need (figures, aggregates) joins through `write`, never here.
 */
/**
 * The reason and message a batch item answers for the error that failed it (`what`: the record a
 * lost race changed, as the message names it).
 */
export const batchFailure = (err: unknown, what: string): [reason: string, message: string] =>
  err instanceof ContentionError
    ? ['conflict', err instanceof RecountingError ? err.message : `The ${what} was changed concurrently; retry the item.`]
    : err instanceof UnconfirmedError
      ? ['unconfirmed', err.message]
      : err instanceof ThrottledError
        ? ['throttled', 'The service was busy; retry the item.']
        : err instanceof InvalidError
          ? ['validation_error', Object.values(err.fields)[0][0]]
          : ['error', 'The item could not be written; retry it.'];

export type BatchPlan<U> = {
  /** Adds the writes of `units` to `ws`; returns what to record once they are committed. */
  write: (ws: WriteSet, units: U[]) => Promise<() => void>;
  /** One unit on its own from fresh reads (one attempt: read, write, commit, report). */
  alone: (unit: U) => Promise<void>;
  /** A unit that could not be written (lost every race until the deadline, or failed). */
  failed: (unit: U, err: unknown) => void;
};

export type BatchOptions = {
  /** The merchant whose batch this is: it names each chunk's receipt. */
  merchantId: string;
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
/**
 * Time kept back from a chunk's resends for settling it: its last send may run 1 s past the time
 * it stops at (lib/db/retry.ts `attemptTimeoutMs`), and the settling put needs its own attempts
 * (on a loaded DynamoDB Local a put may wait behind the chunks still in flight).
 */
export const SETTLE_RESERVE_MS = 2500;
/** At most this share of the time a batch starts with is kept back (a short-lived invocation still sends its chunks). */
const SETTLE_RESERVE_SHARE = 0.25;
/** Of the deadline margin, what the answer keeps after the last settling attempt. */
const ANSWER_MS = 500;
/** Attempts of the settling put: outside the throttle bucket, since the units' truthful answer hangs on it. */
export const SETTLE_ATTEMPTS = 4;
/** Receipts outlive every resend of their transaction (DynamoDB keeps a token for 10 minutes). */
const RECEIPT_TTL_SECONDS = 24 * 3600;

/**
 * Decides a chunk sent without an answer. Its transaction puts its receipt (state `committed`) on
 * condition that none exists; this puts the receipt as `fenced` on the same condition. Whichever
 * comes first wins for good: the fence stored means the transaction never lands (a late resend
 * fails on its receipt); a `committed` receipt found means it landed. A `fenced` one found is this
 * settling's own earlier put whose answer was lost. `unknown` when no attempt got an answer.
 */
export const settleChunk = async (receipt: Key): Promise<'landed' | 'fenced' | 'unknown'> => {
  for (let n = 1; n <= SETTLE_ATTEMPTS; n++) {
    try {
      await db().send(
        new PutCommand({
          TableName: tableName(),
          Item: { ...receipt, state: 'fenced', expires_at: epochSeconds() + RECEIPT_TTL_SECONDS },
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return 'fenced';
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') {
        // The old item as DynamoDB sent it (lib-dynamodb leaves an error's item marshalled).
        const old = (err as { Item?: { state?: string | { S?: string } } }).Item?.state;
        return (typeof old === 'string' ? old : old?.S) === 'fenced' ? 'fenced' : 'landed';
      }
      logger.warn('batch chunk settling: no answer', { attempt: n, error: (err as Error).name, left_ms: deadline() - Date.now() });
      if (!retryKind(err) && !isUnanswered(err)) {
        logger.error('batch chunk settling failed', err as Error);
        return 'unknown';
      }
      const pause = backoffMs(n);
      // The answer must still leave before the runtime's end.
      if (n === SETTLE_ATTEMPTS || Date.now() + pause >= deadline() + DEADLINE_MARGIN_MS - ANSWER_MS) return 'unknown';
      await new Promise((r) => setTimeout(r, pause));
    }
  }
  return 'unknown';
};

/** Resends of a unit's transaction whose answer was lost, before its receipt settles it. */
const UNIT_RESENDS = 2;

/**
 * Commits the transaction of a unit redone alone (a plan's `alone`) as truthfully as a chunk: it
 * carries a receipt, a send without an answer goes again under its token (applied once), and one
 * still unanswered is settled through the receipt. Landed: returns, so the unit answers what it
 * did; fenced: ThrottledError (never stored); unknown: UnconfirmedError ("may have been stored").
 * Any answered error is thrown as it came, for the caller's retry of the whole unit from fresh reads.
 */
export const commitUnit = async (ws: WriteSet, merchantId: string): Promise<void> => {
  const receipt = keys.batchReceipt(merchantId, ws.requestToken);
  ws.put('batch-receipt', { ...receipt, state: 'committed', expires_at: epochSeconds() + RECEIPT_TTL_SECONDS }, itemAbsent);
  try {
    await ws.commit();
    return;
  } catch (err) {
    if (!isUnanswered(err)) throw err;
  }
  for (let n = 1; n <= UNIT_RESENDS && Date.now() + backoffMs(n) < deadline() - SETTLE_RESERVE_MS; n++) {
    await new Promise((r) => setTimeout(r, backoffMs(n)));
    try {
      await ws.commit();
      return;
    } catch (err) {
      // A refusal now may be our own receipt (the lost send landed): only the settling tells.
      if (!isUnanswered(err) && retryKind(err) !== 'throttle') break;
    }
  }
  const outcome = await settleChunk(receipt);
  if (outcome === 'landed') return;
  throw outcome === 'fenced' ? new ThrottledError() : new UnconfirmedError();
};

type Packed = { ws: WriteSet; end: number; onCommit: () => void };
type Flight = { ids: Set<string>; shard: number; done: Promise<void> };

export const runBatch = async <U>(units: U[], plan: BatchPlan<U>, opts: BatchOptions): Promise<void> => {
  const roomForFinish = opts.finish?.actions ?? 0;
  const reserveMs = Math.min(SETTLE_RESERVE_MS, Math.max(0, Math.floor((deadline() - Date.now()) * SETTLE_RESERVE_SHARE)));
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
      // The chunk's receipt, counted in its actions and bytes (settling decides an unanswered chunk by it).
      ws.put(
        'batch-receipt',
        { ...keys.batchReceipt(opts.merchantId, ws.requestToken), state: 'committed', expires_at: epochSeconds() + RECEIPT_TTL_SECONDS },
        itemAbsent,
      );
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
    let outcome: 'landed' | 'fenced' | 'unknown' | 'refused' = 'landed';
    let error: unknown;
    if (Date.now() >= deadline() - reserveMs) {
      // Too late to send it and still settle it: never sent (nothing stored); its units answer as a
      // unit the redo loop has no time left for does (conflict: retry the item).
      releaseShard(shard, false);
      if (carriesFinish) finished = false;
      for (const unit of chunk) plan.failed(unit, new ContentionError());
      return;
    }
    try {
      // The same transaction again while its answer is lost: its token makes DynamoDB apply it once.
      // It stops early enough to leave the settling its time.
      await withReserve(reserveMs, () =>
        retrying(
          () =>
            packed.ws.commit().catch((err: unknown) => {
              if (isUnanswered(err)) unanswered = true;
              // A refusal after a lost answer may be our own receipt: only settling tells, not more resends.
              if (unanswered && err instanceof WriteConflict) throw new Error(err.message);
              throw err;
            }),
          { resendUnanswered: true },
        ),
      );
    } catch (err) {
      error = err;
      // Sent, perhaps applied, never confirmed: the receipt decides, for good.
      outcome = unanswered ? await settleChunk(keys.batchReceipt(opts.merchantId, packed.ws.requestToken)) : 'refused';
    }
    releaseShard(shard, outcome === 'landed');
    if (outcome === 'landed') {
      if (error) logger.warn('batch chunk unconfirmed, settled: it landed', { units: chunk.length });
      packed.onCommit();
      return;
    }
    // The closing record it carried goes on its own (when unknown it may have landed: not written twice).
    if (carriesFinish && outcome !== 'unknown') finished = false;
    // Refused for a full pending-moves backlog: the applier is behind, so its units wait (throttled).
    if (error instanceof PendingBacklogFull) {
      for (const unit of chunk) plan.failed(unit, error);
      return;
    }
    if (outcome === 'fenced' || outcome === 'unknown') {
      // Fenced: never stored, its units answer busy (retry them); unknown: they answer that they may be stored.
      logger.warn('batch chunk unconfirmed, settled', {
        outcome,
        units: chunk.length,
        error: (error as Error).message,
        left_ms: deadline() - Date.now(),
      });
      for (const unit of chunk) plan.failed(unit, outcome === 'fenced' ? new ThrottledError() : new UnconfirmedError());
      return;
    }
    logger.debug('batch chunk lost a race; redoing its units one by one', { units: chunk.length, error: (error as Error).message });
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
