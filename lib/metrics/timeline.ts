import Decimal from 'decimal.js';
import { DEFAULT_TIMEZONE, localDateOfIso } from '#lib/shared/zone';
import { timestampPlusDays, timestampPlusMonths } from '#lib/shared/time';
import { keyText } from '#lib/shared/key-text';
import type { SalesDimension } from '#lib/metrics/bookings';

/**
 * A customer's MRR timeline (docs/metrics.md), pure. The customer's MRR is the sum of its lines; each
 * line is a list of change points `[at, amount, flag]` ("from `at` on the line is `amount`"):
 * - `S<id>`: a subscription (API changes and recorded events naming it);
 * - `I`: the customer's imported line (recorded events without a subscription);
 * - `O<order_no>`: a paid recurring order's monthly share, from paid_at to the end of its cycle.
 * Flags: `a` active subscription, `p` paused, `c` cancelled, `t` trialing (0, a subscription's
 * first point), `d` past due (its mrr still counts), `o` an order share (not a subscription), `g`
 * an order's renewal grace (its share still counts, past due, `withRenewals`), `e`
 * the imported line's end where the customer's first subscription starts (`withImportedEnd`), `x`
 * (views only, never stored) a point outside the segment read. `a`/`p`/`d` lines make the customer
 * live (customer churn counts the moment a cancellation leaves no live line); a trial does not.
 *
 * Every write turns the stored timeline into a new one; `contributions` maps a timeline to what it
 * adds to the merchant's aggregate items (classified movements per day and month, cohort figures),
 * and the write applies `after − before` as ADD deltas. So the aggregates always equal the sum of
 * every customer's contributions, i.e. a from-scratch recomputation, whatever order the changes
 * (back-dated or not) arrived in.
 */
export type Flag = 'a' | 'p' | 'c' | 't' | 'd' | 'o' | 'g' | 'e' | 'x';
/**
 * What a point counts under in segments (docs/metrics.md, "Segments"): its plan and billing cycle
 * (null: none, such as an order's plan or the imported line's cycle), its currency, and on a
 * cancellation its reason. A point without one (written before points had them) is in the
 * reporting currency, in no plan and no cycle. `stated`: the point of a change that set no amount
 * (a plan or cycle change alone) keeps the line's amount (`keptAmounts`); this is the amount the
 * record stated, what it counts when there is none to keep.
 */
export type Tag = [plan: string | null, cycle: string | null, currency: string, reason?: string | null, stated?: string];
/**
 * A point: from `at` on the line is `amount` (in its tag's currency). A point in another currency
 * than the reporting one may carry `converted`: its amount in the reporting currency at the rate
 * of its month (`withConversions`); without it, no rate was known when it was last written.
 */
export type Point = [at: string, amount: string, flag: Flag, tag?: Tag, converted?: string];
export type Timeline = Record<string, Point[]>;

/** The prefix of a recurring order's line. */
const ORDER_LINE = 'O';
export const lineOf = {
  subscription: (id: number) => `S${id}`,
  imported: 'I',
  order: (orderNo: string) => `${ORDER_LINE}${orderNo}`,
  /** A subscription's scheduled moves (`F<id>`): what its schedules will move, never counted in the actuals. */
  schedule: (id: number) => `${SCHEDULE_LINE}${id}`,
};
/** The prefix of a subscription's schedule line: points `[at, signed move, a|c|d, tag]` (a conversion, a cancellation, a delinquent one). */
const SCHEDULE_LINE = 'F';
export const isScheduleLine = (line: string) => line.startsWith(SCHEDULE_LINE);

const ZERO = new Decimal(0);
const canon = (amount: Decimal.Value) => new Decimal(amount).toFixed();
/** A point; the tag's trailing nulls are left out (a cancellation without reason stores none). */
const point = (at: string, amount: Decimal.Value, flag: Flag, tag?: Tag): Point => {
  if (!tag) return [at, canon(amount), flag];
  const t = [...tag] as Tag;
  while (t.length > 3 && (t[t.length - 1] === null || t[t.length - 1] === undefined)) t.pop();
  return [at, canon(amount), flag, t];
};

/**
 * Sorted by time. A point that repeats the one before it is kept: recorded history arrives in any
 * order, and a later-arriving point may land between the two (dropping the repeat made the result
 * depend on arrival order). Repeats move no figure (`contributions` sees no change at them).
 */
const byTime = (a: Point, b: Point) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
const normalise = (points: Point[]): Point[] => [...points].sort(byTime);

/**
 * A change that set no amount keeps the line's: its point counts the amount of the point before it
 * when that one is active in the same currency, else the amount the record stated. Settled on every
 * change of the line, so history recorded later before it (a downgrade a year back) moves it too,
 * and the next change is measured from there.
 */
const keptAmounts = (points: Point[]): Point[] => {
  let before: Point | undefined;
  return points.map((p) => {
    const stated = p[3]?.[4];
    let out = p;
    if (stated !== undefined) {
      const kept = before && (before[2] === 'a' || before[2] === 'd') && before[3]?.[2] === p[3]?.[2] ? before[1] : stated;
      // Its converted amount, if any, was of the old amount: `withConversions` converts it again.
      if (kept !== p[1]) out = [p[0], kept, p[2], p[3]];
    }
    before = out;
    return out;
  });
};

const withLine = (tl: Timeline, line: string, points: Point[]): Timeline => {
  const next = { ...tl };
  const normal = keptAmounts(normalise(points));
  if (normal.length) next[line] = normal;
  else delete next[line];
  return next;
};

/** The line is `amount` from `at` on: later points of the line are superseded (API changes). */
export const setFrom = (tl: Timeline, line: string, at: string, amount: Decimal.Value, flag: Flag, tag?: Tag): Timeline =>
  withLine(tl, line, [...(tl[line] ?? []).filter((p) => p[0] < at), point(at, amount, flag, tag)]);

/** The line is `amount` from `at` until its next point (recorded history; a point at the same time is replaced). */
export const setAt = (tl: Timeline, line: string, at: string, amount: Decimal.Value, flag: Flag, tag?: Tag): Timeline =>
  withLine(tl, line, [...(tl[line] ?? []).filter((p) => p[0] !== at), point(at, amount, flag, tag)]);

/** Replaces a whole line (orders: the line follows from the order). */
export const replaceLine = (tl: Timeline, line: string, points: Point[]): Timeline => withLine(tl, line, points);

/** Movement attributes of the day and month items. */
export const MOVEMENTS = ['new', 'expansion', 'contraction', 'churn', 'reactivation'] as const;
export type Movement = (typeof MOVEMENTS)[number];

/**
 * How a change of a customer's total MRR is classified (docs/metrics.md, "Movements"), or null when it did not
 * move: 0 → more is `new` the first time, `reactivation` later; up `expansion`; down above 0
 * `contraction`; down to 0 `churn` (the last two negative).
 */
export const classify = (before: Decimal, after: Decimal, everPositive: boolean): { kind: Movement; amount: Decimal } | null => {
  if (after.eq(before)) return null;
  if (before.isZero()) return { kind: everPositive ? 'reactivation' : 'new', amount: after.minus(before) };
  if (after.isZero()) return { kind: 'churn', amount: after.minus(before) };
  return { kind: after.gt(before) ? 'expansion' : 'contraction', amount: after.minus(before) };
};

/** Aggregate item id → attribute → amount. Items: `D#<day>`, `M#<month>`, `C#<cohort>#<month>`. */
export type Contributions = Map<string, Map<string, Decimal>>;

/** Adds `v` to one attribute of one aggregate item (zero: nothing). */
export const addContribution = (out: Contributions, item: string, attr: string, v: Decimal) => {
  if (v.isZero()) return;
  const attrs = out.get(item) ?? new Map<string, Decimal>();
  // The first amount sets the precision of the sum (the sales figures' are 100-digit: lib/metrics/bookings.ts).
  const was = attrs.get(attr);
  attrs.set(attr, was ? was.plus(v) : v);
  out.set(item, attrs);
};

const isSubscriptionLine = (line: string) => line.startsWith('S');

/** A point's currency: its tag's, or the reporting currency for a point written before points had tags. */
const currencyOf = (p: Point, reportingCurrency: string) => p[3]?.[2] ?? reportingCurrency;

/**
 * Where the customer's imported line ends: the start of its earliest subscription line (the
 * imported line stands for history from before the customer had any subscription here), or null.
 * With `reportingCurrency`, only subscriptions in it count (the imported line is in it).
 */
export const importedLineEnd = (tl: Timeline, reportingCurrency?: string): string | null => {
  let end: string | null = null;
  for (const line in tl) {
    const pts = tl[line];
    if (!isSubscriptionLine(line) || !pts.length) continue;
    if (reportingCurrency !== undefined && currencyOf(pts[0], reportingCurrency) !== reportingCurrency) continue;
    if (end === null || pts[0][0] < end) end = pts[0][0];
  }
  return end;
};

/** The timeline as the figures read it: the imported line is 0 from its end on, so nothing is counted twice. */
const withImportedEnd = (tl: Timeline): Timeline => {
  const end = importedLineEnd(tl);
  const imported = tl[lineOf.imported];
  if (!end || !imported) return tl;
  const kept = imported.filter((p) => p[0] < end);
  return withLine(tl, lineOf.imported, kept.length ? [...kept, [end, '0', 'e']] : []);
};

/** A point in another currency as the reporting currency's figures count it: converted, or 0 outside them without a rate. */
const inReportingCurrency = (p: Point): Point =>
  // 0 is 0 at any rate: a cancellation, a pause or a trial needs none to count as what it is.
  p[4] !== undefined || p[1] === '0' ? [p[0], p[4] ?? '0', p[2], p[3]] : [p[0], '0', 'x', p[3]];

import { CONVERSION_SCALE, type RateBook } from '#lib/shared/money';
export { CONVERSION_SCALE, type RateBook };

/** The other currencies than the reporting one that points of `tl` are in. */
export const foreignCurrencies = (tl: Timeline, reportingCurrency: string): Set<string> => {
  const out = new Set<string>();
  for (const pts of Object.values(tl)) for (const p of pts) if (currencyOf(p, reportingCurrency) !== reportingCurrency) out.add(p[3]![2]);
  return out;
};

/**
 * The timeline with each point in another currency converted at the rate of its month (in the
 * reporting time zone, the month it counts in), or unconverted where that month has no rate. Lines
 * whose conversions do not change stay the same arrays (`changedLines` sees only the moved ones).
 */
export const withConversions = (tl: Timeline, reportingCurrency: string, rates: RateBook, zone = DEFAULT_TIMEZONE): Timeline => {
  let out: Timeline | null = null;
  for (const [line, pts] of Object.entries(tl)) {
    let next: Point[] | null = null;
    for (let i = 0; i < pts.length; i++) {
      const p = pts[i];
      const ccy = currencyOf(p, reportingCurrency);
      const rate = ccy === reportingCurrency ? undefined : rates.get(ccy)?.get(localDateOfIso(p[0], zone).slice(0, 7));
      const want =
        rate === undefined ? undefined : new Decimal(p[1]).times(rate).toDecimalPlaces(CONVERSION_SCALE, Decimal.ROUND_HALF_UP).toFixed();
      if (p[4] === want) continue;
      next ??= [...pts];
      next[i] = want === undefined ? (p.slice(0, 4) as Point) : [p[0], p[1], p[2], p[3]!, want];
    }
    if (next) (out ??= { ...tl })[line] = next;
  }
  return out ?? tl;
};

/**
 * What the reporting currency's figures leave out for want of a rate, as levels per currency
 * (`u<CCY>` on the day and month items): at each change of a line in another currency, the change
 * of its unconverted amount (in that currency).
 */
const unconvertedLevels = (
  stored: Timeline,
  reportingCurrency: string,
  zone: string,
  filter: LineFilter = {},
  lines: Iterable<string> = Object.keys(stored),
): Contributions => {
  const out: Contributions = new Map();
  // Only the reporting currency's figures convert; a plan or cycle segment's leave out only its own points.
  if (filter.currency !== undefined) return out;
  const matches = lineMatcher(filter);
  for (const line of lines) {
    if (isScheduleLine(line)) continue;
    const pts = stored[line] ?? [];
    let was: { ccy: string; amount: Decimal } | null = null;
    for (const p of pts) {
      const ccy = currencyOf(p, reportingCurrency);
      if (ccy === reportingCurrency) continue;
      const now = p[4] === undefined && p[1] !== '0' && matches(p) ? { ccy, amount: new Decimal(p[1]) } : null;
      const day = localDateOfIso(p[0], zone);
      for (const period of [`D#${day}`, `M#${day.slice(0, 7)}`]) {
        if (was) addContribution(out, period, unconvertedAttr(was.ccy), was.amount.negated());
        if (now) addContribution(out, period, unconvertedAttr(now.ccy), now.amount);
      }
      was = now;
    }
  }
  return difference(new Map(), out);
};
/** The attribute of an unconverted level: `u` and the currency (`uUSD`). */
export const unconvertedAttr = (currency: string) => `u${currency}`;
export const UNCONVERTED_ATTR = /^u([A-Z]{3})$/;

/** A slice of the figures (docs/metrics.md, "Segments"): one plan, one billing cycle or one currency. */
export const SEGMENT_DIMENSIONS = ['plan', 'billing_cycle', 'currency'] as const;
export type SegmentDimension = (typeof SEGMENT_DIMENSIONS)[number];
/** A stored slice's segment: the MRR figures' dimensions, or the sales figures' (lib/metrics/bookings.ts). */
export type Segment = { dimension: SegmentDimension | SalesDimension; value: string };

/**
 * The timeline a figure reads: the lines in the figure's currency (a currency segment's, in it;
 * else the reporting currency's and every other currency's converted, `x` 0 where a point has no
 * rate), the imported line ended, and in a plan or billing-cycle segment each point
 * outside it as 0 (`x`: neither live nor active nor a cancellation), lines never in it left out.
 * So a segmented figure is the computation over only the matching lines; a subscription changing
 * plan leaves one plan's figures (its MRR there goes to 0) and joins the other's.
 */
export const viewOf = (stored: Timeline, reportingCurrency: string, segment: Segment | null = null): Timeline =>
  viewWhere(stored, reportingCurrency, filterOf(segment));

/**
 * The lines a segment read from customers' timelines counts (docs/metrics.md, "Segments"): points
 * of any of `plans`, of `billing_cycle`, in `currency` (in it; without one, in the reporting
 * currency, others converted, as for the whole). Every filter left out matches every point.
 */
export type LineFilter = { plans?: readonly string[]; billing_cycle?: string; currency?: string };

/**
 * `viewOf` for any combination of line filters: the lines in the filter's currency (or converted),
 * the imported line ended, each point outside the plans or cycle as 0 (`x`), lines never in them
 * left out.
 */
export const viewWhere = (stored: Timeline, reportingCurrency: string, filter: LineFilter): Timeline => {
  const currency = filter.currency ?? reportingCurrency;
  const inCurrency: Timeline = {};
  const converted: Timeline = {};
  for (const [line, pts] of Object.entries(stored)) {
    if (isScheduleLine(line)) continue; // the future: only the forecast counts it
    const kept = pts.every((p) => currencyOf(p, reportingCurrency) === currency)
      ? pts
      : pts.filter((p) => currencyOf(p, reportingCurrency) === currency);
    if (kept.length) inCurrency[line] = kept;
    // The reporting currency's figures take other currencies' points converted; a point without a rate counts 0 (`x`).
    if (filter.currency !== undefined || kept.length === pts.length) continue;
    const foreign = pts.filter((p) => currencyOf(p, reportingCurrency) !== reportingCurrency);
    converted[line] = [...(inCurrency[line] ?? []), ...foreign.map(inReportingCurrency)].sort(byTime);
  }
  // The imported line ends at the first subscription in the reporting currency (the line it stands in for).
  const tl = { ...withImportedEnd(inCurrency), ...converted };
  if (!filter.plans && filter.billing_cycle === undefined) return tl;
  const matches = lineMatcher(filter);
  const out: Timeline = {};
  for (const [line, pts] of Object.entries(tl)) {
    if (!pts.some(matches)) continue;
    out[line] = pts.map((p) => (matches(p) ? p : [p[0], '0', 'x', p[3]]));
  }
  return out;
};

/** Whether a point is in a filter's plans and cycle (its currency is the view's business). */
const lineMatcher =
  ({ plans, billing_cycle: cycle }: LineFilter) =>
  (p: Point) =>
    (!plans || (p[3]?.[0] != null && plans.includes(p[3][0]))) && (cycle === undefined || p[3]?.[1] === cycle);

/** What one customer's lines matching `filter` add to the figures (`contributions` of a filtered view; no churn by reason). */
export const contributionsWhere = (
  stored: Timeline,
  reportingCurrency: string,
  filter: LineFilter,
  zone = DEFAULT_TIMEZONE,
): Contributions => {
  const out = scan(viewWhere(stored, reportingCurrency, filter), null, false, zone);
  addContributions(out, unconvertedLevels(stored, reportingCurrency, zone, filter));
  return out;
};

/** A stored segment as a line filter (the whole: none). */
const filterOf = (segment: Segment | null): LineFilter =>
  !segment ? {} : segment.dimension === 'plan' ? { plans: [segment.value] } : { [segment.dimension]: segment.value };

/** The segments whose figures a change from `before` to `after` can move (the reporting currency's is the whole). */
const segmentsMoved = (before: Timeline, after: Timeline, reportingCurrency: string): Segment[] => {
  const lines = changedLines(before, after).filter((line) => !isScheduleLine(line));
  // A subscription line moving can move the imported line's end, and with it that line's segments.
  if (lines.some(isSubscriptionLine) && (before[lineOf.imported] || after[lineOf.imported])) lines.push(lineOf.imported);
  const seen = new Map<string, Segment>();
  const add = (dimension: SegmentDimension, value: string | null | undefined) => {
    if (value === null || value === undefined) return;
    if (dimension === 'currency' && value === reportingCurrency) return;
    seen.set(`${dimension}\u0000${value}`, { dimension, value });
  };
  for (const line of lines) {
    for (const p of [...(before[line] ?? []), ...(after[line] ?? [])]) {
      if (!p[3]) continue;
      add('plan', p[3][0]);
      add('billing_cycle', p[3][1]);
      add('currency', p[3][2]);
    }
  }
  // A customer with other currencies differs between the whole and its own currency's lines: any change moves that difference.
  const segments = [...seen.values()];
  if (foreignCurrencies(before, reportingCurrency).size || foreignCurrencies(after, reportingCurrency).size)
    segments.push({ dimension: 'currency', value: reportingCurrency });
  return segments;
};

/**
 * What one customer's timeline adds to the aggregates. At every change time (in order) the total
 * before and after it classify one movement; the day and month items get the movement, the change
 * of active customers (`customers`: MRR above 0), of active subscriptions (`subscriptions`: lines
 * flagged `a`) and customer churn (`churned`: a cancellation leaving no live line); the customer's
 * cohort (the month of its `new`) gets `joined` and `start` (its MRR right then) once and, per
 * month, the change of its MRR and of whether it is above 0. The whole (segment null) also counts
 * churn by cancellation reason (`RD#`/`RM#` items).
 */
export const contributions = (
  stored: Timeline,
  reportingCurrency: string,
  segment: Segment | null = null,
  zone = DEFAULT_TIMEZONE,
): Contributions => {
  const out = storedFigures(stored, reportingCurrency, segment, null, zone);
  if (segment === null) addContributions(out, forecastFigures(stored, reportingCurrency, zone));
  return out;
};

/**
 * What a customer's schedule lines add to the forecast (GET /metrics/forecast): per month of the
 * scheduled time (in `zone`), `new` (trial conversions), `churn` (scheduled and delinquent
 * cancellations, negative) and of it `delinquent_churn`, in the reporting currency (another
 * currency converted at its month's rate, or left out as `u<CCY>` without one). The whole only.
 */
export const forecastFigures = (tl: Timeline, reportingCurrency: string, zone: string): Contributions => {
  const out: Contributions = new Map();
  for (const [line, pts] of Object.entries(tl)) {
    if (!isScheduleLine(line)) continue;
    for (const p of pts) {
      const id = `F#${localDateOfIso(p[0], zone).slice(0, 7)}`;
      const currency = currencyOf(p, reportingCurrency);
      const amount = currency === reportingCurrency ? p[1] : p[4];
      if (amount === undefined) {
        addContribution(out, id, unconvertedAttr(currency), new Decimal(p[1]));
        continue;
      }
      const move = new Decimal(amount);
      addContribution(out, id, p[2] === 'a' ? 'new' : 'churn', move);
      if (p[2] === 'd') addContribution(out, id, 'delinquent_churn', move);
    }
  }
  return out;
};

/**
 * Whether a segment is the reporting currency's own lines. It is stored as its difference from the
 * whole (a read adds the whole's items and its): only customers with points in another currency
 * differ there, so a write of a customer in the reporting currency alone moves nothing more.
 */
export const isReportingSegment = (segment: Segment | null, reportingCurrency: string) =>
  segment?.dimension === 'currency' && segment.value === reportingCurrency;

/** The contributions of a filtered view from `from` on, with what it leaves unconverted over `lines`. */
const sliceFigures = (
  tl: Timeline,
  reportingCurrency: string,
  filter: LineFilter,
  reasons: boolean,
  from: string | null,
  zone: string,
  lines?: Iterable<string>,
): Contributions => {
  const out = scan(viewWhere(tl, reportingCurrency, filter), from, reasons, zone);
  addContributions(out, unconvertedLevels(tl, reportingCurrency, zone, filter, lines));
  return out;
};

/** What a customer adds to one stored slice: the whole (with churn by reason), a segment, or the reporting currency's difference from the whole. */
const storedFigures = (
  tl: Timeline,
  reportingCurrency: string,
  segment: Segment | null,
  from: string | null,
  zone: string,
  lines?: Iterable<string>,
): Contributions =>
  isReportingSegment(segment, reportingCurrency)
    ? difference(
        sliceFigures(tl, reportingCurrency, {}, false, from, zone, lines),
        sliceFigures(tl, reportingCurrency, { currency: reportingCurrency }, false, from, zone, lines),
      )
    : sliceFigures(tl, reportingCurrency, filterOf(segment), segment === null, from, zone, lines);

/** What the stored slices of the figures add up to: the whole (id '') and each segment (by dimension and value). */
export type Slice = { segment: Segment | null; target: Contributions };
export const newSlices = (): Map<string, Slice> => new Map([['', { segment: null, target: new Map() }]]);
const sliceId = (segment: Segment | null) => (segment ? `${segment.dimension}\u0000${segment.value}` : '');

/**
 * Adds one customer's timeline (converted as it counts) to `slices`: to the whole and to every
 * segment it has points in, in `zone`'s days. What a rebuild or a generation build sums.
 */
export const addToSlices = (slices: Map<string, Slice>, tl: Timeline, reportingCurrency: string, zone: string) => {
  for (const segment of [null, ...segmentsOf(tl, reportingCurrency)]) {
    const slice = slices.get(sliceId(segment)) ?? { segment, target: new Map() };
    slices.set(sliceId(segment), slice);
    addContributions(slice.target, contributions(tl, reportingCurrency, segment, zone));
  }
};

/** Adds figures to one slice of `slices` (the whole: segment null), made when first named. */
export const addToSlice = (slices: Map<string, Slice>, segment: Segment | null, figures: Contributions) => {
  const slice = slices.get(sliceId(segment)) ?? { segment, target: new Map() };
  slices.set(sliceId(segment), slice);
  addContributions(slice.target, figures);
};

/** The segments a timeline has points in (the reporting currency's is the whole). */
export const segmentsOf = (tl: Timeline, reportingCurrency: string): Segment[] => {
  const seen = new Map<string, Segment>();
  for (const [line, pts] of Object.entries(tl)) {
    if (isScheduleLine(line)) continue;
    for (const p of pts) {
      if (!p[3]) continue;
      const [plan, cycle, currency] = p[3];
      if (plan !== null) seen.set(`plan\u0000${plan}`, { dimension: 'plan', value: plan });
      if (cycle !== null) seen.set(`billing_cycle\u0000${cycle}`, { dimension: 'billing_cycle', value: cycle });
      if (currency !== reportingCurrency) seen.set(`currency\u0000${currency}`, { dimension: 'currency', value: currency });
    }
  }
  // Points in other currencies: the reporting currency's lines differ from the whole (`isReportingSegment`).
  if ([...seen.values()].some((g) => g.dimension === 'currency'))
    seen.set(`currency\u0000${reportingCurrency}`, { dimension: 'currency', value: reportingCurrency });
  return [...seen.values()];
};

/** Index of the last point of `pts` (sorted) before `t`, or -1. */
const lastBefore = (pts: Point[], t: string) => {
  let lo = 0;
  let hi = pts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (pts[mid][0] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
};

const sameTag = (a: Tag | undefined, b: Tag | undefined) =>
  a === b || (!!a && !!b && a.length === b.length && a.every((v, i) => v === b[i]));
const samePoint = (p: Point, q: Point) => p[0] === q[0] && p[1] === q[1] && p[2] === q[2] && sameTag(p[3], q[3]) && p[4] === q[4];

/**
 * The lines whose arrays differ between two timelines. A change copies only the lines it moves (the
 * others are the same arrays), so this costs a look per line and nothing per point.
 */
export const changedLines = (a: Timeline, b: Timeline): string[] => {
  const out: string[] = [];
  for (const line of Object.keys(a)) if (a[line] !== b[line]) out.push(line);
  for (const line of Object.keys(b)) if (a[line] === undefined) out.push(line);
  return out;
};

/**
 * The first instant at which two timelines differ (null: they are the same). Lines a change did
 * not touch are the same arrays (a change copies only the lines it moves), so only those are compared.
 */
export const firstDifference = (a: Timeline, b: Timeline): string | null => {
  let t0: string | null = null;
  for (const line of changedLines(a, b)) {
    const x = a[line] ?? [];
    const y = b[line] ?? [];
    for (let i = 0; i < Math.max(x.length, y.length); i++) {
      if (x[i] && y[i] && samePoint(x[i], y[i])) continue;
      const t = !x[i] ? y[i][0] : !y[i] ? x[i][0] : x[i][0] < y[i][0] ? x[i][0] : y[i][0];
      if (t0 === null || t < t0) t0 = t;
      break;
    }
  }
  return t0;
};

/** What a change moves in one slice of the figures (segment null: the whole). */
export type SegmentMoves = { segment: Segment | null; moves: Contributions };

/**
 * `after − before` of two timelines' contributions, for the whole and for every segment the change
 * touches, computed from the first instant the timelines differ: what comes before it is the same
 * in both and cancels out, so a change today costs what its own day costs, however long the
 * history; a back-dated one, what follows it.
 */
export const contributionChange = (
  before: Timeline,
  after: Timeline,
  reportingCurrency: string,
  zone: string = DEFAULT_TIMEZONE,
): SegmentMoves[] => {
  const t0 = firstDifference(before, after);
  if (t0 === null) return [];
  const moved = changedLines(before, after);
  const [was0, now0] = withoutDormant(before, after, t0, new Set(moved));
  const out: SegmentMoves[] = [];
  for (const segment of [null, ...segmentsMoved(before, after, reportingCurrency)]) {
    // What is left out for want of a rate, over the lines that moved (the others' cancel out).
    const was = storedFigures(was0, reportingCurrency, segment, t0, zone, moved);
    const now = storedFigures(now0, reportingCurrency, segment, t0, zone, moved);
    const moves = difference(was, now);
    // The schedules' forecast, in the whole only (their lines are few: a customer's live subscription's).
    if (segment === null)
      addContributions(
        moves,
        difference(forecastFigures(before, reportingCurrency, zone), forecastFigures(after, reportingCurrency, zone)),
      );
    if (moves.size) out.push({ segment, moves });
  }
  return out;
};

/** Whether a line is an order's that ended at 0 before `upTo` (raw and converted): it adds nothing from then on. */
const endedOrderLine = (line: string, pts: Point[], upTo: string) => {
  if (!line.startsWith(ORDER_LINE) || !pts.length) return false;
  const last = pts[pts.length - 1];
  return last[0] < upTo && last[1] === '0' && (last[4] === undefined || last[4] === '0') && last[2] !== 'a' && last[2] !== 'p';
};

/** `tl` without the order lines ended at 0 before `upTo`: a customer's standing from then on costs its open lines. */
const withoutEndedOrders = (tl: Timeline, upTo: string): Timeline => {
  const out: Timeline = {};
  for (const line of Object.keys(tl)) if (!endedOrderLine(line, tl[line], upTo)) out[line] = tl[line];
  return out;
};

/**
 * `before` and `after` without the order lines that can move nothing from `t0` on: unchanged, every
 * point before `t0`, ended at 0 (an order line is never live nor a subscription), so they add
 * nothing to the running totals there. Only an earliest positive point can still matter (it sets
 * the cohort), so of those lines the earliest in each cycle and currency stays, raw and converted
 * (every view's earliest positive point is among them). A customer with thousands of past orders
 * so costs its changed and open lines, not its history; the figures are the same.
 */
const withoutDormant = (before: Timeline, after: Timeline, t0: string, moved: ReadonlySet<string>): [Timeline, Timeline] => {
  const kept = new Map<string, { line: string; at: string }>();
  const dormant = new Set<string>();
  const keep = (key: string, line: string, at: string | undefined) => {
    if (at === undefined) return;
    const was = kept.get(key);
    if (!was || at < was.at) kept.set(key, { line, at });
  };
  // Amounts are canonical decimal strings (`toFixed`): positive when unsigned and not all zeros.
  const positive = (v: string | undefined) => v !== undefined && v[0] !== '-' && /[1-9]/.test(v);
  for (const [line, pts] of Object.entries(before)) {
    if (moved.has(line) || !endedOrderLine(line, pts, t0)) continue;
    // Two points at one instant: kept whole (which of them counts there is the scan's business).
    if (pts.some((p, j) => j > 0 && p[0] === pts[j - 1][0])) continue;
    dormant.add(line);
    const group = `${pts[0][3]?.[1] ?? ''}\u0000${pts[0][3]?.[2] ?? ''}`;
    keep(`${group}\u0000raw`, line, pts.find((p) => positive(p[1]))?.[0]);
    keep(`${group}\u0000converted`, line, pts.find((p) => positive(p[4]))?.[0]);
  }
  if (dormant.size < 2) return [before, after];
  for (const { line } of kept.values()) dormant.delete(line);
  // The lines left: the others of `before`, and those of `after` (its lines not in `before` moved).
  const open = [...Object.keys(before).filter((line) => !dormant.has(line)), ...moved];
  const without = (tl: Timeline) => {
    const out: Timeline = {};
    for (const line of open) if (tl[line]) out[line] = tl[line];
    return out;
  };
  return [without(before), without(after)];
};

/**
 * The contributions of a timeline (the imported line already ended) from `from` on (null: all of
 * it), starting from the state just before `from`: each line's last point, the totals, and the
 * cohort (amounts are never negative, so the total first went above 0 at the earliest positive
 * point of any line).
 */
const scan = (tl: Timeline, from: string | null, reasons = false, zone = DEFAULT_TIMEZONE): Contributions => {
  // Days and months are the merchant's reporting time zone's (point times stay UTC).
  const dayOf = (t: string) => localDateOfIso(t, zone);
  const current = new Map<string, Point>();
  const points: { line: string; p: Point }[] = [];
  let mrr = ZERO;
  let liveLines = 0;
  let subs = 0;
  let pastDue = ZERO;
  let cohort: string | null = null;
  const isLive = (p: Point | undefined) => p !== undefined && (p[2] === 'a' || p[2] === 'p' || p[2] === 'd');
  // A past-due subscription's MRR and an order line in its renewal grace are both past due.
  const pastDueOf = (p: Point | undefined) => (p !== undefined && isPastDue(p) && p[1] !== '0' ? p[1] : 0);
  const isActiveSub = (line: string, p: Point | undefined) => p !== undefined && p[2] === 'a' && isSubscriptionLine(line);
  let firstPositive: string | null = null;
  for (const [line, pts] of Object.entries(tl)) {
    const i = from === null ? -1 : lastBefore(pts, from);
    if (i >= 0) {
      const p = pts[i];
      // Only a line with points from `from` on is looked up again.
      if (i < pts.length - 1) current.set(line, p);
      if (p[1] !== '0') mrr = mrr.plus(p[1]);
      if (isPastDue(p)) pastDue = pastDue.plus(pastDueOf(p));
      liveLines += Number(isLive(p));
      subs += Number(isActiveSub(line, p));
      // Only a line starting before the earliest positive point found so far can move it.
      for (let j = 0; j <= i && (firstPositive === null || pts[j][0] < firstPositive); j++) {
        // A line's value after an instant is its last point at that instant.
        if (j < i && pts[j + 1][0] === pts[j][0]) continue;
        if (pts[j][1] !== '0' && new Decimal(pts[j][1]).gt(0)) {
          if (firstPositive === null || pts[j][0] < firstPositive) firstPositive = pts[j][0];
          break;
        }
      }
    }
    for (let j = i + 1; j < pts.length; j++) points.push({ line, p: pts[j] });
  }
  if (firstPositive !== null) cohort = dayOf(firstPositive).slice(0, 7);
  // The points from `from` on, in time order; the running totals move by each line's change.
  points.sort((a, b) => (a.p[0] < b.p[0] ? -1 : a.p[0] > b.p[0] ? 1 : 0));
  const out: Contributions = new Map();
  for (let i = 0; i < points.length; ) {
    const t = points[i].p[0];
    let nextMrr = mrr;
    let nextLive = liveLines;
    let nextSubs = subs;
    let nextPastDue = pastDue;
    let cancelled = false;
    // The reason of the cancellation that took the most MRR at this instant (by line name on a tie).
    let reason: { of: string | null; took: Decimal; line: string } | null = null;
    for (; i < points.length && points[i].p[0] === t; i++) {
      const { line, p } = points[i];
      const prev = current.get(line);
      nextMrr = nextMrr.plus(p[1]).minus(prev ? prev[1] : 0);
      nextLive += Number(isLive(p)) - Number(isLive(prev));
      nextSubs += Number(isActiveSub(line, p)) - Number(isActiveSub(line, prev));
      if (isPastDue(p) || (prev && isPastDue(prev))) nextPastDue = nextPastDue.plus(pastDueOf(p)).minus(pastDueOf(prev));
      if (p[2] === 't' || prev?.[2] === 't') addTrial(out, p, prev, dayOf);
      if ((p[2] === 'd') !== (prev?.[2] === 'd')) addPastDue(out, p, prev, dayOf);
      if (p[2] === 'c') {
        cancelled = true;
        const took = new Decimal(prev ? prev[1] : 0);
        if (!reason || took.gt(reason.took) || (took.eq(reason.took) && line < reason.line)) reason = { of: p[3]?.[3] ?? null, took, line };
      }
      current.set(line, p);
    }
    const day = dayOf(t);
    const month = day.slice(0, 7);
    const periods = [`D#${day}`, `M#${month}`];
    const movement = classify(mrr, nextMrr, cohort !== null);
    if (!cohort && nextMrr.gt(0)) {
      cohort = month;
      // A cohort's figures are its members and their MRR right after it first went above 0.
      addContribution(out, `C#${cohort}#${cohort}`, 'joined', new Decimal(1));
      addContribution(out, `C#${cohort}#${cohort}`, 'start', nextMrr);
    }
    const activeChange = new Decimal(Number(nextMrr.gt(0)) - Number(mrr.gt(0)));
    const churned = liveLines > 0 && nextLive === 0 && cancelled;
    for (const period of periods) {
      if (movement) addContribution(out, period, movement.kind, movement.amount);
      addContribution(out, period, 'customers', activeChange);
      addContribution(out, period, 'subscriptions', new Decimal(nextSubs - subs));
      addContribution(out, period, 'past_due', nextPastDue.minus(pastDue));
      if (churned) addContribution(out, period, 'churned', new Decimal(1));
      // Churn whose cancellation was a failed renewal's (reason `delinquent`): involuntary.
      if (movement?.kind === 'churn' && reason?.of === DELINQUENT) addContribution(out, period, 'delinquent_churn', movement.amount);
    }
    // Churn by reason: the MRR a cancellation took to 0 and the customers it churned.
    if (reasons && reason && (churned || movement?.kind === 'churn')) {
      for (const period of [churnReasonId('D', day, reason.of), churnReasonId('M', month, reason.of)]) {
        if (movement?.kind === 'churn') addContribution(out, period, 'churn', movement.amount);
        if (churned) addContribution(out, period, 'churned', new Decimal(1));
      }
    }
    if (cohort) {
      addContribution(out, `C#${cohort}#${month}`, 'mrr', nextMrr.minus(mrr));
      addContribution(out, `C#${cohort}#${month}`, 'customers', activeChange);
    }
    mrr = nextMrr;
    liveLines = nextLive;
    subs = nextSubs;
    pastDue = nextPastDue;
  }
  return out;
};

const isPastDue = (p: Point) => p[2] === 'd' || p[2] === 'g';

/** The cancellation reason of a past-due subscription cancelled on its own (lib/subscriptions). */
const DELINQUENT = 'delinquent';
const ONE = new Decimal(1);

/**
 * A past-due episode's figures (GET /metrics/recovery), in the day and month they happen: it starts
 * when a line turns `d` (`past_due_started`, its MRR); it ends recovered when the line is active
 * again (`recovered`), or churned when a delinquent cancellation ends it (`delinquent`), each with
 * the MRR it had. Leaving a segment or the line otherwise ends it neither way.
 */
const addPastDue = (out: Contributions, p: Point, prev: Point | undefined, dayOf: (t: string) => string) => {
  const day = dayOf(p[0]);
  const ended = prev?.[2] === 'd' ? (p[2] === 'a' ? 'recovered' : p[2] === 'c' && p[3]?.[3] === DELINQUENT ? 'delinquent' : null) : null;
  const [what, amount] = p[2] === 'd' ? ['past_due_started', p[1]] : [ended, prev![1]];
  if (!what) return;
  for (const period of [`D#${day}`, `M#${day.slice(0, 7)}`]) {
    addContribution(out, period, what, ONE);
    if (amount !== '0') addContribution(out, period, `${what}_mrr`, new Decimal(amount));
  }
};

/**
 * A trial's figures, in the day and month its trial started (its `t` point): `trials` when it
 * starts; when its line leaves `t`, `trials_cancelled` (a cancellation) or `trials_converted` and
 * the seconds it took (`trial_seconds`). A trial still running is started less the other two.
 */
const addTrial = (out: Contributions, p: Point, prev: Point | undefined, dayOf: (t: string) => string) => {
  const started = prev?.[2] === 't' ? prev : p[2] === 't' ? p : null;
  if (!started || (p[2] === 't' && prev?.[2] === 't')) return;
  const day = dayOf(started[0]);
  const periods = [`D#${day}`, `M#${day.slice(0, 7)}`];
  for (const period of periods) {
    if (p === started) addContribution(out, period, 'trials', ONE);
    else if (p[2] === 'c') addContribution(out, period, 'trials_cancelled', ONE);
    else {
      addContribution(out, period, 'trials_converted', ONE);
      addContribution(out, period, 'trial_seconds', new Decimal((Date.parse(p[0]) - Date.parse(started[0])) / 1000));
    }
  }
};

/**
 * The contribution id of churn by reason in a day (`D`) or month (`M`): `R<D|M>#<period>#<reason>`,
 * the reason URI-encoded (no `#` in it), empty for a cancellation without one.
 */
export const churnReasonId = (kind: 'D' | 'M', period: string, reason: string | null) =>
  `R${kind}#${period}#${reason === null ? '' : keyText(reason)}`;
/** The reason a churn-reason id or sort key names (null: none given). */
export const reasonOfId = (encoded: string): string | null => (encoded === '' ? null : decodeURIComponent(encoded));

/** Adds every entry of `from` into `into` (a merchant's total of its customers' contributions). */
export const addContributions = (into: Contributions, from: Contributions) => {
  for (const [item, attrs] of from) for (const [attr, v] of attrs) addContribution(into, item, attr, v);
};

/** `after − before`, item by item, without zero entries. */
export const difference = (before: Contributions, after: Contributions): Contributions => {
  const out: Contributions = new Map();
  for (const [item, attrs] of after) for (const [attr, v] of attrs) addContribution(out, item, attr, v);
  for (const [item, attrs] of before) for (const [attr, v] of attrs) addContribution(out, item, attr, v.negated());
  for (const [item, attrs] of out) {
    for (const [attr, v] of attrs) if (v.isZero()) attrs.delete(attr);
    if (!attrs.size) out.delete(item);
  }
  return out;
};

/** Monthly share of a recurring order (fixed scale: 10 fraction digits), stored as it is; rounding only on output. */
export const ORDER_SHARE_SCALE = 10;
export const CYCLE_MONTHS: Record<string, number> = { monthly: 1, quarterly: 3, 'semi-annual': 6, yearly: 12 };

export type OrderFacts = {
  status: string;
  amount: string;
  currency: string;
  billing_cycle: string;
  paid_at: string | null;
};

/**
 * The line of a recurring order, from the order as it now is: a paid order with a recurring cycle
 * is its monthly share from paid_at to the end of its cycle, tagged with its cycle and currency (the
 * figures in the reporting currency leave other currencies out, `viewOf`). Any other order
 * (pending, failed, cancelled, refunded, one-time) has no line at all: an order that stops
 * counting leaves every figure, for all of history, as if it had never counted, so the figures
 * never depend on when the change was made.
 */
export const orderLine = (order: OrderFacts | null): Point[] => {
  const months = order ? CYCLE_MONTHS[order.billing_cycle] : undefined;
  if (!order || !months || !order.paid_at || order.status !== 'paid') return [];
  const share = new Decimal(order.amount).div(months).toDecimalPlaces(ORDER_SHARE_SCALE, Decimal.ROUND_HALF_UP).toFixed();
  const tag: Tag = [null, order.billing_cycle, order.currency];
  return [
    [order.paid_at, share, 'o', tag],
    [timestampPlusMonths(order.paid_at, months), '0', 'o', tag],
  ];
};

/** Whether a line is a recurring order's. */
export const isOrderLine = (line: string) => line.startsWith(ORDER_LINE);

/** An order line as `orderLine` made it, from its first point: its start, share, tag and the end of its paid period. */
const paidPeriod = (line: string, pts: Point[]) => {
  const first = pts[0];
  const months = CYCLE_MONTHS[first[3]?.[1] ?? ''] ?? 1;
  return { line, first, start: first[0], end: timestampPlusMonths(first[0], months) };
};

/** A timeline's order lines as paid periods, in the order of the chain: by payment, ties by line name. */
const paidPeriods = (tl: Timeline) =>
  Object.entries(tl)
    .filter(([line, pts]) => isOrderLine(line) && pts.length > 0)
    .map(([line, pts]) => paidPeriod(line, pts))
    .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.line < b.line ? -1 : a.line > b.line ? 1 : 0));

/**
 * Renewals of recurring orders (docs/metrics.md, "Renewals"): a customer's order lines chained, in
 * order of payment (ties by order number). An order paid within `graceDays` after the end of the
 * period the order before it covered continues it: that order's share still counts over the gap,
 * flagged `g` (past due), and stops when the renewal starts, so the gap is neither churn nor
 * reactivation (a renewal at another amount is an expansion or a contraction). The last order's
 * period, once over, is in its grace until `graceDays` after its end; once that is before `asOf`
 * (the time the timeline was last settled) the grace has run out and the line ends at the end of
 * its paid period, the figures from then on restated. Every other order line is as `orderLine`
 * made it. Pure and idempotent: each line is derived again from its first point.
 */
export const withRenewals = (tl: Timeline, graceDays: number, asOf: string): Timeline => {
  const periods = paidPeriods(tl);
  if (!periods.length) return tl;
  let out: Timeline | null = null;
  for (let i = 0; i < periods.length; i++) {
    const { line, first, end } = periods[i];
    const next = periods[i + 1];
    const graceEnd = timestampPlusDays(end, graceDays);
    const tag = first[3];
    const at = (t: string, amount: string, flag: Flag): Point => (tag ? [t, amount, flag, tag] : [t, amount, flag]);
    const ended: Point[] = [first, at(end, '0', 'o')];
    const want: Point[] = next
      ? next.start > end && next.start <= graceEnd
        ? [first, at(end, first[1], 'g'), at(next.start, '0', 'o')]
        : ended
      : asOf > graceEnd
        ? ended
        : [first, at(end, first[1], 'g')];
    const have = tl[line];
    if (have.length === want.length && have.every((p, j) => p[0] === want[j][0] && p[1] === want[j][1] && p[2] === want[j][2])) continue;
    (out ??= { ...tl })[line] = want;
  }
  return out ?? tl;
};

/**
 * When the renewal grace of `tl`'s last order runs out (the scheduler settles the timeline then),
 * or null when none is running at `asOf`.
 */
export const renewalGraceEnd = (tl: Timeline, graceDays: number, asOf: string): string | null => {
  const last = paidPeriods(tl).at(-1);
  if (!last) return null;
  const graceEnd = timestampPlusDays(last.end, graceDays);
  return asOf > graceEnd ? null : graceEnd;
};

/**
 * A long timeline stored in parts (chunks) of at most `limit` bytes of JSON, each holding the
 * points from its start (a period: a month `YYYY-MM`, or finer when one month is too big alone)
 * up to the next chunk's start; the first also holds anything earlier. A change rewrites only the
 * chunks whose points it moves; a chunk that outgrows the limit is split in two or more by period
 * (never merged back), so the boundaries of the others stay where they are and a back-dated change
 * costs its own chunks, not the history after it. Returns start → that chunk's JSON.
 */
const PERIOD_LENGTHS = [7, 10, 13, 16, 19];
type Located = { line: string; p: Point };
const locate = (tl: Timeline, lines: string[]): Located[] => lines.flatMap((line) => (tl[line] ?? []).map((p) => ({ line, p })));
/** A chunk's JSON, canonical (lines in name order, points in time order) so an unchanged chunk compares equal. */
const partOf = (members: Located[]) => {
  const byLine = new Map<string, Point[]>();
  for (const { line, p } of members) byLine.set(line, [...(byLine.get(line) ?? []), p]);
  const part: Timeline = {};
  for (const line of [...byLine.keys()].sort()) part[line] = normalise(byLine.get(line)!);
  return JSON.stringify(part);
};

/** Consecutive periods packed into pieces of at most `limit` (a period too big alone is cut finer). */
const pack = (members: Located[], limit: number, level = 0): { start: string; members: Located[] }[] => {
  const byPeriod: { period: string; members: Located[] }[] = [];
  for (const x of [...members].sort((a, b) => (a.p[0] < b.p[0] ? -1 : a.p[0] > b.p[0] ? 1 : 0))) {
    const period = x.p[0].slice(0, PERIOD_LENGTHS[level]);
    if (byPeriod.at(-1)?.period === period) byPeriod.at(-1)!.members.push(x);
    else byPeriod.push({ period, members: [x] });
  }
  const pieces: { start: string; members: Located[] }[] = [];
  for (const g of byPeriod) {
    const alone = Buffer.byteLength(partOf(g.members)) > limit && level < PERIOD_LENGTHS.length - 1;
    if (alone) {
      pieces.push(...pack(g.members, limit, level + 1));
      continue;
    }
    const last = pieces.at(-1);
    if (last && Buffer.byteLength(partOf([...last.members, ...g.members])) <= limit) last.members.push(...g.members);
    else pieces.push({ start: g.period, members: [...g.members] });
  }
  return pieces;
};

/**
 * `previous`: the chunks of the timeline before the change; `before`: that timeline, when known. With
 * both, only the chunks holding points of a changed line (before or after) are recomputed, from their
 * stored JSON, and the others keep theirs: a change costs its own chunks, not the customer's history.
 */
export const chunkTimeline = (tl: Timeline, limit: number, previous?: Map<string, string>, before?: Timeline): Map<string, string> => {
  const starts = previous ? [...previous.keys()].sort() : [];
  if (!starts.length) return new Map(pack(locate(tl, Object.keys(tl)), limit).map((piece) => [piece.start, partOf(piece.members)]));
  // Each point to the chunk it falls in: the last start at or before it (the first chunk also takes what is earlier).
  const chunkOf = (at: string) => {
    let lo = 0;
    let hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid] <= at) lo = mid + 1;
      else hi = mid;
    }
    return starts[Math.max(0, lo - 1)];
  };
  const members = new Map<string, Located[]>(starts.map((st) => [st, []]));
  const kept = new Set<string>();
  if (before) {
    const moved = changedLines(before, tl);
    const touched = new Set(moved.flatMap((line) => [...(before[line] ?? []), ...(tl[line] ?? [])].map((p) => chunkOf(p[0]))));
    const movedSet = new Set(moved);
    for (const start of starts) {
      if (!touched.has(start)) {
        kept.add(start);
        continue;
      }
      // The chunk's unchanged lines as stored; its changed lines' points are added below.
      const stored = JSON.parse(previous!.get(start)!) as Timeline;
      members.get(start)!.push(
        ...locate(
          stored,
          Object.keys(stored).filter((line) => !movedSet.has(line)),
        ),
      );
    }
    for (const x of locate(tl, moved)) members.get(chunkOf(x.p[0]))!.push(x);
  } else {
    for (const x of locate(tl, Object.keys(tl))) members.get(chunkOf(x.p[0]))!.push(x);
  }
  const out = new Map<string, string>();
  for (const [start, group] of members) {
    if (kept.has(start)) {
      out.set(start, previous!.get(start)!);
      continue;
    }
    if (!group.length) continue; // emptied: its range joins the chunk before it
    const json = partOf(group);
    if (Buffer.byteLength(json) <= limit) {
      out.set(start, json);
      continue;
    }
    // Outgrown: split, the first piece keeping this chunk's start (and so its range's beginning),
    // or an earlier one when the first chunk took points from before it. Any other chunk's first
    // piece keeps its start exactly: a coarser period (the month of a day-long chunk) would be the
    // start of the chunk before it and overwrite that one.
    const pieces = pack(group, limit);
    if (pieces[0].start > start || start !== starts[0]) pieces[0].start = start;
    for (const piece of pieces) out.set(piece.start, partOf(piece.members));
  }
  return out;
};

/** The timeline whose parts these are (any order). */
export const joinChunks = (parts: Iterable<string>): Timeline => {
  const tl: Timeline = {};
  for (const json of parts) for (const [line, pts] of Object.entries(JSON.parse(json) as Timeline)) (tl[line] ??= []).push(...pts);
  for (const line of Object.keys(tl)) tl[line] = normalise(tl[line]);
  return tl;
};

/** The points of `tl` at or after `from` (lines without any are left out). */
export const suffixOf = (tl: Timeline, from: string): Timeline => {
  const out: Timeline = {};
  for (const [line, pts] of Object.entries(tl)) {
    const i = lastBefore(pts, from);
    if (i < pts.length - 1) out[line] = pts.slice(i + 1);
  }
  return out;
};

/** A subscription's status as its line's flag says it. */
/** A customer's latest subscription's status, as its timeline shows it (the subscriptions' statuses). */
export const SUBSCRIPTION_STANDINGS = ['trialing', 'active', 'past_due', 'paused', 'cancelled'] as const;
export type SubscriptionStanding = (typeof SUBSCRIPTION_STANDINGS)[number];
/** A customer's MRR and its latest subscription's status at one instant. */
export type Standing = { mrr: string; subscription_status: SubscriptionStanding | null };
/** A customer without any MRR history. */
export const NO_STANDING: Standing = { mrr: '0', subscription_status: null };
/** `[at, mrr, status]`: the standing from `at` on, until the next step. */
export type StandingStep = [at: string, mrr: string, status: SubscriptionStanding | null];

const STATUS_OF: Record<Flag, SubscriptionStanding | null> = {
  a: 'active',
  p: 'paused',
  c: 'cancelled',
  t: 'trialing',
  d: 'past_due',
  o: null,
  g: null,
  e: null,
  x: null,
};
/** Steps kept ahead of a write: past them a read computes from the timeline itself. */
export const STANDING_STEPS = 24;

/**
 * The customer's standing at `from` and at each later change point of its timeline (scheduled
 * cancellations, recurring orders' ends), at most `limit` steps; `complete` says whether they reach
 * the timeline's last point. A read at any later instant takes the last step at or before it.
 * The latest subscription is the subscription line that started last (then the higher id), among
 * those started by then.
 */
export const standingSteps = (
  stored: Timeline,
  reportingCurrency: string,
  from: string,
  limit = STANDING_STEPS,
): { steps: StandingStep[]; complete: boolean } => {
  // "At or before `from`": every point time has the same length, so `from` + '~' sorts after all of them.
  const upTo = `${from}~`;
  const tl = viewOf(withoutEndedOrders(stored, upTo), reportingCurrency);
  const current = new Map<string, Point>();
  const ahead: { line: string; p: Point }[] = [];
  let mrr = ZERO;
  for (const [line, pts] of Object.entries(tl)) {
    const i = lastBefore(pts, upTo);
    if (i >= 0) {
      current.set(line, pts[i]);
      mrr = mrr.plus(pts[i][1]);
    }
    for (let j = i + 1; j < pts.length; j++) ahead.push({ line, p: pts[j] });
  }
  const subscriptions = Object.keys(tl)
    .filter(isSubscriptionLine)
    .map((line) => ({ line, start: tl[line][0][0], id: Number(line.slice(1)) }))
    .sort((a, b) => (a.start !== b.start ? (a.start < b.start ? 1 : -1) : b.id - a.id));
  const statusNow = (): SubscriptionStanding | null => {
    const latest = subscriptions.find((s) => current.has(s.line));
    return latest ? STATUS_OF[current.get(latest.line)![2]] : null;
  };
  const steps: StandingStep[] = [[from, mrr.toFixed(), statusNow()]];
  ahead.sort((a, b) => (a.p[0] < b.p[0] ? -1 : a.p[0] > b.p[0] ? 1 : 0));
  for (let i = 0; i < ahead.length; ) {
    if (steps.length >= limit) return { steps, complete: false };
    const t = ahead[i].p[0];
    for (; i < ahead.length && ahead[i].p[0] === t; i++) {
      const { line, p } = ahead[i];
      mrr = mrr.plus(p[1]).minus(current.get(line)?.[1] ?? 0);
      current.set(line, p);
    }
    const step: StandingStep = [t, mrr.toFixed(), statusNow()];
    const last = steps[steps.length - 1];
    if (last[1] !== step[1] || last[2] !== step[2]) steps.push(step);
  }
  return { steps, complete: true };
};

/** The standing at `at` from stored steps, or null when `at` lies past what they know (or before them). */
export const standingFromSteps = (steps: StandingStep[], complete: boolean, at: string): Standing | null => {
  if (!steps.length || at < steps[0][0]) return null;
  let i = 0;
  while (i + 1 < steps.length && steps[i + 1][0] <= at) i++;
  if (!complete && i === steps.length - 1) return null;
  return { mrr: steps[i][1], subscription_status: steps[i][2] };
};

/** The standing at `at`, straight from the timeline. */
export const standingAt = (tl: Timeline, reportingCurrency: string, at: string): Standing => {
  const [[, mrr, subscription_status]] = standingSteps(tl, reportingCurrency, at, 1).steps;
  return { mrr, subscription_status };
};

/** One classified change of a customer's MRR, and the line behind it. */
export type CustomerMovement = { at: string; kind: Movement; amount: Decimal; before: Decimal; after: Decimal; line: string };

/**
 * Every movement of the customer's MRR, oldest first: the same classification the aggregates count
 * (`contributions`), one per change time. The line behind a movement is the one that moved most at
 * that instant (by name on a tie).
 */
export const movementsOf = (stored: Timeline, reportingCurrency: string): CustomerMovement[] => {
  const tl = viewOf(stored, reportingCurrency);
  const points = Object.entries(tl)
    .flatMap(([line, pts]) => pts.map((p) => ({ line, p })))
    .sort((a, b) => (a.p[0] < b.p[0] ? -1 : a.p[0] > b.p[0] ? 1 : a.line < b.line ? -1 : a.line > b.line ? 1 : 0));
  const current = new Map<string, Decimal>();
  const out: CustomerMovement[] = [];
  let mrr = ZERO;
  let everPositive = false;
  for (let i = 0; i < points.length; ) {
    const t = points[i].p[0];
    const moved = new Map<string, Decimal>();
    let next = mrr;
    for (; i < points.length && points[i].p[0] === t; i++) {
      const { line, p } = points[i];
      const was = current.get(line) ?? ZERO;
      const now = new Decimal(p[1]);
      next = next.plus(now).minus(was);
      moved.set(line, (moved.get(line) ?? ZERO).plus(now.minus(was)));
      current.set(line, now);
    }
    const movement = classify(mrr, next, everPositive);
    if (movement) {
      let behind = '';
      let most = new Decimal(-1);
      for (const [line, change] of moved) if (change.abs().gt(most)) [behind, most] = [line, change.abs()];
      out.push({ at: t, kind: movement.kind, amount: movement.amount, before: mrr, after: next, line: behind });
    }
    if (next.gt(0)) everPositive = true;
    mrr = next;
  }
  return out;
};
