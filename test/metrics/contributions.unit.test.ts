import Decimal from 'decimal.js';
import { describe, expect, it } from 'vitest';
import {
  addContributions,
  addToSlices,
  type Contributions,
  classify,
  contributionChange,
  contributions,
  difference,
  newSlices,
  type Point,
  type RateBook,
  type Segment,
  segmentsOf,
  setFrom,
  type Tag,
  type Timeline,
  withConversions,
} from '#lib/metrics/timeline';

/**
 * The pure rules behind every figure (docs/metrics.md, "Movements", "Segments", "Currency
 * conversion"), in memory: how a change of MRR is classified, what one customer's timeline adds to
 * the whole and to each segment, what a change moves, and the recount's count (lib/metrics/recount.ts
 * sums groups of customers with `addToSlices`, while writes move the figures by `contributionChange`).
 * Expected values are worked out by hand (small cases) or by plain arithmetic over `contributions`
 * (the seeded property checks), never by the function under test.
 */

const CCY = 'TWD';
const d = (v: Decimal.Value) => new Decimal(v);
/** Contributions as plain data with exact Decimal strings, zero entries left out (what the aggregates store). */
const plain = (c: Contributions) => {
  const out: Record<string, Record<string, string>> = {};
  for (const [item, attrs] of c)
    for (const [attr, v] of attrs) {
      if (v.isZero()) continue;
      (out[item] ??= {})[attr] = v.toFixed();
    }
  return out;
};
const at = (day: string) => `${day}T00:00:00Z`;
const BASIC: Tag = ['Basic', 'monthly', CCY];
const PRO: Tag = ['Pro', 'monthly', CCY];
const plan = (value: string): Segment => ({ dimension: 'plan', value });
const cycle = (value: string): Segment => ({ dimension: 'billing_cycle', value });
const currency = (value: string): Segment => ({ dimension: 'currency', value });

describe('classify: a change of a customer total MRR', () => {
  it.each([
    ['0', '10', false, 'new', '10'],
    ['0', '0.01', false, 'new', '0.01'],
    ['0', '10', true, 'reactivation', '10'],
    ['10', '15.5', false, 'expansion', '5.5'],
    ['10', '10.01', true, 'expansion', '0.01'],
    ['15', '10', true, 'contraction', '-5'],
    ['10', '0.01', true, 'contraction', '-9.99'],
    ['10', '0', true, 'churn', '-10'],
    ['0.01', '0', true, 'churn', '-0.01'],
  ] as const)('%s → %s (ever positive: %s) is %s of %s', (before, after, everPositive, kind, amount) => {
    const got = classify(d(before), d(after), everPositive);
    expect(got && { kind: got.kind, amount: got.amount.toFixed() }).toEqual({ kind, amount });
  });

  it.each([
    ['0', '0', false],
    ['0', '0', true],
    ['10', '10', true],
    ['10', '10.00', true],
  ] as const)('%s → %s (ever positive: %s) did not move', (before, after, everPositive) => {
    expect(classify(d(before), d(after), everPositive)).toBeNull();
  });
});

describe('contributions: one customer, by hand', () => {
  // Basic monthly 10 from 10 January, upgraded to 15 on 5 February, cancelled ("too pricey") on 1 March.
  const tl: Timeline = {
    S1: [
      [at('2025-01-10'), '10', 'a', BASIC],
      [at('2025-02-05'), '15', 'a', BASIC],
      [at('2025-03-01'), '0', 'c', ['Basic', 'monthly', CCY, 'too pricey']],
    ],
  };
  const movements = {
    'D#2025-01-10': { new: '10', customers: '1', subscriptions: '1' },
    'M#2025-01': { new: '10', customers: '1', subscriptions: '1' },
    'D#2025-02-05': { expansion: '5' },
    'M#2025-02': { expansion: '5' },
    'D#2025-03-01': { churn: '-15', customers: '-1', subscriptions: '-1', churned: '1' },
    'M#2025-03': { churn: '-15', customers: '-1', subscriptions: '-1', churned: '1' },
    'C#2025-01#2025-01': { joined: '1', start: '10', mrr: '10', customers: '1' },
    'C#2025-01#2025-02': { mrr: '5' },
    'C#2025-01#2025-03': { mrr: '-15', customers: '-1' },
  };

  it('the whole: movements, active customers and subscriptions, customer churn, cohort, churn by reason', () => {
    expect(plain(contributions(tl, CCY))).toEqual({
      ...movements,
      'RD#2025-03-01#too%20pricey': { churn: '-15', churned: '1' },
      'RM#2025-03#too%20pricey': { churn: '-15', churned: '1' },
    });
  });

  it('its plan and its billing cycle: the same figures without churn by reason; another plan: nothing', () => {
    expect(plain(contributions(tl, CCY, plan('Basic')))).toEqual(movements);
    expect(plain(contributions(tl, CCY, cycle('monthly')))).toEqual(movements);
    expect(contributions(tl, CCY, plan('Pro')).size).toBe(0);
    expect(contributions(tl, CCY, cycle('yearly')).size).toBe(0);
    expect(contributions(tl, CCY, currency('USD')).size).toBe(0);
  });

  it('a plan change at the same MRR moves nothing in the whole, churns the old plan and is new in the other', () => {
    const moved: Timeline = {
      S1: [
        [at('2025-01-10'), '10', 'a', BASIC],
        [at('2025-02-05'), '10', 'a', PRO],
      ],
    };
    const january = { new: '10', customers: '1', subscriptions: '1' };
    expect(plain(contributions(moved, CCY))).toEqual({
      'D#2025-01-10': january,
      'M#2025-01': january,
      'C#2025-01#2025-01': { joined: '1', start: '10', mrr: '10', customers: '1' },
    });
    // Leaving a plan is not a cancellation: MRR to 0 there, but no customer churn.
    const left = { churn: '-10', customers: '-1', subscriptions: '-1' };
    expect(plain(contributions(moved, CCY, plan('Basic')))).toEqual({
      'D#2025-01-10': january,
      'M#2025-01': january,
      'D#2025-02-05': left,
      'M#2025-02': left,
      'C#2025-01#2025-01': { joined: '1', start: '10', mrr: '10', customers: '1' },
      'C#2025-01#2025-02': { mrr: '-10', customers: '-1' },
    });
    expect(plain(contributions(moved, CCY, plan('Pro')))).toEqual({
      'D#2025-02-05': january,
      'M#2025-02': january,
      'C#2025-02#2025-02': { joined: '1', start: '10', mrr: '10', customers: '1' },
    });
    // Both plans are monthly: the cycle's figures are the whole's.
    expect(plain(contributions(moved, CCY, cycle('monthly')))).toEqual(plain(contributions(moved, CCY)));
  });

  it('a second customer ever positive before comes back as reactivation, not new', () => {
    const back: Timeline = {
      S1: [
        [at('2025-01-10'), '10', 'a', BASIC],
        [at('2025-02-01'), '0', 'c', BASIC],
      ],
      S2: [[at('2025-04-01'), '20', 'a', BASIC]],
    };
    const got = plain(contributions(back, CCY));
    expect(got['D#2025-04-01']).toEqual({ reactivation: '20', customers: '1', subscriptions: '1' });
    expect(got['C#2025-01#2025-04']).toEqual({ mrr: '20', customers: '1' });
  });
});

describe('currencies: the whole converts, a currency segment is its own lines, the reporting currency is stored as its difference', () => {
  // TWD 100 from January; USD 10 from 1 February, converted at 32 (320 TWD).
  const tl: Timeline = {
    S1: [[at('2025-01-10'), '100', 'a', BASIC]],
    S2: [[at('2025-02-01'), '10', 'a', ['Basic', 'monthly', 'USD'], '320']],
  };
  const january = { new: '100', customers: '1', subscriptions: '1' };

  it('the whole: the USD line at its converted amount', () => {
    expect(plain(contributions(tl, CCY))).toEqual({
      'D#2025-01-10': january,
      'M#2025-01': january,
      'D#2025-02-01': { expansion: '320', subscriptions: '1' },
      'M#2025-02': { expansion: '320', subscriptions: '1' },
      'C#2025-01#2025-01': { joined: '1', start: '100', mrr: '100', customers: '1' },
      'C#2025-01#2025-02': { mrr: '320' },
    });
  });

  it('the USD segment: its own line, in USD', () => {
    const feb = { new: '10', customers: '1', subscriptions: '1' };
    expect(plain(contributions(tl, CCY, currency('USD')))).toEqual({
      'D#2025-02-01': feb,
      'M#2025-02': feb,
      'C#2025-02#2025-02': { joined: '1', start: '10', mrr: '10', customers: '1' },
    });
  });

  it('the TWD segment is stored as (its own lines − the whole): the USD line taken back out', () => {
    expect(plain(contributions(tl, CCY, currency(CCY)))).toEqual({
      'D#2025-02-01': { expansion: '-320', subscriptions: '-1' },
      'M#2025-02': { expansion: '-320', subscriptions: '-1' },
      'C#2025-01#2025-02': { mrr: '-320' },
    });
  });

  it('a point without a rate: 0 in the whole, its amount left out as uUSD', () => {
    const unconverted: Timeline = { S2: [[at('2025-02-01'), '10', 'a', ['Basic', 'monthly', 'USD']]] };
    expect(plain(contributions(unconverted, CCY))).toEqual({ 'D#2025-02-01': { uUSD: '10' }, 'M#2025-02': { uUSD: '10' } });
  });

  it('segmentsOf: each plan, cycle and other currency, and the reporting currency once another exists', () => {
    const key = (s: Segment) => `${s.dimension}=${s.value}`;
    expect(segmentsOf(tl, CCY).map(key).sort()).toEqual(['billing_cycle=monthly', 'currency=TWD', 'currency=USD', 'plan=Basic']);
    // Only the reporting currency, an order's line without plan, a point without tag.
    const local: Timeline = { Oa: [[at('2025-01-01'), '5', 'o', [null, 'yearly', CCY]]], I: [[at('2024-01-01'), '3', 'a']] };
    expect(segmentsOf(local, CCY).map(key)).toEqual(['billing_cycle=yearly']);
    expect(segmentsOf({}, CCY)).toEqual([]);
  });

  it('addToSlices: the whole and each segment the timeline has, summed over customers', () => {
    const slices = newSlices();
    addToSlices(slices, tl, CCY, 'UTC');
    // A second customer in TWD alone: Basic monthly 50 from 10 January (same days as the first).
    addToSlices(slices, { S9: [[at('2025-01-10'), '50', 'a', BASIC]] }, CCY, 'UTC');
    const byId = Object.fromEntries([...slices].map(([id, s]) => [id.replace('\u0000', '='), plain(s.target)]));
    expect(Object.keys(byId).sort()).toEqual(['', 'billing_cycle=monthly', 'currency=TWD', 'currency=USD', 'plan=Basic']);
    const january = { new: '150', customers: '2', subscriptions: '2' };
    const whole = {
      'D#2025-01-10': january,
      'M#2025-01': january,
      'D#2025-02-01': { expansion: '320', subscriptions: '1' },
      'M#2025-02': { expansion: '320', subscriptions: '1' },
      'C#2025-01#2025-01': { joined: '2', start: '150', mrr: '150', customers: '2' },
      'C#2025-01#2025-02': { mrr: '320' },
    };
    expect(byId['']).toEqual(whole);
    expect(byId['plan=Basic']).toEqual(whole);
    expect(byId['billing_cycle=monthly']).toEqual(whole);
    // The second customer has no other currency: nothing of it in the TWD difference.
    expect(byId['currency=TWD']).toEqual({
      'D#2025-02-01': { expansion: '-320', subscriptions: '-1' },
      'M#2025-02': { expansion: '-320', subscriptions: '-1' },
      'C#2025-01#2025-02': { mrr: '-320' },
    });
    expect(byId['currency=USD']).toEqual({
      'D#2025-02-01': { new: '10', customers: '1', subscriptions: '1' },
      'M#2025-02': { new: '10', customers: '1', subscriptions: '1' },
      'C#2025-02#2025-02': { joined: '1', start: '10', mrr: '10', customers: '1' },
    });
  });
});

describe('difference and addContributions', () => {
  const of = (o: Record<string, Record<string, string>>): Contributions =>
    new Map(Object.entries(o).map(([item, attrs]) => [item, new Map(Object.entries(attrs).map(([a, v]) => [a, d(v)]))]));

  it('difference is after − before per item and attribute, without zero entries', () => {
    const before = of({ X: { n: '1', c: '2' }, Z: { e: '4' } });
    const after = of({ X: { n: '1', c: '5.5' }, Y: { e: '3' } });
    expect(plain(difference(before, after))).toEqual({ X: { c: '3.5' }, Y: { e: '3' }, Z: { e: '-4' } });
    const same = difference(before, of({ X: { n: '1', c: '2' }, Z: { e: '4' } }));
    expect(same.size).toBe(0);
  });

  it('addContributions sums into its target item by item; a zero adds no entry', () => {
    const into = of({ X: { n: '1' } });
    addContributions(into, of({ X: { n: '2.25', c: '-1' }, Y: { e: '0' } }));
    expect(plain(into)).toEqual({ X: { n: '3.25', c: '-1' } });
    expect(into.has('Y')).toBe(false);
  });
});

describe('withConversions: a point in another currency at the rate of its month', () => {
  const USD: Tag = ['Basic', 'monthly', 'USD'];
  const rates: RateBook = new Map([
    [
      'USD',
      new Map([
        ['2025-01', '32.5'],
        ['2025-02', '30'],
      ]),
    ],
  ]);

  it('converts each point at its month rate, leaves it unconverted without one, and leaves reporting-currency lines as they are', () => {
    const twd: Point[] = [[at('2025-01-01'), '100', 'a', BASIC]];
    const tl: Timeline = {
      S1: twd,
      S2: [
        [at('2025-01-15'), '10', 'a', USD],
        [at('2025-02-15'), '12.34', 'a', USD],
        [at('2025-03-15'), '20', 'a', USD, '999'],
      ],
    };
    const got = withConversions(tl, CCY, rates);
    expect(got.S1).toBe(twd);
    expect(got.S2).toEqual([
      [at('2025-01-15'), '10', 'a', USD, '325'],
      [at('2025-02-15'), '12.34', 'a', USD, '370.2'],
      // March has no rate: a conversion made before is dropped.
      [at('2025-03-15'), '20', 'a', USD],
    ]);
    // Already converted as it should be: the same timeline back.
    expect(withConversions(got, CCY, rates)).toBe(got);
  });

  it('the month is the reporting time zone one; the converted amount keeps 10 fraction digits, half up', () => {
    const lateJanuary: Timeline = { S2: [['2025-01-31T20:00:00Z', '1.00000000001', 'a', USD]] };
    // 1.00000000001 × 32.5 = 32.500000000325 → 32.5000000003; in Asia/Taipei it is 1 February: × 30 = 30.0000000003.
    expect(withConversions(lateJanuary, CCY, rates, 'UTC').S2[0][4]).toBe('32.5000000003');
    expect(withConversions(lateJanuary, CCY, rates, 'Asia/Taipei').S2[0][4]).toBe('30.0000000003');
    const half: Timeline = { S2: [[at('2025-02-01'), '0.00000000005', 'a', USD]] };
    // 0.00000000005 × 30 = 0.0000000015 exactly: kept; × 32.5 would be 0.000000001625 → 0.0000000016.
    expect(withConversions(half, CCY, rates).S2[0][4]).toBe('0.0000000015');
    const halfUp: Timeline = { S2: [[at('2025-01-01'), '0.00000000005', 'a', USD]] };
    expect(withConversions(halfUp, CCY, rates).S2[0][4]).toBe('0.0000000016');
  });
});

/** A small seeded generator (mulberry32): the same cases on every run, no DynamoDB, no fast-check. */
const seeded = (seed: number) => {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]) => xs[int(xs.length)];
  return { int, pick };
};
const TAGS: Tag[] = [
  ['Basic', 'monthly', CCY],
  ['Pro', 'yearly', CCY],
  ['Basic', 'yearly', 'USD'],
  [null, 'monthly', CCY],
];
const day = (n: number) => `${new Date(Date.UTC(2025, 0, 1) + n * 86_400_000).toISOString().slice(0, 19)}Z`;
const randomLine = (r: ReturnType<typeof seeded>, from = 0, days = 120): Point[] => {
  const pts: Point[] = [];
  const n = 1 + r.int(4);
  for (let i = 0; i < n; i++) {
    const flag = r.pick(['a', 'a', 'p', 'c'] as const);
    pts.push([day(from + r.int(days)), flag === 'c' ? '0' : r.pick(['0', '5', '10', '12.5']), flag, r.pick(TAGS)]);
  }
  return pts.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
};
const randomTimeline = (r: ReturnType<typeof seeded>): Timeline => {
  const tl: Timeline = {};
  for (const line of ['I', 'S1', 'S2', 'S3']) if (r.int(3)) tl[line] = randomLine(r);
  return tl;
};
const RATES: RateBook = new Map([
  [
    'USD',
    new Map([
      ['2025-01', '32'],
      ['2025-02', '31.5'],
      ['2025-03', '30.25'],
    ]),
  ],
]);
const SEGMENTS: Segment[] = [plan('Basic'), plan('Pro'), cycle('monthly'), cycle('yearly'), currency('USD'), currency(CCY)];
const sameSegment = (a: Segment | null, b: Segment | null) => a?.dimension === b?.dimension && a?.value === b?.value;
/** after − before, by plain arithmetic over the two plain maps. */
const minus = (after: Record<string, Record<string, string>>, before: Record<string, Record<string, string>>) => {
  const out: Record<string, Record<string, string>> = {};
  for (const item of new Set([...Object.keys(after), ...Object.keys(before)]))
    for (const attr of new Set([...Object.keys(after[item] ?? {}), ...Object.keys(before[item] ?? {})])) {
      const v = d(after[item]?.[attr] ?? 0).minus(before[item]?.[attr] ?? 0);
      if (!v.isZero()) (out[item] ??= {})[attr] = v.toFixed();
    }
  return out;
};

describe('contributionChange: what a write moves', () => {
  it('equals contributions(after) − contributions(before), item by item, for the whole and every segment (seeded, 300 cases)', () => {
    const r = seeded(20250101);
    let moving = 0;
    for (let run = 0; run < 300; run++) {
      const before = withConversions(randomTimeline(r), CCY, RATES);
      // As a write makes it: one line replaced or removed, the others the same arrays.
      const line = r.pick(['I', 'S1', 'S2']);
      const after: Timeline = { ...before };
      if (r.int(5)) after[line] = randomLine(r);
      else delete after[line];
      const changed = withConversions(after, CCY, RATES);
      const moves = contributionChange(before, changed, CCY);
      for (const segment of [null, ...SEGMENTS]) {
        const got = moves.find((m) => sameSegment(m.segment, segment))?.moves ?? new Map();
        const expected = minus(plain(contributions(changed, CCY, segment)), plain(contributions(before, CCY, segment)));
        expect(plain(got), `run ${run} ${JSON.stringify(segment)}`).toEqual(expected);
        if (Object.keys(expected).length) moving++;
      }
    }
    // The cases moved figures (the check is not vacuous).
    expect(moving).toBeGreaterThan(300);
  });

  it("a change today moves only today's items, however long the history", () => {
    // Basic 10 since January 2024 with a downgrade and an upgrade on the way; upgraded to 15 on 15 March 2026.
    const before: Timeline = {
      S1: [
        [at('2024-01-10'), '20', 'a', BASIC],
        [at('2024-06-01'), '8', 'a', BASIC],
        [at('2025-02-01'), '10', 'a', BASIC],
      ],
    };
    const after = setFrom(before, 'S1', '2026-03-15T09:30:00Z', '15', 'a', BASIC);
    const moved = contributionChange(before, after, CCY);
    const today = { 'D#2026-03-15': { expansion: '5' }, 'M#2026-03': { expansion: '5' }, 'C#2024-01#2026-03': { mrr: '5' } };
    expect(moved.map((m) => [m.segment, plain(m.moves)])).toEqual([
      [null, today],
      [plan('Basic'), today],
      [cycle('monthly'), today],
    ]);
    // A plan change today at the same MRR: the whole does not move, Basic loses it today, Pro gains it today.
    const toPro = contributionChange(before, setFrom(before, 'S1', '2026-03-15T09:30:00Z', '10', 'a', PRO), CCY);
    const lost = { churn: '-10', customers: '-1', subscriptions: '-1' };
    const gained = { new: '10', customers: '1', subscriptions: '1' };
    expect(Object.fromEntries(toPro.map((m) => [m.segment ? `${m.segment.dimension}=${m.segment.value}` : '', plain(m.moves)]))).toEqual({
      'plan=Basic': { 'D#2026-03-15': lost, 'M#2026-03': lost, 'C#2024-01#2026-03': { mrr: '-10', customers: '-1' } },
      'plan=Pro': {
        'D#2026-03-15': gained,
        'M#2026-03': gained,
        'C#2026-03#2026-03': { joined: '1', start: '10', mrr: '10', customers: '1' },
      },
    });
  });
});

describe("the recount's count: addToSlices over a group equals the sum of each customer's moves from nothing", () => {
  it('for groups of 25 customers (seeded, 6 groups in each of 3 zones), converted, every slice', () => {
    const r = seeded(25);
    for (const zone of ['UTC', 'Asia/Taipei', 'America/New_York']) {
      for (let g = 0; g < 6; g++) {
        const group = Array.from({ length: 25 }, () => withConversions(randomTimeline(r), CCY, RATES, zone));
        // What the recount writes: one addToSlices per customer, zero entries left out.
        const slices = newSlices();
        for (const tl of group) addToSlices(slices, tl, CCY, zone);
        const counted = Object.fromEntries(
          [...slices.values()].map((s) => [s.segment ? `${s.segment.dimension}=${s.segment.value}` : '', plain(s.target)]),
        );
        // What writes from an empty timeline would have moved, summed by plain arithmetic.
        const written: Record<string, Record<string, Record<string, string>>> = { '': {} };
        for (const tl of group)
          for (const { segment, moves } of contributionChange({}, tl, CCY, zone)) {
            const id = segment ? `${segment.dimension}=${segment.value}` : '';
            // written + moves, as written − (0 − moves)
            written[id] = minus(written[id] ?? {}, minus({}, plain(moves)));
          }
        for (const id of Object.keys(written)) if (!Object.keys(written[id]).length && id !== '') delete written[id];
        for (const id of Object.keys(counted)) if (!Object.keys(counted[id]).length && id !== '') delete counted[id];
        expect(counted, `${zone} group ${g}`).toEqual(written);
      }
    }
  });
});
