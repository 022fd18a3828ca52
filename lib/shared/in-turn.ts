/**
 * Runs `run` on `items`, at most `workers` at once, each worker taking the next item when it is
 * done with one. `run` answering false stops the taking (what is under way finishes). True: every
 * item was run.
 */
export const inTurn = async <T>(items: readonly T[], workers: number, run: (item: T) => Promise<unknown>): Promise<boolean> => {
  let next = 0;
  let stopped = false;
  await Promise.all(
    Array.from({ length: Math.min(workers, items.length) }, async () => {
      while (!stopped && next < items.length) if ((await run(items[next++])) === false) stopped = true;
    }),
  );
  return !stopped;
};
