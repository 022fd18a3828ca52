import Decimal from 'decimal.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  chunkTimeline,
  contributionChange,
  type SegmentMoves,
  contributions,
  contributionsWhere,
  difference,
  joinChunks,
  setAt,
  type Flag,
  type Point,
  type Segment,
  type Tag,
  type Timeline,
} from '#lib/metrics/timeline';

const CCY = 'TWD';
/** The moves of the whole (not of a segment) of a change. */
const whole = (moves: SegmentMoves[]) => moves.find((m) => m.segment === null)?.moves ?? new Map();

/** Recorded history is a set of points: the timeline must not depend on the order they arrive in. */
describe('recorded history merges in any arrival order', () => {
  const at = (day: number) => `2025-01-${String(day).padStart(2, '0')}T00:00:00Z`;
  const apply = (events: [day: number, amount: number, flag: Flag][]) =>
    events.reduce<Timeline>((tl, [day, amount, flag]) => setAt(tl, 'I', at(day), amount, flag), {});

  // The case the concurrent-writers test found: a cancellation that repeats an earlier one must be
  // kept, because a later-arriving point may land between the two.
  it('keeps a point that repeats the one before it', () => {
    const inOrder = apply([
      [4, 0, 'c'],
      [5, 50, 'a'],
      [8, 0, 'c'],
    ]);
    const shuffled = apply([
      [4, 0, 'c'],
      [8, 0, 'c'],
      [5, 50, 'a'],
    ]);
    expect(shuffled).toEqual(inOrder);
    expect(inOrder.I.at(-1)).toEqual([at(8), '0', 'c']);
  });

  it('any permutation of distinct-time events gives the same timeline and contributions', () => {
    const event = fc.tuple(fc.integer({ min: 1, max: 28 }), fc.constantFrom(0, 10, 20), fc.constantFrom<Flag>('a', 'c', 'p'));
    fc.assert(
      fc.property(
        fc.uniqueArray(event, { selector: (e) => e[0], minLength: 1, maxLength: 8 }),
        fc.infiniteStream(fc.nat()),
        (events, seeds) => {
          const shuffled = [...events];
          for (let i = shuffled.length - 1; i > 0; i--) {
            const j = seeds.next().value % (i + 1);
            [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
          }
          const a = apply(events);
          const b = apply(shuffled);
          expect(b).toEqual(a);
          expect(contributions(b, CCY)).toEqual(contributions(a, CCY));
        },
      ),
      { numRuns: 300 },
    );
  });
});

/**
 * What a write stores and moves, computed from the first instant that differs (so a change today
 * costs its own day, not the customer's history), is exactly the whole recomputation's difference;
 * and a timeline cut into bounded chunks joins back to itself.
 */
describe('changes computed from the first difference; chunked storage', () => {
  const day = (d: number) => `${new Date(Date.UTC(2020, 0, 1) + d * 86_400_000).toISOString().slice(0, 19)}Z`;
  const point = fc.tuple(
    fc.integer({ min: 0, max: 2000 }),
    fc.constantFrom('0', '5', '10', '12.5'),
    fc.constantFrom<Flag>('a', 'c', 'p', 'o'),
  );
  const timeline = fc
    .dictionary(fc.constantFrom('I', 'S1', 'S2', 'Oa', 'Ob', 'Oc'), fc.array(point, { maxLength: 12 }), { maxKeys: 6 })
    .map((lines) => {
      const tl: Timeline = {};
      for (const [line, pts] of Object.entries(lines)) {
        if (!pts.length) continue;
        tl[line] = pts
          .map(([d, amount, flag]) => [day(d), amount, flag] as [string, string, Flag])
          .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      }
      return tl;
    });
  // A change of one or two lines of `before` (as writes make them: other lines are the same arrays).
  const changed = fc.tuple(timeline, fc.constantFrom('I', 'S1', 'Oa'), fc.array(point, { maxLength: 6 })).map(([before, line, pts]) => {
    const after = { ...before };
    const moved = pts
      .map(([d, amount, flag]) => [day(d), amount, flag] as [string, string, Flag])
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    if (moved.length) after[line] = moved;
    else delete after[line];
    return { before, after };
  });
  /** A chunk is within its limit unless all its points are of one second (a period that cannot be cut finer). */
  const expectWithinLimit = (json: string, limit: number) => {
    if (Buffer.byteLength(json) <= limit) return;
    const seconds = new Set(Object.values(JSON.parse(json) as Timeline).flatMap((pts) => pts.map((p) => p[0].slice(0, 19))));
    expect(seconds.size, `a chunk of ${Buffer.byteLength(json)} bytes over ${limit}: ${json}`).toBe(1);
  };
  const asMap = (c: Map<string, Map<string, { toFixed: () => string }>>) =>
    Object.fromEntries([...c].map(([item, attrs]) => [item, Object.fromEntries([...attrs].map(([a, v]) => [a, v.toFixed()]))]));

  it('contributionChange equals the difference of the whole contributions', () => {
    fc.assert(
      fc.property(changed, ({ before, after }) => {
        expect(asMap(whole(contributionChange(before, after, CCY)))).toEqual(
          asMap(difference(contributions(before, CCY), contributions(after, CCY))),
        );
      }),
      { numRuns: 500 },
    );
  });

  it('chunks kept across changes: only touched ones change, each within its limit, and they join back', () => {
    fc.assert(
      fc.property(fc.array(changed, { minLength: 1, maxLength: 6 }), fc.constantFrom(120, 400), (changes, limit) => {
        let tl: Timeline = {};
        let chunks: Map<string, string> | undefined;
        for (const { after } of changes) {
          const next = chunkTimeline(after, limit, chunks);
          for (const json of next.values()) expectWithinLimit(json, limit);
          expect(joinChunks(next.values())).toEqual(after);
          // A chunk whose points did not move keeps its JSON (nothing to write).
          if (chunks)
            for (const [period, json] of next)
              if (chunks.has(period) && JSON.stringify(joinChunks([json])) === JSON.stringify(joinChunks([chunks.get(period)!])))
                expect(json).toBe(chunks.get(period));
          chunks = next;
          tl = after;
        }
        expect(Object.keys(tl).length).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 200 },
    );
  });

  it('chunks recomputed only where a changed line has points equal the chunks recomputed in full', () => {
    const edit = fc.tuple(fc.constantFrom('I', 'S1', 'S2', 'Oa', 'Od'), fc.array(point, { maxLength: 6 }));
    fc.assert(
      fc.property(timeline, fc.array(edit, { minLength: 1, maxLength: 6 }), fc.constantFrom(120, 400), (start, edits, limit) => {
        let tl = start;
        let chunks = chunkTimeline(tl, limit);
        for (const [line, pts] of edits) {
          // As writes make them: the changed line is a new array, every other line the same one.
          const after = { ...tl };
          const moved = pts
            .map(([d, amount, flag]) => [day(d), amount, flag] as [string, string, Flag])
            .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
          if (moved.length) after[line] = moved;
          else delete after[line];
          const incremental = chunkTimeline(after, limit, chunks, tl);
          expect([...incremental].sort()).toEqual([...chunkTimeline(after, limit, chunks)].sort());
          expect(joinChunks(incremental.values())).toEqual(after);
          tl = after;
          chunks = incremental;
        }
      }),
      { numRuns: 300 },
    );
  });

  // Found by the property above: a chunk starting on a day that outgrew its limit was split at month
  // level, and its first piece took the month as its start: the start of the chunk before it,
  // whose points were lost.
  it('a day-long chunk that outgrows its limit never takes the place of the chunk before it', () => {
    const tl: Timeline = {
      Oa: [
        [day(0), '0', 'a'],
        [day(0), '0', 'a'],
        [day(0), '0', 'a'],
      ],
    };
    const withI: Timeline = { ...tl, I: [[day(1), '0', 'a']] };
    const first = chunkTimeline(withI, 120, chunkTimeline(tl, 120));
    expect([...first.keys()]).toEqual(['2020-01', '2020-01-02']);
    const after: Timeline = {
      ...withI,
      S1: [
        [day(1), '0', 'a'],
        [day(1), '0', 'a'],
        [day(31), '0', 'a'],
      ],
    };
    expect(joinChunks(chunkTimeline(after, 120, first).values())).toEqual(after);
    expect(joinChunks(chunkTimeline(after, 120, first, withI).values())).toEqual(after);
  });

  it('chunks stay within their limit (down to a second) and join back to the timeline', () => {
    fc.assert(
      fc.property(timeline, fc.constantFrom(60, 200, 2000), (tl, limit) => {
        const chunks = chunkTimeline(tl, limit);
        for (const json of chunks.values()) expectWithinLimit(json, limit);
        expect(joinChunks(chunks.values())).toEqual(tl);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the state before the first difference', () => {
  // Found by the property above: two points of one line at one instant (5, then 0) leave the line
  // at 0 after it, so the customer was never above 0 and a later start is `new`, not `reactivation`.
  it('reads a line at an instant by its last point there', () => {
    const before: Timeline = {
      I: [
        ['2020-01-08T00:00:00Z', '5', 'a'],
        ['2020-01-08T00:00:00Z', '0', 'a'],
      ],
    };
    const after: Timeline = { ...before, S1: [['2020-01-09T00:00:00Z', '10', 'a']] };
    const moves = whole(contributionChange(before, after, CCY));
    expect(moves.get('D#2020-01-09')?.get('new')?.toFixed()).toBe('10');
    expect(moves.get('C#2020-01#2020-01')?.get('joined')?.toFixed()).toBe('1');
  });
});

/**
 * Segments (docs/metrics.md, "Segments"): what a write moves in each segment is that segment's whole
 * recomputation's difference, and the plans partition the figures: with every line in one plan or
 * another, the plans' net MRR changes and active subscriptions add up to the whole's.
 */
describe('segments', () => {
  const day = (d: number) => `${new Date(Date.UTC(2020, 0, 1) + d * 86_400_000).toISOString().slice(0, 19)}Z`;
  const tag = fc.tuple(fc.constantFrom('P', 'Q'), fc.constantFrom('monthly', 'yearly'), fc.constantFrom('TWD', 'USD'));
  const point = fc.tuple(
    fc.integer({ min: 0, max: 400 }),
    fc.constantFrom('0', '5', '10', '12.5'),
    fc.constantFrom<Flag>('a', 'c', 'p'),
    tag,
  );
  const lineOf = (pts: [number, string, Flag, Tag][]) =>
    pts.map(([d, amount, flag, t]) => [day(d), amount, flag, t] as Point).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const timeline = fc
    .dictionary(fc.constantFrom('I', 'S1', 'S2', 'S3'), fc.array(point, { minLength: 1, maxLength: 6 }), { maxKeys: 4 })
    .map((lines) => {
      const tl: Timeline = {};
      for (const [line, pts] of Object.entries(lines)) tl[line] = lineOf(pts);
      return tl;
    });
  const changed = fc.tuple(timeline, fc.constantFrom('I', 'S1', 'S2'), fc.array(point, { maxLength: 4 })).map(([before, line, pts]) => {
    const after = { ...before };
    if (pts.length) after[line] = lineOf(pts);
    else delete after[line];
    return { before, after };
  });
  const SEGMENTS: Segment[] = [
    { dimension: 'plan', value: 'P' },
    { dimension: 'plan', value: 'Q' },
    { dimension: 'billing_cycle', value: 'monthly' },
    { dimension: 'billing_cycle', value: 'yearly' },
    { dimension: 'currency', value: 'USD' },
  ];
  const asMap = (c: Map<string, Map<string, { toFixed: () => string }>>) =>
    Object.fromEntries([...c].map(([item, attrs]) => [item, Object.fromEntries([...attrs].map(([a, v]) => [a, v.toFixed()]))]));
  const same = (a: Segment | null, b: Segment | null) => a?.dimension === b?.dimension && a?.value === b?.value;

  it('a change moves each segment by the difference of its whole recomputation (and no other segment)', () => {
    fc.assert(
      fc.property(changed, ({ before, after }) => {
        const moved = contributionChange(before, after, CCY);
        for (const segment of [null, ...SEGMENTS]) {
          const got = moved.find((m) => same(m.segment, segment))?.moves ?? new Map();
          const expected = difference(contributions(before, CCY, segment), contributions(after, CCY, segment));
          expect(asMap(got), JSON.stringify(segment)).toEqual(asMap(expected));
        }
      }),
      { numRuns: 400 },
    );
  });

  // A customer with many past recurring orders: a change after them is computed without the order
  // lines that ended before it (only each cycle and currency's earliest positive line is kept, raw
  // and converted, for the cohort). Lines tagged in two cycles and currencies, some converted, some
  // not (no rate), the change at any time (before, among or after them), every slice exact.
  it('many past order lines: each segment still moves by the difference of its whole recomputation', () => {
    const orderLine = fc.tuple(
      fc.integer({ min: 0, max: 300 }),
      fc.integer({ min: 1, max: 60 }),
      fc.constantFrom('0', '5', '10'),
      fc.constantFrom('monthly', 'yearly'),
      fc.constantFrom('TWD', 'USD'),
      fc.constantFrom<string | undefined>(undefined, '0', '150', '300'),
    );
    const toPoints = ([start, length, amount, cycle, currency, converted]: [
      number,
      number,
      string,
      string,
      string,
      string | undefined,
    ]) => {
      const tag: Tag = [null, cycle, currency];
      const foreign = currency !== CCY && converted !== undefined;
      const at = (d: number, v: string, c: string): Point => (foreign ? [day(d), v, 'o', tag, c] : [day(d), v, 'o', tag]);
      return [at(start, amount, amount === '0' ? '0' : (converted ?? '0')), at(start + length, '0', '0')];
    };
    const history = fc.tuple(
      fc.array(orderLine, { minLength: 2, maxLength: 14 }),
      fc.option(fc.array(point, { minLength: 1, maxLength: 4 }), { nil: undefined }),
    );
    fc.assert(
      fc.property(history, orderLine, fc.integer({ min: 0, max: 13 }), ([orders, sub], change, which) => {
        const before: Timeline = {};
        orders.forEach((o, i) => {
          before[`O${i}`] = toPoints(o);
        });
        if (sub) before.S1 = lineOf(sub);
        // One order line changed (or a new one), as a write makes it: the others the same arrays.
        const after = { ...before, [`O${which}`]: toPoints(change) };
        const moved = contributionChange(before, after, CCY);
        for (const segment of [null, ...SEGMENTS]) {
          const got = moved.find((m) => same(m.segment, segment))?.moves ?? new Map();
          const expected = difference(contributions(before, CCY, segment), contributions(after, CCY, segment));
          expect(asMap(got), JSON.stringify(segment)).toEqual(asMap(expected));
        }
      }),
      { numRuns: 400 },
    );
  });

  it('in a time zone, each segment moves by the difference of its recomputations in that zone', () => {
    const ZONES = ['UTC', 'Asia/Taipei', 'America/New_York', 'Asia/Kathmandu', 'Pacific/Kiritimati', 'Pacific/Pago_Pago'];
    fc.assert(
      fc.property(changed, fc.constantFrom(...ZONES), ({ before, after }, zone) => {
        const moved = contributionChange(before, after, CCY, zone);
        for (const segment of [null, ...SEGMENTS]) {
          const got = moved.find((m) => same(m.segment, segment))?.moves ?? new Map();
          const expected = difference(contributions(before, CCY, segment, zone), contributions(after, CCY, segment, zone));
          expect(asMap(got), `${JSON.stringify(segment)} ${zone}`).toEqual(asMap(expected));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("a zone's days: a change at 16:00 UTC on 31 January is 1 February in Asia/Taipei (its day, month and cohort)", () => {
    const tl: Timeline = { S1: [['2026-01-31T16:00:00Z', '100', 'a', ['Pro', 'monthly', CCY]]] };
    expect([...contributions(tl, CCY, null, 'UTC').keys()].sort()).toEqual(['C#2026-01#2026-01', 'D#2026-01-31', 'M#2026-01']);
    expect([...contributions(tl, CCY, null, 'Asia/Taipei').keys()].sort()).toEqual(['C#2026-02#2026-02', 'D#2026-02-01', 'M#2026-02']);
    expect([...contributions(tl, CCY, null, 'America/New_York').keys()].sort()).toEqual(['C#2026-01#2026-01', 'D#2026-01-31', 'M#2026-01']);
  });

  it('the plans add up to the whole: net MRR change and active subscriptions per day', () => {
    const net = (c: Map<string, Map<string, { toFixed: () => string }>>) => {
      const out = new Map<string, Decimal>();
      for (const [item, attrs] of c) {
        if (!item.startsWith('D#')) continue;
        for (const [attr, v] of attrs)
          if (['new', 'expansion', 'contraction', 'churn', 'reactivation', 'subscriptions'].includes(attr))
            out.set(
              `${item}|${attr === 'subscriptions' ? 's' : 'm'}`,
              (out.get(`${item}|${attr === 'subscriptions' ? 's' : 'm'}`) ?? new Decimal(0)).plus(v.toFixed()),
            );
      }
      return Object.fromEntries([...out].filter(([, v]) => !v.isZero()).map(([k, v]) => [k, v.toFixed()]));
    };
    fc.assert(
      fc.property(timeline, (tl) => {
        // Subscription lines only, in the reporting currency: every point is in plan P or Q.
        const subs: Timeline = {};
        for (const [line, pts] of Object.entries(tl))
          if (line.startsWith('S')) subs[line] = pts.map((p) => [p[0], p[1], p[2], [p[3]![0], p[3]![1], CCY]] as Point);
        const byPlan = new Map<string, Decimal>();
        for (const plan of ['P', 'Q'])
          for (const [k, v] of Object.entries(net(contributions(subs, CCY, { dimension: 'plan', value: plan }))))
            byPlan.set(k, (byPlan.get(k) ?? new Decimal(0)).plus(v));
        const summed = Object.fromEntries([...byPlan].filter(([, v]) => !v.isZero()).map(([k, v]) => [k, v.toFixed()]));
        expect(summed).toEqual(net(contributions(subs, CCY)));
      }),
      { numRuns: 400 },
    );
  });

  it('the whole leaves other currencies out; a currency segment is its own lines only, in that currency', () => {
    const tl: Timeline = {
      S1: [['2020-01-01T00:00:00Z', '10', 'a', ['P', 'monthly', 'USD']]],
      S2: [['2020-01-02T00:00:00Z', '20', 'a', ['P', 'monthly', 'TWD']]],
    };
    const figure = (c: Map<string, Map<string, { toFixed: () => string }>>, item: string, attr: string) =>
      c.get(item)?.get(attr)?.toFixed();
    expect(figure(contributions(tl, CCY), 'M#2020-01', 'new')).toBe('20');
    expect(figure(contributions(tl, CCY, { dimension: 'currency', value: 'USD' }), 'M#2020-01', 'new')).toBe('10');
    expect(figure(contributions(tl, CCY, { dimension: 'plan', value: 'P' }), 'M#2020-01', 'new')).toBe('20');
  });

  it('a union of plans: a move between two of its plans moves nothing; one plan is the stored segment', () => {
    // S1 in P at 10 from January, moved to Q (same amount) on 2020-02-10, to R on 2020-03-10.
    const tl: Timeline = {
      S1: [
        ['2020-01-01T00:00:00Z', '10', 'a', ['P', 'monthly', 'TWD']],
        ['2020-02-10T00:00:00Z', '10', 'a', ['Q', 'monthly', 'TWD']],
        ['2020-03-10T00:00:00Z', '10', 'a', ['R', 'monthly', 'TWD']],
      ],
    };
    const union = contributionsWhere(tl, CCY, { plans: ['P', 'Q'] });
    expect(union.get('M#2020-01')?.get('new')?.toFixed()).toBe('10');
    expect(union.has('M#2020-02')).toBe(false);
    expect(union.get('M#2020-03')?.get('churn')?.toFixed()).toBe('-10');
    expect(contributionsWhere(tl, CCY, { plans: ['P'] })).toEqual(contributions(tl, CCY, { dimension: 'plan', value: 'P' }));
    expect(contributionsWhere(tl, CCY, { plans: ['Q'], billing_cycle: 'yearly' }).size).toBe(0);
  });
});
