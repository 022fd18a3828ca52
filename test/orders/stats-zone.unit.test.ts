import Decimal from 'decimal.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { foldTerms, hourAttr, partialHours, quarterAttr, statsTerms, termId, withLegacyQuarters } from '#lib/orders/rules';
import { localPeriodsAt, quarterOf } from '#lib/shared/zone';
import { assertWithinBudget } from '../support/property.ts';

/**
 * Stats in a time zone, in memory: counters kept per UTC day (whole and per quarter-hour) and per
 * UTC month, as order writes keep them, regrouped into the zone's today and this month by
 * `statsTerms` / `foldTerms`, against a reference that asks Intl for each payment's local date.
 */

const ZONES = [
  'UTC',
  'Asia/Taipei',
  'Asia/Kathmandu', // +5:45
  'Asia/Kolkata', // +5:30
  'Pacific/Chatham', // +12:45 / +13:45
  'Pacific/Kiritimati', // +14
  'Pacific/Pago_Pago', // −11
  'America/New_York', // DST
  'Europe/London', // DST, at 01:00 UTC
  'Australia/Lord_Howe', // a 30-minute DST shift
  'America/Santiago', // DST at local midnight
];

/**
 * The counters as the table keeps them: `D#<day>` (the day item's whole-day and hour sums with its
 * hour items' quarter-hours) and `M#<month>`, each summed over shards. `legacy`: as an earlier
 * version kept them, quarter-hours on the day item and no hour sums, read through `withLegacyQuarters`.
 */
const countersOf = (payments: { at: number; amount: string }[], layout: 'hours' | 'legacy' = 'hours') => {
  const out = new Map<string, Record<string, Decimal>>();
  const add = (id: string, attr: string, v: string) => {
    const item = out.get(id) ?? {};
    item[attr] = (item[attr] ?? new Decimal(0)).plus(v);
    out.set(id, item);
  };
  for (const { at, amount } of payments) {
    const iso = new Date(at).toISOString();
    add(`D#${iso.slice(0, 10)}`, 'rev_TWD', amount);
    add(`D#${iso.slice(0, 10)}`, quarterAttr(quarterOf(at), 'rev_TWD'), amount);
    if (layout === 'hours') add(`D#${iso.slice(0, 10)}`, hourAttr(Math.floor(quarterOf(at) / 4), 'rev_TWD'), amount);
    add(`M#${iso.slice(0, 7)}`, 'rev_TWD', amount);
  }
  if (layout === 'legacy') for (const [id, c] of out) if (id.startsWith('D#')) out.set(id, withLegacyQuarters(c));
  return out;
};

/** The local date of an instant, as Intl formats it: the reference shares no code with lib/shared/zone. */
const localDate = (ms: number, zone: string) =>
  new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(ms));

const reference = (payments: { at: number; amount: string }[], now: number, zone: string) => {
  const today = localDate(now, zone);
  const sum = (keep: (d: string) => boolean) =>
    payments.filter((p) => keep(localDate(p.at, zone))).reduce((s, p) => s.plus(p.amount), new Decimal(0));
  return { today: sum((d) => d === today), month: sum((d) => d.slice(0, 7) === today.slice(0, 7)) };
};

const figures = (payments: { at: number; amount: string }[], now: number, zone: string, layout: 'hours' | 'legacy' = 'hours') => {
  const { today, month } = localPeriodsAt(now, zone);
  const counters = countersOf(payments, layout);
  const todayTerms = statsTerms(today.from, today.to);
  const monthTerms = statsTerms(month.from, month.to);
  return {
    today: foldTerms(todayTerms, counters).rev_TWD ?? new Decimal(0),
    month: foldTerms(monthTerms, counters).rev_TWD ?? new Decimal(0),
    ids: new Set([...todayTerms, ...monthTerms].map(termId)),
    hours: [...todayTerms, ...monthTerms].flatMap(partialHours).length,
  };
};

describe('stats terms', () => {
  it('UTC reads one day and one month, each whole', () => {
    const { today, month } = localPeriodsAt(Date.parse('2026-11-26T17:00:00Z'), 'UTC');
    expect(statsTerms(today.from, today.to)).toEqual([{ kind: 'day', day: '2026-11-26', sign: 1, quarters: null }]);
    expect(statsTerms(month.from, month.to)).toEqual([{ kind: 'month', month: '2026-11', sign: 1 }]);
  });

  it('Asia/Taipei: today is the 26th from 16:00 and the 27th to 16:00; November is the month less its last 8 hours, plus 31 October’s', () => {
    const { today, month } = localPeriodsAt(Date.parse('2026-11-26T17:00:00Z'), 'Asia/Taipei');
    expect(statsTerms(today.from, today.to)).toEqual([
      { kind: 'day', day: '2026-11-26', sign: 1, quarters: [64, 96] },
      { kind: 'day', day: '2026-11-27', sign: 1, quarters: [0, 64] },
    ]);
    expect(statsTerms(month.from, month.to)).toEqual([
      { kind: 'day', day: '2026-10-31', sign: 1, quarters: [64, 96] },
      { kind: 'month', month: '2026-11', sign: 1 },
      { kind: 'day', day: '2026-11-30', sign: -1, quarters: [64, 96] },
    ]);
  });

  it('equal the reference for any payments, zone and moment (at most 2 months and 4 days read)', async () => {
    const instant = fc.integer({ min: Date.parse('2024-01-01T00:00:00Z'), max: Date.parse('2027-12-31T23:59:59Z') });
    await assertWithinBudget(
      fc.asyncProperty(
        fc.constantFrom(...ZONES),
        instant,
        fc.array(
          fc.record({ offset: fc.integer({ min: -40 * 86_400_000, max: 40 * 86_400_000 }), amount: fc.integer({ min: 1, max: 10_000 }) }),
          {
            maxLength: 40,
          },
        ),
        async (zone, now, raw) => {
          const payments = raw.map((p) => ({ at: now + p.offset, amount: String(p.amount) }));
          const want = reference(payments, now, zone);
          for (const layout of ['hours', 'legacy'] as const) {
            const counted = figures(payments, now, zone, layout);
            expect(counted.today.toFixed(2), `today (${layout})`).toBe(want.today.toFixed(2));
            expect(counted.month.toFixed(2), `month (${layout})`).toBe(want.month.toFixed(2));
          }
          const got = figures(payments, now, zone);
          // A part of a day starts or ends inside at most one hour: at most 4 hour items per shard.
          expect(got.hours).toBeLessThanOrEqual(4);
          expect([...got.ids].filter((id) => id.startsWith('M#')).length).toBeLessThanOrEqual(2);
          expect([...got.ids].filter((id) => id.startsWith('D#')).length).toBeLessThanOrEqual(4);
        },
      ),
      Number(process.env.PROP_RUNS ?? 400),
      Number(process.env.PROP_BUDGET_MS ?? 8_000),
    );
  });

  it('payments a second either side of local midnight, in every zone, on DST days too', () => {
    for (const zone of ZONES) {
      for (const day of ['2026-03-08', '2026-03-29', '2026-04-05', '2026-09-06', '2026-10-04', '2026-11-01', '2026-12-31']) {
        const { today } = localPeriodsAt(Date.parse(`${day}T12:00:00Z`), zone);
        const payments = [
          { at: today.from - 1000, amount: '1' },
          { at: today.from, amount: '10' },
          { at: today.to - 1000, amount: '100' },
          { at: today.to, amount: '1000' },
        ];
        const now = today.from + 3_600_000;
        expect(figures(payments, now, zone).today.toFixed(2), `${zone} ${day}`).toBe(reference(payments, now, zone).today.toFixed(2));
        expect(reference(payments, now, zone).today.toFixed(2), `${zone} ${day}`).toBe('110.00');
      }
    }
  });
});
