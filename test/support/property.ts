import fc from 'fast-check';

/**
 * Runs a fast-check property `runs` times within `budgetMs`. Not reaching `runs` in time is a
 * failure, never a silently shorter search. `PROP_SEED` replays a failure's seed (its message gives it).
 */
export const assertWithinBudget = async <T>(
  property: fc.IAsyncPropertyWithHooks<T>,
  runs: number,
  budgetMs: number,
  seed?: number,
): Promise<void> => {
  seed ??= process.env.PROP_SEED ? Number(process.env.PROP_SEED) : undefined;
  try {
    await fc.assert(property, {
      numRuns: runs,
      ...(seed === undefined ? {} : { seed }),
      plugins: [fc.interruptAfterTimeLimit(budgetMs, { failOnInterrupt: true })],
    } as never);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('Property interrupted')) {
      throw new Error(
        `Time budget of ${budgetMs} ms exceeded before ${runs} runs (lower PROP_RUNS or raise PROP_BUDGET_MS): ${err.message}`,
        { cause: err },
      );
    }
    throw err;
  }
};
