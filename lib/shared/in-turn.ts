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

/**
 * A limit of `workers` tasks at once: the returned function runs its task when fewer than
 * `workers` are under way, else when its turn comes (tasks start in the order they were handed
 * in). For handlers that are all started at once (lib/shared/batch.ts) and must not all work at once.
 */
export const limiter = (workers: number) => {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <R>(task: () => Promise<R>): Promise<R> => {
    if (active < workers) active++;
    // A finishing task hands its place to the next in line: `active` stays as it is.
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
};

/**
 * Tasks of one key one after another, in the order they were handed in (a task failing does not
 * stop the next), tasks of different keys at once.
 */
export const inOrderPerKey = () => {
  const last = new Map<string, Promise<unknown>>();
  return <R>(key: string, task: () => Promise<R>): Promise<R> => {
    const run = (last.get(key) ?? Promise.resolve()).then(task);
    last.set(
      key,
      run.catch(() => undefined),
    );
    return run;
  };
};
