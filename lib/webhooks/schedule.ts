/**
 * Timeout of the functions that deliver (queue consumer, test and manual retry): an attempt plus its
 * record. Here, not in deliver.ts, so the route table does not pull the signing code into every bundle.
 */
export const DELIVERY_FUNCTION_TIMEOUT_SECONDS = 30;

/**
 * When a failed webhook delivery is tried again (docs/webhooks.md, Retries): about 10 s after the first attempt,
 * then roughly 1 min, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h — 9 attempts over at least 24 hours —
 * then the task is parked in the dead-letter queue.
 *
 * Each pause is its nominal value ± 10 % (uniform jitter, so endpoints that failed together do not
 * come back together); even with every pause at its shortest the attempts span 24.8 hours.
 */
export const RETRY_DELAYS_SECONDS = [10, 60, 300, 1_800, 7_200, 18_000, 36_000, 36_000] as const;
export const RETRY_JITTER = 0.1;
/** The first attempt plus one per pause. */
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** An endpoint whose every attempt has failed for this long is disabled (docs/webhook-endpoints.md). */
export const AUTO_DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;

/**
 * The pauses in force: the schedule above, or `WEBHOOK_RETRY_DELAYS_SECONDS` (comma-separated
 * seconds, fractions allowed) in the local stack and tests, to watch retries without waiting hours.
 */
export const retryDelays = (): readonly number[] => {
  const raw = process.env.WEBHOOK_RETRY_DELAYS_SECONDS;
  if (!raw) return RETRY_DELAYS_SECONDS;
  const delays = raw.split(',').map((s) => Number(s.trim()));
  if (!delays.length || delays.some((d) => !Number.isFinite(d) || d < 0)) {
    throw new Error('WEBHOOK_RETRY_DELAYS_SECONDS must be comma-separated non-negative numbers of seconds');
  }
  return delays;
};

/**
 * The pause (seconds) before the next attempt, after `attemptsMade` attempts have failed; `null`
 * when none is left (the task goes to the dead-letter queue).
 */
export const nextRetryDelaySeconds = (attemptsMade: number, random: () => number = Math.random): number | null => {
  const delays = retryDelays();
  if (attemptsMade < 1 || attemptsMade > delays.length) return null;
  const nominal = delays[attemptsMade - 1];
  return nominal * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random());
};
