/**
 * The one way a test waits for something that happens on its own schedule: poll `check` until it
 * returns a value (not undefined, null or false), or fail after `timeoutMs` naming what never came.
 * A fixed sleep in its place fails on a slow machine and hides a slow fast one.
 *
 * The pause starts at `everyMs` and grows by half each time up to `maxEveryMs`: a check that reads
 * the table, polled every 50 ms for as long as the wait lasts, kept DynamoDB Local (which every test
 * file shares) so busy that the other files' requests queued behind it and timed out.
 */
export const eventually = async <T>(
  check: () => T | Promise<T>,
  timeoutMs = 15_000,
  what: string | (() => string) = 'condition',
  everyMs = 50,
  maxEveryMs = Math.max(everyMs, 500),
): Promise<NonNullable<T>> => {
  const until = Date.now() + timeoutMs;
  for (let pause = everyMs; ; pause = Math.min(maxEveryMs, pause * 1.5)) {
    const v = await check();
    if (v !== undefined && v !== false && v !== null) return v as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((r) => setTimeout(r, pause));
  }
};
