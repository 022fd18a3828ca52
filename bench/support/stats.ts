/**
 * Figures of a sample, and the side-by-side measurement every ratio of the bench uses: on a shared
 * machine absolute times are noise, so two sides are measured alternately in one run and compared.
 */

/** The q-quantile (0..1) of `values`, nearest rank. */
export const quantile = (values: number[], q: number): number => {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
};

export const median = (values: number[]): number => quantile(values, 0.5);

export type Latency = { n: number; median: number; p95: number };

export const latency = (ms: number[]): Latency => ({ n: ms.length, median: round(median(ms), 3), p95: round(quantile(ms, 0.95), 3) });

export const round = (x: number, digits = 2): number => (Number.isFinite(x) ? Number(x.toFixed(digits)) : x);

/** a ÷ b, 2 decimals (NaN when b is 0). */
export const ratio = (a: number, b: number): number => (b === 0 ? NaN : round(a / b, 2));

/** Milliseconds `fn` takes. */
export const timed = async (fn: () => Promise<unknown>): Promise<number> => {
  const start = performance.now();
  await fn();
  return performance.now() - start;
};

/**
 * Runs `sides` in turn, `rounds` times (the order rotates each round, so neither side always goes
 * first), after `warmup` untimed rounds; returns each side's times in ms.
 */
export const alternate = async <K extends string>(
  sides: Record<K, (i: number) => Promise<unknown>>,
  rounds: number,
  warmup = Math.min(20, Math.ceil(rounds / 10)),
): Promise<Record<K, number[]>> => {
  const names = Object.keys(sides) as K[];
  const times = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<K, number[]>;
  for (let r = 0; r < warmup + rounds; r++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(r + j) % names.length];
      const ms = await timed(() => sides[name](r));
      if (r >= warmup) times[name].push(ms);
    }
  }
  return times;
};
