import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contributions, setAt, type Flag, type Timeline } from '#lib/metrics/timeline';

/** Recorded history is a set of points: the timeline must not depend on the order they arrive in. */
describe('recorded history merges in any arrival order', () => {
  const at = (day: number) => `2025-01-${String(day).padStart(2, '0')}T00:00:00Z`;
  const apply = (events: [day: number, amount: number, flag: Flag][]) =>
    events.reduce<Timeline>((tl, [day, amount, flag]) => setAt(tl, 'I', at(day), amount, flag), {});

  // The case the concurrent-writers test found: a cancellation that repeats an earlier one must be
  // kept, because a later-arriving point may land between the two.
  it('keeps a point that repeats the one before it', () => {
    const inOrder = apply([[4, 0, 'c'], [5, 50, 'a'], [8, 0, 'c']]);
    const shuffled = apply([[4, 0, 'c'], [8, 0, 'c'], [5, 50, 'a']]);
    expect(shuffled).toEqual(inOrder);
    expect(inOrder.I.at(-1)).toEqual([at(8), '0', 'c']);
  });

  it('any permutation of distinct-time events gives the same timeline and contributions', () => {
    const event = fc.tuple(fc.integer({ min: 1, max: 28 }), fc.constantFrom(0, 10, 20), fc.constantFrom<Flag>('a', 'c', 'p'));
    fc.assert(
      fc.property(fc.uniqueArray(event, { selector: (e) => e[0], minLength: 1, maxLength: 8 }), fc.infiniteStream(fc.nat()), (events, seeds) => {
        const shuffled = [...events];
        for (let i = shuffled.length - 1; i > 0; i--) {
          const j = seeds.next().value % (i + 1);
          [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
        }
        const a = apply(events);
        const b = apply(shuffled);
        expect(b).toEqual(a);
        expect(contributions(b)).toEqual(contributions(a));
      }),
      { numRuns: 300 },
    );
  });
});
