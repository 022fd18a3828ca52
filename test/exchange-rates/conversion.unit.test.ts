import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  contributionChange,
  contributions,
  difference,
  foreignCurrencies,
  movementsOf,
  setFrom,
  type RateBook,
  type Timeline,
  withConversions,
} from '#lib/metrics/timeline';

const CCY = 'TWD';
const usd = (plan: string) => [plan, 'monthly', 'USD'] as [string, string, string];
const book = (rates: Record<string, string>): RateBook => new Map([['USD', new Map(Object.entries(rates))]]);
/** A USD subscription of 100 from 15 January, 200 from 5 March; a TWD one of 50 from 1 February. */
const mixed = (): Timeline => {
  let tl = setFrom({}, 'S1', '2026-01-15T00:00:00Z', 100, 'a', usd('Pro'));
  tl = setFrom(tl, 'S1', '2026-03-05T00:00:00Z', 200, 'a', usd('Pro'));
  return setFrom(tl, 'S2', '2026-02-01T00:00:00Z', 50, 'a', ['Basic', 'monthly', CCY]);
};
const attr = (c: ReturnType<typeof contributions>, item: string, a: string) => c.get(item)?.get(a)?.toFixed() ?? '0';

describe('conversion of points in other currencies', () => {
  it("each point takes its own month's rate, in the reporting time zone, to 10 places half up", () => {
    const tl = withConversions(mixed(), CCY, book({ '2026-01': '31.5', '2026-03': '0.33333333333' }));
    expect(tl.S1.map((p) => p[4])).toEqual(['3150', '66.666666666']);
    expect(tl.S2[0][4]).toBeUndefined();
    // 1 March 00:30 in Taipei is 28 February 16:30 UTC: February's month there, no rate.
    const late = setFrom({}, 'S1', '2026-02-28T16:30:00Z', 10, 'a', usd('Pro'));
    expect(withConversions(late, CCY, book({ '2026-03': '2' }), 'Asia/Taipei').S1[0][4]).toBe('20');
    expect(withConversions(late, CCY, book({ '2026-03': '2' }), 'UTC').S1[0][4]).toBeUndefined();
  });

  it('keeps the lines whose conversions do not change as the same arrays', () => {
    const rates = book({ '2026-01': '31.5' });
    const once = withConversions(mixed(), CCY, rates);
    expect(withConversions(once, CCY, rates)).toBe(once);
    const again = withConversions(once, CCY, book({ '2026-01': '32' }));
    expect(again.S2).toBe(once.S2);
    expect(again.S1).not.toBe(once.S1);
    expect(foreignCurrencies(once, CCY)).toEqual(new Set(['USD']));
  });

  it('the whole counts converted points and one total per customer; a month without a rate is left out and reported', () => {
    const tl = withConversions(mixed(), CCY, book({ '2026-01': '30' }));
    const c = contributions(tl, CCY);
    // January: new 3,000 (converted); February: expansion 50 (one customer, one total); March: 200 USD unconverted.
    expect([attr(c, 'M#2026-01', 'new'), attr(c, 'M#2026-02', 'expansion'), attr(c, 'M#2026-02', 'new')]).toEqual(['3000', '50', '0']);
    expect([attr(c, 'M#2026-03', 'contraction'), attr(c, 'M#2026-03', 'uUSD')]).toEqual(['-3000', '200']);
    expect(attr(c, 'M#2026-01', 'uUSD')).toBe('0');
    // The USD segment stays in dollars and reports nothing unconverted.
    const seg = contributions(tl, CCY, { dimension: 'currency', value: 'USD' });
    expect([attr(seg, 'M#2026-01', 'new'), attr(seg, 'M#2026-03', 'expansion'), attr(seg, 'M#2026-03', 'uUSD')]).toEqual([
      '100',
      '100',
      '0',
    ]);
    // A plan segment leaves out only its own points.
    const basic = contributions(tl, CCY, { dimension: 'plan', value: 'Basic' });
    expect(attr(basic, 'M#2026-03', 'uUSD')).toBe('0');
    expect(attr(contributions(tl, CCY, { dimension: 'plan', value: 'Pro' }), 'M#2026-03', 'uUSD')).toBe('200');
    // The customer's movements are the converted ones.
    expect(movementsOf(tl, CCY).map((m) => [m.kind, m.amount.toFixed()])).toEqual([
      ['new', '3000'],
      ['expansion', '50'],
      ['contraction', '-3000'],
    ]);
  });

  it('a rate change moves exactly the difference of two recomputations (property)', () => {
    const rate = fc.constantFrom('30', '31.5', '0.0333333333', '1');
    const rates = fc.dictionary(fc.constantFrom('2026-01', '2026-02', '2026-03', '2026-04'), rate);
    fc.assert(
      fc.property(rates, rates, (a, b) => {
        const before = withConversions(mixed(), CCY, book(a));
        const after = withConversions(before, CCY, book(b));
        for (const { segment, moves } of contributionChange(before, after, CCY)) {
          const expected = difference(contributions(before, CCY, segment), contributions(after, CCY, segment));
          expect(moves).toEqual(expected);
        }
        // Nothing else moves: the segments the change leaves out have equal contributions.
        const moved = new Set(contributionChange(before, after, CCY).map((m) => JSON.stringify(m.segment)));
        if (!moved.has('null')) expect(difference(contributions(before, CCY), contributions(after, CCY)).size).toBe(0);
      }),
      { numRuns: 200 },
    );
  });
});
