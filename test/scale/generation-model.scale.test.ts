import { describe, expect, it } from 'vitest';
import { addToSlices, newSlices, type Point, type Timeline } from '#lib/metrics/timeline';

/**
 * The model behind "a new generation of aggregates" (docs/decisions.md, "Open items"): after a zone
 * or rate change, every aggregate of a merchant computed afresh from its customers' timelines and
 * written under new keys. What it would write must be bounded by the history, not by the customers:
 * here 1,000 and 20,000 customers with 7 changes each over 3 years, in Asia/Taipei, the whole and
 * every plan and billing-cycle segment. Printed: the compute time on this machine and the items.
 */
const PLANS = ['Basic', 'Pro', 'Team', 'Enterprise', 'Starter'];
const FROM = Date.parse('2023-01-01T00:00:00Z');
const SPAN_MS = 3 * 365 * 86_400_000;

/** `n` customers' timelines: one subscription line each, 7 changes (the last a cancellation for some). */
const customers = (n: number): Timeline[] => {
  let seed = 42;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  return Array.from({ length: n }, () => {
    const times = Array.from({ length: 7 }, () => FROM + Math.floor(random() * SPAN_MS)).sort((a, b) => a - b);
    const plan = PLANS[Math.floor(random() * PLANS.length)];
    const cycle = random() < 0.7 ? 'monthly' : 'yearly';
    const points: Point[] = times.map((t, i) => {
      const cancelled = i === times.length - 1 && random() < 0.3;
      return [
        new Date(t).toISOString().replace('.000Z', 'Z'),
        cancelled ? '0' : String(100 + Math.floor(random() * 900)),
        cancelled ? 'c' : 'a',
        [plan, cycle, 'TWD'],
      ];
    });
    return { S1: points };
  });
};

/** Every aggregate item of the whole and of each segment, as a build would compute it. */
const build = (timelines: Timeline[], zone: string) => {
  const slices = newSlices();
  const started = performance.now();
  for (const tl of timelines) addToSlices(slices, tl, 'TWD', zone);
  const ms = performance.now() - started;
  const sizes = [...slices.values()].map((s) => s.target.size);
  return {
    ms,
    items: sizes.reduce((n, s) => n + s, 0),
    whole: slices.get('')!.target.size,
    largest: Math.max(...sizes),
    slices: slices.size,
  };
};

describe('a new generation of aggregates, modelled', () => {
  it('what a build writes is bounded by the history, not by the customers', () => {
    const small = build(customers(1_000), 'Asia/Taipei');
    const large = build(customers(20_000), 'Asia/Taipei');
    console.info(
      `generation build: 1,000 customers ${small.items} items (whole ${small.whole}) in ${small.ms.toFixed(0)} ms; ` +
        `20,000 customers ${large.items} items (whole ${large.whole}, largest slice ${large.largest}, ${large.slices} slices) in ${large.ms.toFixed(0)} ms`,
    );
    expect(large.slices).toBe(small.slices);
    // 20 times the customers, at most 15 % more items: days and months of 3 years, per slice.
    expect(large.items).toBeLessThanOrEqual(small.items * 1.15);
    // The busiest key (the whole's movements) takes about one write unit per item: under 2.5 s at its 1,000 WCU/s ceiling.
    expect(large.whole).toBeLessThan(2_500);
  }, 120_000);
});
