import { AsyncLocalStorage } from 'node:async_hooks';
import { now } from '#lib/clock';
import { ContentionError, ThrottledError } from '#lib/errors';

/**
 * The one retry layer. Domain operations run each attempt (read → plan → commit) through
 * `retrying`; a lost race or a throttled request sends the attempt round again after a
 * full-jitter pause. Retries are bounded three ways, so they calm a throttled table instead of
 * adding to its load: a number of attempts per operation (few for throttling), a budget of
 * retries per invocation, and, for throttling, a bucket shared by every invocation of the
 * function instance (empty under sustained throttling: requests then answer 503 at once). Past
 * any bound, or the invocation's deadline, the caller gets a ContentionError (409) or a
 * ThrottledError (503 + Retry-After); nothing partial is stored because each attempt commits in
 * one transaction or not at all. The SDK itself only re-sends a request whose connection failed
 * (lib/db/client.ts), and each of its attempts times out inside the invocation's remaining time.
 */

/** Time kept back from the Lambda timeout to answer (and log) before the runtime kills us. */
export const DEADLINE_MARGIN_MS = 1500;
/** Deadline outside an invocation (operator CLI, scripts): as if a function had just started. */
const DEFAULT_BUDGET_MS = 10_000 - DEADLINE_MARGIN_MS;

/** Attempts of one operation: a lost race is worth redoing from fresh reads; a throttle seldom. */
export const MAX_ATTEMPTS = { contention: 25, throttle: 3 } as const;
/** Retries one invocation may make in all (a batch redoing its units shares them). */
export const INVOCATION_RETRIES = 60;
/**
 * The instance's throttle bucket, shared by every invocation of the function instance: a throttle
 * retry takes RETRY_COST tokens, and the bucket refills with time (REFILL_PER_SECOND, up to its
 * capacity). A full bucket pays for four retries; under sustained throttling an instance then
 * retries once every five seconds, and every other request answers 503 after one attempt.
 */
export const THROTTLE_BUCKET = { capacity: 20, retryCost: 5, refillPerSecond: 1 } as const;
let bucket: number = THROTTLE_BUCKET.capacity;
let bucketAt = now().getTime();
const refillBucket = (): number => {
  const t = now().getTime();
  bucket = Math.min(THROTTLE_BUCKET.capacity, bucket + (Math.max(0, t - bucketAt) / 1000) * THROTTLE_BUCKET.refillPerSecond);
  bucketAt = t;
  return bucket;
};

type Invocation = { deadline: number; spent: { retries: number } };
const invocation = new AsyncLocalStorage<Invocation>();

/** Runs `fn` with a deadline (epoch ms); the pipeline passes the Lambda's remaining time. */
export const withDeadline = <T>(deadline: number, fn: () => Promise<T>): Promise<T> =>
  invocation.run({ deadline, spent: { retries: 0 } }, fn);

/**
 * Runs `fn` with a deadline `reserveMs` before the current one, on the invocation's same retry
 * budget: what must still be done after `fn` gives up (settling a batch chunk) keeps its time.
 */
export const withReserve = <T>(reserveMs: number, fn: () => Promise<T>): Promise<T> =>
  invocation.run({ deadline: deadline() - reserveMs, spent: invocation.getStore()?.spent ?? { retries: 0 } }, fn);

export const deadline = (): number => invocation.getStore()?.deadline ?? Date.now() + DEFAULT_BUDGET_MS;

/** The bucket's tokens now (for tests and metrics), and a refill to full (tests). */
export const throttleBucket = {
  tokens: (): number => refillBucket(),
  refill: (): void => {
    bucket = THROTTLE_BUCKET.capacity;
    bucketAt = now().getTime();
  },
};

/** Whether another attempt may be made after attempt `n` failed with `kind`; takes what it costs. */
const mayRetry = (kind: 'contention' | 'throttle', n: number, pause: number, end: number): boolean => {
  if (n >= MAX_ATTEMPTS[kind] || Date.now() + pause >= end) return false;
  const inv = invocation.getStore();
  if (inv && inv.spent.retries >= INVOCATION_RETRIES) return false;
  if (kind === 'throttle') {
    if (refillBucket() < THROTTLE_BUCKET.retryCost) return false;
    bucket -= THROTTLE_BUCKET.retryCost;
  }
  if (inv) inv.spent.retries++;
  return true;
};

/** A failure worth another attempt: contention (lost a race, stale read) or throttling. */
export class RetryableError extends Error {
  constructor(
    public readonly kind: 'contention' | 'throttle',
    message: string,
    /** The domain error to answer with when no retry is left (default: ContentionError or ThrottledError). */
    public readonly exhausted?: () => Error,
  ) {
    super(message);
  }
}

const THROTTLE_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'ServiceUnavailableException',
]);
const CONTENTION_NAMES = new Set(['TransactionConflictException']);

/** How an error may be retried, or null when it is final. */
export const retryKind = (err: unknown): 'contention' | 'throttle' | null => {
  if (err instanceof RetryableError) return err.kind;
  const name = (err as { name?: string } | null)?.name;
  if (!name) return null;
  if (THROTTLE_NAMES.has(name)) return 'throttle';
  if (CONTENTION_NAMES.has(name)) return 'contention';
  return null;
};

/**
 * The SDK gave up on a request it got no answer to (its own re-sends, lib/db/client.ts, exhausted):
 * a write may or may not have landed. Not retried here — a fresh attempt would find its own write
 * and answer as if someone else had made it — but answered 503, so the client retries (an order
 * create with its idempotency key then gets the original answer).
 */
// TransactionInProgressException: the same transaction (its token) is still being applied: it may land.
const UNANSWERED_NAMES = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'NetworkingError',
  'TransactionInProgressException',
]);
const UNANSWERED_CODES = new Set(['ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ECONNREFUSED', 'EAI_AGAIN']);
export const isUnanswered = (err: unknown): boolean => {
  const e = err as { name?: string; code?: string } | null;
  return !!e && (UNANSWERED_NAMES.has(e.name ?? '') || UNANSWERED_CODES.has(e.code ?? ''));
};

/**
 * A DynamoDB error that ended the retrying (throttled, contention, no answer) as the domain error
 * callers answer with: busy (503, or a batch item `throttled`) or contention (409, `conflict`).
 * Anything else is returned as it is.
 */
export const settledError = (err: unknown): unknown => {
  if (isUnanswered(err)) return new ThrottledError();
  const kind = retryKind(err);
  if (kind === 'throttle') return new ThrottledError();
  if (kind === 'contention') return new ContentionError();
  return err;
};

const BASE_MS = 15;
const CAP_MS = 400;
/** Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"); other callers pass their own base and cap. */
export const backoffMs = (attempt: number, baseMs = BASE_MS, capMs = CAP_MS): number =>
  Math.random() * Math.min(capMs, baseMs * 2 ** attempt);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const retryStats = { retries: 0, byKind: { contention: 0, throttle: 0 } as Record<'contention' | 'throttle', number> };

export type RetryingOptions = {
  /**
   * The attempt's write is conditional on the state it was planned from and carries a token the
   * attempt checks on a conflict, so a re-sent write that already landed is recognised, not
   * applied twice: a request left without an answer may then be sent again (on the throttling
   * bounds: an unanswered request is most often an overloaded one).
   */
  resendUnanswered?: boolean;
};

/**
 * Runs `attempt` until it succeeds, fails finally, or a bound (attempts, the invocation's retries,
 * the throttle bucket, the deadline) leaves no room for another; `attempt` gets its 1-based number.
 */
export const retrying = async <T>(attempt: (n: number) => Promise<T>, opts: RetryingOptions = {}): Promise<T> => {
  const end = deadline();
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      // A write that may have landed goes again only when the caller recognises its own landed write.
      const kind = retryKind(err) ?? (opts.resendUnanswered && isUnanswered(err) ? 'throttle' : null);
      if (!kind) throw err;
      const pause = backoffMs(n);
      if (!mayRetry(kind, n, pause, end))
        throw err instanceof RetryableError && err.exhausted
          ? err.exhausted()
          : kind === 'throttle'
            ? new ThrottledError(1)
            : new ContentionError();
      retryStats.retries++;
      retryStats.byKind[kind]++;
      await sleep(pause);
    }
  }
};

/** One pause of the policy, for loops that must wait without failing (unprocessed batch keys). */
export const pauseOrGiveUp = async (n: number, kind: 'contention' | 'throttle'): Promise<void> => {
  const pause = backoffMs(n);
  if (!mayRetry(kind, n, pause, deadline())) throw kind === 'throttle' ? new ThrottledError(1) : new ContentionError();
  await sleep(pause);
};

/**
 * The timeout of one DynamoDB request: DYNAMODB_ATTEMPT_TIMEOUT_MS (default 3 s on AWS, where a
 * request takes milliseconds; 15 s against DynamoDB Local, which a loaded machine slows), never
 * past the invocation's end (its deadline plus the margin, less half a second to answer). A request that times out had no answer: 503 (lib/db/retry.ts
 * `isUnanswered`), and its outcome is left to the client's retry with the same idempotency key.
 */
export const attemptTimeoutMs = (): number => {
  const configured = Number(process.env.DYNAMODB_ATTEMPT_TIMEOUT_MS) || (process.env.DYNAMODB_ENDPOINT ? 15_000 : 3_000);
  // The last attempt may run into the margin kept for the answer, leaving ANSWER_MS of it.
  return Math.max(100, Math.min(configured, deadline() + DEADLINE_MARGIN_MS - ANSWER_MS - Date.now()));
};
/** Of the deadline margin, what the answer and its log line keep when a last request runs late. */
const ANSWER_MS = 500;

/**
 * Batch APIs that accept part of a call (PutEvents, SQS SendMessageBatch) answer which entries
 * failed: `send` sends `pending` and returns its failures (`{ item }` plus whatever the caller
 * reports); the failed items alone go again after the policy's jittered pause, until none fail,
 * `maxAttempts` calls were made, or the next pause would pass the deadline. Returns what still
 * fails and the number of calls made.
 */
export const resendingFailures = async <T, F extends { item: T }>(
  items: T[],
  send: (pending: T[]) => Promise<F[]>,
  opts: {
    maxAttempts: number;
    deadline?: number;
    baseMs?: number;
    capMs?: number;
    sleep?: (ms: number) => Promise<void>;
    onRetry?: (failures: F[]) => void;
  },
): Promise<{ failures: F[]; calls: number }> => {
  let pending = items;
  for (let calls = 1; ; calls++) {
    const failures = await send(pending);
    if (!failures.length) return { failures, calls };
    const pause = backoffMs(calls, opts.baseMs, opts.capMs);
    if (calls >= opts.maxAttempts || Date.now() + pause >= (opts.deadline ?? deadline())) return { failures, calls };
    opts.onRetry?.(failures);
    await (opts.sleep ?? sleep)(pause);
    pending = failures.map((f) => f.item);
  }
};
