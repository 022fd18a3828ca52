import type { UTCDate } from '@date-fns/utc';
import { addDays } from 'date-fns/addDays';
import { addMonths } from 'date-fns/addMonths';
import { addQuarters } from 'date-fns/addQuarters';
import { addWeeks } from 'date-fns/addWeeks';
import { addYears } from 'date-fns/addYears';
import { differenceInCalendarDays } from 'date-fns/differenceInCalendarDays';
import { differenceInCalendarMonths } from 'date-fns/differenceInCalendarMonths';
import { eachMonthOfInterval } from 'date-fns/eachMonthOfInterval';
import { startOfISOWeek } from 'date-fns/startOfISOWeek';
import { startOfMonth } from 'date-fns/startOfMonth';
import { startOfQuarter } from 'date-fns/startOfQuarter';
import { startOfYear } from 'date-fns/startOfYear';
import { subMonths } from 'date-fns/subMonths';
import { subYears } from 'date-fns/subYears';
import Decimal from 'decimal.js';
import { InvalidError } from '#lib/errors';
import { metadataFilters, planFilters, utcDayOf } from '#lib/metrics/params';
import type { CohortsQuery, Interval, MrrQuery, SegmentQuery } from '#lib/metrics/schemas';
import {
  lineOf,
  MOVEMENTS,
  UNCONVERTED_ATTR,
  type Contributions,
  type CustomerMovement,
  type LineFilter,
  type Segment,
} from '#lib/metrics/timeline';
import { ExactSum } from '#lib/shared/money';
import { isoDay, monthLastDay, plusDays, plusMonths, utcDate } from '#lib/shared/time';
import { bucketKey, bucketStarts, monthBucket, MONTHS_IN } from '#lib/shared/buckets';
export { bucketKey, bucketStarts };
import { DEFAULT_TIMEZONE } from '#lib/shared/zone';

/**
 * The figures of GET /metrics/* (docs/metrics.md) from the aggregate items, in memory: which items a
 * range needs, how they fold into levels and bucket movements, and the entries, rates and cohorts
 * they make. No reads here (store.ts reads, service.ts joins the two).
 */

const ZERO = new Decimal(0);

export const MAX_DAY_POINTS = 731;
export const MAX_YEARS = 10;
export const MAX_COHORT_MONTHS = 36;

/** Figure → attribute name on the aggregate items (short: a read sums hundreds of items). */
export const STORED_ATTR: Record<string, string> = {
  new: 'n',
  expansion: 'e',
  contraction: 'x',
  churn: 'c',
  reactivation: 'r',
  customers: 'ac',
  subscriptions: 'as',
  churned: 'cc',
  joined: 'j',
  start: 'sm',
  mrr: 'm',
  past_due: 'pd',
  delinquent_churn: 'dc',
  trials: 'ts',
  trials_converted: 'tv',
  trials_cancelled: 'tx',
  trial_seconds: 'tt',
  past_due_started: 'ps',
  past_due_started_mrr: 'psm',
  recovered: 'rv',
  recovered_mrr: 'rvm',
  delinquent: 'dl',
  delinquent_mrr: 'dlm',
};

export type AggregateItem = Record<string, unknown>;

/**
 * What a range read folds: the movements and levels, the MRR past due and the churn that was
 * delinquent, and the trials by the day they started (`trials`, `trials_converted`,
 * `trials_cancelled`, `trial_seconds`: summed per bucket, never a level).
 */
const LEVEL_ATTRS = [
  ...MOVEMENTS,
  'customers',
  'subscriptions',
  'churned',
  'past_due',
  'delinquent_churn',
  'trials',
  'trials_converted',
  'trials_cancelled',
  'trial_seconds',
  'past_due_started',
  'past_due_started_mrr',
  'recovered',
  'recovered_mrr',
  'delinquent',
  'delinquent_mrr',
] as const;
type LevelAttr = (typeof LEVEL_ATTRS)[number];
/** The levels and movements, and per currency the MRR left out of them for want of an exchange rate. */
export type Sums = Record<LevelAttr, Decimal> & { unconverted: Map<string, Decimal> };
const levels = <T>(f: (a: LevelAttr) => T) => Object.fromEntries(LEVEL_ATTRS.map((a) => [a, f(a)])) as Record<LevelAttr, T>;
const emptySums = (): Sums => ({ ...levels(() => ZERO), unconverted: new Map() });
/** Running sums while items are read (exact and cheap per item); `sumsOf` turns them into Decimals once. */
type Acc = Record<LevelAttr, ExactSum> & { unconverted: Map<string, ExactSum> };
const emptyAcc = (): Acc => ({ ...levels(() => new ExactSum()), unconverted: new Map() });
const sumIn = (sums: Map<string, ExactSum>, key: string) => sums.get(key) ?? sums.set(key, new ExactSum()).get(key)!;
/** The level and movement attributes as stored: what a range read folds. */
const LEVEL_STORED = LEVEL_ATTRS.map((a) => STORED_ATTR[a]);
const addItem = (into: Acc, item: AggregateItem, sign: 1 | -1 = 1) => {
  for (let i = 0; i < LEVEL_ATTRS.length; i++) {
    const v = item[LEVEL_STORED[i]];
    // Most shards of most items hold zeros (unmarshalled as the number 0).
    if (v !== undefined && v !== 0) into[LEVEL_ATTRS[i]].add(v as number | string, sign);
  }
  for (const attr in item) {
    const currency = UNCONVERTED_ATTR.exec(attr)?.[1];
    if (currency && item[attr] !== 0) sumIn(into.unconverted, currency).add(item[attr] as number | string, sign);
  }
};
const sumsOf = (acc: Acc): Sums => ({
  ...levels((a) => acc[a].value()),
  unconverted: new Map([...acc.unconverted].map(([c, v]) => [c, v.value()])),
});
/** Adds `from` into `into` (both running sums: no Decimal per bucket and attribute). */
const addAcc = (into: Acc, from: Acc) => {
  for (const a of LEVEL_ATTRS) into[a].addSum(from[a]);
  for (const [c, v] of from.unconverted) sumIn(into.unconverted, c).addSum(v);
};
const net = (s: Sums) => MOVEMENTS.reduce((acc, m) => acc.plus(s[m]), ZERO);
const plus = (a: Sums, b: Sums): Sums => {
  const unconverted = new Map(a.unconverted);
  for (const [c, v] of b.unconverted) unconverted.set(c, (unconverted.get(c) ?? ZERO).plus(v));
  return { ...levels((k) => a[k].plus(b[k])), unconverted };
};
/** The MRR left out per currency for want of a rate (currencies with none left out are not named), in code order. */
const unconvertedOf = (s: Sums): Record<string, string> =>
  Object.fromEntries(
    [...s.unconverted]
      .filter(([, v]) => !v.isZero())
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([c, v]) => [c, v.toFixed(2)]),
  );

export type Range = { start: string; end: string; interval: Interval };

/**
 * The aggregate items a range needs, as sort-key bounds (inclusive) of the metrics partition: the
 * month roll-ups up to `monthsTo`, and the day items of `dayRanges`. A monthly (quarterly, yearly)
 * range reads months to its last one, and days only for its partial first and last months (the
 * days outside the range, subtracted from those months); a daily or weekly range reads the months
 * before its first and the days from that month's 1st to its end.
 */
export const rangeReads = ({ start, end, interval }: Range) => {
  const fromMonth = start.slice(0, 7);
  const toMonth = end.slice(0, 7);
  const firstDay = `${fromMonth}-01`;
  const lastDay = monthLastDay(toMonth);
  const monthly = MONTHS_IN[interval] !== undefined;
  // `M#<fromMonth>` sorts before that month's items, so it stops just before them.
  const monthsTo = monthly ? `M#${toMonth}#~` : `M#${fromMonth}`;
  const days: [string, string][] = monthly
    ? [
        ...(start > firstDay ? [[firstDay, plusDays(start, -1)] as [string, string]] : []),
        ...(end < lastDay ? [[plusDays(end, 1), lastDay] as [string, string]] : []),
      ]
    : [[firstDay, end]];
  return { monthsTo, dayRanges: days.map(([lo, hi]) => [`D#${lo}`, `D#${hi}#~`] as [string, string]) };
};
export type RangeReads = ReturnType<typeof rangeReads>;

/** The levels before the range and the movements of each bucket, from the items `rangeReads` named. */
export const foldRange = ({ start, end, interval }: Range, items: { months: AggregateItem[]; days: AggregateItem[] }) => {
  const fromMonth = start.slice(0, 7);
  const toMonth = end.slice(0, 7);
  const monthly = MONTHS_IN[interval] !== undefined;
  const before = emptyAcc();
  const byBucket = new Map<string, Acc>();
  const into = (key: string) => byBucket.get(key) ?? byBucket.set(key, emptyAcc()).get(key)!;
  // Each day has an item per shard: its bucket (a week's Monday, date-fns) is worked out once.
  const buckets = new Map<string, string>();
  const bucketOf = (day: string) => buckets.get(day) ?? buckets.set(day, bucketKey(day, interval)).get(day)!;
  for (const item of items.months) {
    const month = String(item.sk).slice(2, 9);
    if (month < fromMonth) addItem(before, item);
    else addItem(into(monthBucket(month, interval)), item);
  }
  for (const item of items.days) {
    const day = String(item.sk).slice(2, 12);
    if (day < start) {
      addItem(before, item);
      if (monthly) addItem(into(monthBucket(fromMonth, interval)), item, -1);
    } else if (day > end)
      addItem(into(monthBucket(toMonth, interval)), item, -1); // months only: after the range, in its last month
    else addItem(into(bucketOf(day)), item);
  }
  return { before, moves: byBucket };
};
export type FoldedRange = ReturnType<typeof foldRange>;

const money = (d: Decimal) => d.toFixed(2);
const pct = (part: Decimal, base: Decimal): number | null => (base.isZero() ? null : Number(part.div(base).times(100).toFixed(2)));
const ratio = (part: Decimal, base: Decimal): number | null => (base.isZero() ? null : Number(part.div(base).toFixed(2)));

/** Figures of a range: movements summed, levels at its start and end. */
type RangeFigures = { start: Sums; moves: Sums; end: Sums };

const rangeSummary = ({ start, moves, end }: RangeFigures) => {
  const mrr = net(end);
  const customers = end.customers;
  return {
    current_mrr: money(mrr),
    arr: money(mrr.times(12)),
    arpa: customers.isZero() ? null : money(mrr.div(customers)),
    customer_churn_rate: pct(moves.churned, start.customers),
    mrr_churn_rate: pct(moves.churn.abs().plus(moves.contraction.abs()), net(start)),
    unconverted: unconvertedOf(end),
  };
};

const dateError = (field: string, message: string) => InvalidError.field(field, message);

/**
 * The slice of the figures a query asks for:
 * - `stored`: the whole (`segment` null: no filter) or one stored segment (one plan, one billing
 *   cycle or one currency), read from its own aggregates (the reporting currency's: the whole's
 *   and its difference from the whole, `isReportingSegment`);
 * - `customers`: anything else (a metadata filter, a repeated `plan`, a plan with another filter),
 *   computed from the matching customers' timelines: the customers whose metadata has every pair
 *   (`metadata`), among those that have had a line of one of `plans` when plans are named, and of
 *   their lines those matching `lines`.
 */
export type Selection =
  | { kind: 'stored'; segment: Segment | null }
  | { kind: 'customers'; metadata: [key: string, value: string][]; plans: string[]; lines: LineFilter };

export const resolveSegment = (q: SegmentQuery): Selection => {
  const plans = planFilters(q);
  const metadata = metadataFilters(q);
  const currency = q.currency;
  const given: Segment[] = [];
  if (plans.length === 1) given.push({ dimension: 'plan', value: plans[0] });
  if (q.billing_cycle !== undefined) given.push({ dimension: 'billing_cycle', value: q.billing_cycle });
  if (currency !== undefined) given.push({ dimension: 'currency', value: currency });
  if (!metadata.length && plans.length <= 1 && given.length <= 1) return { kind: 'stored', segment: given[0] ?? null };
  // Which customers a cycle and a currency alone concern, no index knows: those two need a plan or a metadata filter.
  if (!metadata.length && !plans.length)
    throw InvalidError.field(given[1].dimension, 'Give one segment filter at a time: plan, billing_cycle or currency.');
  const lines: LineFilter = {
    ...(plans.length ? { plans } : {}),
    ...(q.billing_cycle !== undefined ? { billing_cycle: q.billing_cycle } : {}),
    ...(currency !== undefined ? { currency } : {}),
  };
  return { kind: 'customers', metadata, plans, lines };
};

/**
 * What the matching customers' contributions (summed) would be as stored aggregate items: the
 * movement items (`D#<day>#00`, `M#<month>#00`) and cohort items (`<cohort>#<month>#00`), so that
 * a segment read from timelines folds through the same code as the stored ones.
 */
export const aggregateItemsOf = (sum: Contributions) => {
  const movements: AggregateItem[] = [];
  const cohorts: AggregateItem[] = [];
  for (const [id, attrs] of sum) {
    const item: AggregateItem = {};
    for (const [attr, v] of attrs) item[STORED_ATTR[attr] ?? attr] = v.toFixed();
    if (id.startsWith('D#') || id.startsWith('M#')) movements.push({ ...item, sk: `${id}#00` });
    else if (id.startsWith('C#')) cohorts.push({ ...item, sk: `${id.slice(2)}#00` });
  }
  return { movements, cohorts };
};

/** Of in-memory movement items, those `rangeReads` names (what its Queries would have read). */
export const itemsInRange = (items: AggregateItem[], { monthsTo, dayRanges }: RangeReads) => {
  const sk = (i: AggregateItem) => String(i.sk);
  return {
    months: items.filter((i) => sk(i).startsWith('M#') && sk(i) <= monthsTo),
    days: items.filter((i) => sk(i).startsWith('D#') && dayRanges.some(([lo, hi]) => sk(i) >= lo && sk(i) <= hi)),
  };
};

/** Of in-memory cohort items, those of cohorts `start`..`end` (what `readCohortItems` would have read). */
export const cohortItemsIn = (items: AggregateItem[], start: string, end: string) =>
  items.filter((i) => String(i.sk) >= `${start}#` && String(i.sk) <= `${end}#~`);

/** The first day a range may start on (the default start of a range ending in year 1 stops there). */
const FIRST_DAY = '0001-01-01';

/** start/end with their defaults and the limits of docs/metrics.md (422 on the parameter at fault); `today` is the day in `zone`. */
export const resolveRange = (q: MrrQuery, today: string, zone = DEFAULT_TIMEZONE): Range => {
  const interval: Interval = q.interval ?? 'month';
  const end = q.end_date ? utcDayOf(q.end_date, zone)! : today;
  // No projections: the figures after today would only repeat today's.
  if (end > today) throw dateError('end_date', 'The end date field must be a date before or equal to today.');
  const yearBefore = isoDay(subMonths(startOfMonth(utcDate(end)), 11));
  const start = q.start_date ? utcDayOf(q.start_date, zone)! : yearBefore < FIRST_DAY ? FIRST_DAY : yearBefore;
  const blame = q.end_date ? 'end_date' : 'start_date';
  if (start > end) {
    throw dateError(
      blame,
      blame === 'end_date'
        ? 'The end date field must be a date after or equal to the start date.'
        : 'The start date field must be a date before or equal to the end date.',
    );
  }
  if (interval === 'day' && differenceInCalendarDays(utcDate(end), utcDate(start)) + 1 > MAX_DAY_POINTS) {
    throw dateError(blame, `The range must not have more than ${MAX_DAY_POINTS} days for the day interval.`);
  }
  // `end` at least ten years after `start`, read back from the end: ten years after 29 February is
  // 1 March here (the end's 28 February is still inside), where addYears would clamp it to the 28th.
  if (subYears(utcDate(end), MAX_YEARS).getTime() >= utcDate(start).getTime())
    throw dateError(blame, `The range must not be longer than ${MAX_YEARS} years.`);
  return { start, end, interval };
};

/** One bucket: its movements, the levels at its end, and its rates against the levels just before it. */
const entryOf = (date: string, start: Sums, moves: Sums, end: Sums) => {
  const mrr = net(end);
  const base = net(start);
  const kept = base.plus(moves.contraction).plus(moves.churn);
  return {
    date,
    mrr: money(mrr),
    new: money(moves.new),
    expansion: money(moves.expansion),
    contraction: money(moves.contraction),
    churn: money(moves.churn),
    voluntary_churn: money(moves.churn.minus(moves.delinquent_churn)),
    delinquent_churn: money(moves.delinquent_churn),
    reactivation: money(moves.reactivation),
    net_change: money(net(moves)),
    past_due_mrr: money(end.past_due),
    active_subscriptions: end.subscriptions.toNumber(),
    active_customers: end.customers.toNumber(),
    arpa: end.customers.isZero() ? null : money(mrr.div(end.customers)),
    customer_churn_rate: pct(moves.churned, start.customers),
    mrr_churn_rate: pct(moves.churn.abs().plus(moves.contraction.abs()), base),
    net_mrr_retention: pct(kept.plus(moves.expansion), base),
    gross_mrr_retention: pct(kept, base),
    unconverted: unconvertedOf(end),
  };
};

/** GET /metrics/mrr's answer: one entry per bucket of the range, and the range's summary. */
export const series = (range: Range, { before, moves }: FoldedRange) => {
  const level = emptyAcc();
  addAcc(level, before);
  const all = emptyAcc();
  const none = emptySums();
  const data = [];
  let atStart = sumsOf(level);
  for (const day of bucketStarts(range.start, range.end, range.interval)) {
    const m = moves.get(bucketKey(day, range.interval));
    if (m) {
      addAcc(level, m);
      addAcc(all, m);
    }
    const atEnd = m ? sumsOf(level) : atStart;
    data.push(entryOf(day, atStart, m ? sumsOf(m) : none, atEnd));
    atStart = atEnd;
  }
  const summary = rangeSummary({ start: sumsOf(before), moves: sumsOf(all), end: sumsOf(level) });
  // What the answer leaves out at its end, also at its top level (each point and the summary say it too).
  return { data, summary, unconverted: summary.unconverted };
};

/**
 * GET /metrics/trials' answer: per bucket the trials that started in it and what became of them by
 * now (converted, cancelled, still trialing), the conversion rate of those that ended and the mean
 * days a conversion took; and the same over the range.
 */
export const trialSeries = (range: Range, { moves }: FoldedRange) => {
  const all = emptyAcc();
  const data = [];
  for (const day of bucketStarts(range.start, range.end, range.interval)) {
    const m = moves.get(bucketKey(day, range.interval));
    if (m) addAcc(all, m);
    data.push({ date: day, ...trialFigures(m ? sumsOf(m) : emptySums()) });
  }
  return { data, summary: trialFigures(sumsOf(all)) };
};

/**
 * GET /metrics/recovery's answer: per bucket the subscriptions (and their MRR) that went past due,
 * were recovered, and were cancelled as delinquent, and the recovery rate of the episodes that
 * ended in it; and the same over the range.
 */
export const recoverySeries = (range: Range, { moves }: FoldedRange) => {
  const all = emptyAcc();
  const data = [];
  for (const day of bucketStarts(range.start, range.end, range.interval)) {
    const m = moves.get(bucketKey(day, range.interval));
    if (m) addAcc(all, m);
    data.push({ date: day, ...recoveryFigures(m ? sumsOf(m) : emptySums()) });
  }
  return { data, summary: recoveryFigures(sumsOf(all)) };
};

const recoveryFigures = (s: Sums) => ({
  past_due_started: { mrr: money(s.past_due_started_mrr), subscriptions: s.past_due_started.toNumber() },
  recovered: { mrr: money(s.recovered_mrr), subscriptions: s.recovered.toNumber() },
  churned: { mrr: money(s.delinquent_mrr), subscriptions: s.delinquent.toNumber() },
  recovery_rate: pct(s.recovered, s.recovered.plus(s.delinquent)),
});

/** GET /metrics/forecast: how many month ends, the current month's first. */
export const FORECAST_MONTHS = { min: 1, max: 24, default: 12 } as const;

/**
 * GET /metrics/forecast's answer: from the level now (`range`: today, and the items it needs), each
 * month end from the current month's on, the level moved by the scheduled moves up to it.
 */
export const forecastSeries = (
  range: Range,
  items: { months: AggregateItem[]; days: AggregateItem[]; forecast: AggregateItem[] },
  months: number,
) => {
  const { before, moves } = foldRange(range, items);
  const level = emptyAcc();
  addAcc(level, before);
  for (const m of moves.values()) addAcc(level, m);
  const now = sumsOf(level);
  const byMonth = new Map<string, Acc>();
  for (const item of items.forecast) {
    const month = String(item.sk).slice(2, 9);
    addItem(byMonth.get(month) ?? byMonth.set(month, emptyAcc()).get(month)!, item);
  }
  let committed = net(now);
  const data = [];
  let month = range.end.slice(0, 7);
  for (let i = 0; i < months; i++, month = plusMonths(month, 1)) {
    const m = sumsOf(byMonth.get(month) ?? emptyAcc());
    committed = committed.plus(m.new).plus(m.churn);
    data.push({
      date: monthLastDay(month),
      committed_mrr: money(committed),
      new: money(m.new),
      churn: money(m.churn),
      delinquent_churn: money(m.delinquent_churn),
      unconverted: unconvertedOf(m),
    });
  }
  return { data, summary: { current_mrr: money(net(now)), committed_mrr: money(committed), unconverted: unconvertedOf(now) } };
};

const SECONDS_A_DAY = 86_400;
const trialFigures = (s: Sums) => {
  const still = s.trials.minus(s.trials_converted).minus(s.trials_cancelled);
  return {
    trials_started: s.trials.toNumber(),
    converted: s.trials_converted.toNumber(),
    cancelled: s.trials_cancelled.toNumber(),
    still_trialing: still.toNumber(),
    conversion_rate: pct(s.trials_converted, s.trials.minus(still)),
    avg_days_to_convert: s.trials_converted.isZero()
      ? null
      : Number(s.trial_seconds.div(s.trials_converted).div(SECONDS_A_DAY).toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2)),
  };
};

/** A day the figures are read at (GET /metrics/plans): default today, never after it. */
export const resolveDay = (date: string | undefined, today: string, zone = DEFAULT_TIMEZONE): string => {
  const day = date ? utcDayOf(date, zone)! : today;
  if (day > today) throw dateError('date', 'The date field must be a date before or equal to today.');
  return day;
};

/** The levels at the end of a folded range (before it plus its movements): MRR, active subscriptions and customers. */
const levelsOf = ({ before, moves }: FoldedRange) => {
  const all = emptyAcc();
  addAcc(all, before);
  for (const m of moves.values()) addAcc(all, m);
  const s = sumsOf(all);
  return { mrr: net(s), subscriptions: s.subscriptions, customers: s.customers };
};

/**
 * GET /metrics/plans's rows: each plan's MRR, active subscriptions and customers with MRR in it at
 * the end of the day read (each plan's segment folded to that day); plans with none of them left
 * out; largest MRR first.
 */
export const planTable = (perPlan: [plan: string, folded: FoldedRange][]) =>
  perPlan
    .map(([plan, folded]) => ({ plan, ...levelsOf(folded) }))
    .filter((r) => !r.mrr.isZero() || !r.subscriptions.isZero() || !r.customers.isZero())
    .sort((a, b) => b.mrr.comparedTo(a.mrr) || (a.plan < b.plan ? -1 : a.plan > b.plan ? 1 : 0))
    .map((r) => ({ plan: r.plan, mrr: money(r.mrr), subscriptions: r.subscriptions.toNumber(), customers: r.customers.toNumber() }));

/**
 * GET /metrics/churn-reasons's rows from the churn-by-reason items of a month-wise range read
 * (`rangeReads`): the months of the range, less the days of its first and last months outside it.
 * Each row: the MRR cancellations took to 0 (positive) and the customers they churned; largest first.
 */
export const reasonTable = ({ start, end }: Range, items: { months: AggregateItem[]; days: AggregateItem[] }) => {
  const fromMonth = start.slice(0, 7);
  const toMonth = end.slice(0, 7);
  const byReason = new Map<string, { churn: ExactSum; churned: ExactSum }>();
  const add = (item: AggregateItem, sign: 1 | -1) => {
    const reason = String(item.sk).split('#')[2] ?? '';
    const r = byReason.get(reason) ?? byReason.set(reason, { churn: new ExactSum(), churned: new ExactSum() }).get(reason)!;
    const churn = item[STORED_ATTR.churn];
    const churned = item[STORED_ATTR.churned];
    if (churn !== undefined && churn !== 0) r.churn.add(churn as number | string, sign);
    if (churned !== undefined && churned !== 0) r.churned.add(churned as number | string, sign);
  };
  for (const item of items.months) {
    const month = String(item.sk).split('#')[1];
    if (month >= fromMonth && month <= toMonth) add(item, 1);
  }
  for (const item of items.days) {
    const day = String(item.sk).split('#')[1];
    if (day < start || day > end) add(item, -1);
  }
  return [...byReason]
    .map(([reason, r]) => ({
      reason: reason === '' ? null : decodeURIComponent(reason),
      churn: r.churn.value().abs(),
      churned: r.churned.value(),
    }))
    .filter((r) => !r.churn.isZero() || !r.churned.isZero())
    .sort((a, b) => b.churn.comparedTo(a.churn) || b.churned.comparedTo(a.churned) || String(a.reason).localeCompare(String(b.reason)))
    .map((r) => ({ reason: r.reason, churned_mrr: money(r.churn), churned_customers: r.churned.toNumber() }));
};

export const SUMMARY_DAYS = 30;

/** The summary's range: today and the 29 days before it, read by day. */
export const summaryRange = (today: string): Range => ({ start: plusDays(today, -(SUMMARY_DAYS - 1)), end: today, interval: 'day' });

/** GET /metrics/summary's answer, from its range folded. */
export const summaryOf = (range: FoldedRange) => {
  const all = emptyAcc();
  for (const day of range.moves.values()) addAcc(all, day);
  const [before, moves] = [sumsOf(range.before), sumsOf(all)];
  const level = plus(before, moves);
  const base = rangeSummary({ start: before, moves, end: level });
  const gained = moves.new.plus(moves.expansion).plus(moves.reactivation);
  const lost = moves.contraction.plus(moves.churn).abs();
  const mrr = net(level);
  const churnShare = before.customers.isZero() ? ZERO : moves.churned.div(before.customers);
  return {
    current_mrr: base.current_mrr,
    arr: base.arr,
    arpa: base.arpa,
    active_subscriptions: level.subscriptions.toNumber(),
    active_customers: level.customers.toNumber(),
    customer_churn_rate: base.customer_churn_rate,
    mrr_churn_rate: base.mrr_churn_rate,
    net_mrr_churn_rate: pct(lost.minus(moves.expansion).minus(moves.reactivation), net(before)),
    quick_ratio: ratio(gained, lost),
    ltv: churnShare.isZero() || level.customers.isZero() ? null : money(mrr.div(level.customers).div(churnShare)),
    unconverted: base.unconverted,
  };
};

const FIRST_MONTH = '0001-01';
const monthStart = (month: string) => utcDate(`${month}-01`);

/** The cohort months asked for, with their defaults and limits (422 on the parameter at fault); `currentMonth` is `yyyy-mm`. */
export const resolveCohortRange = (q: CohortsQuery, currentMonth: string) => {
  const end = q.end_month ?? currentMonth;
  const yearBefore = plusMonths(end, -11);
  const start = q.start_month ?? (yearBefore < FIRST_MONTH ? FIRST_MONTH : yearBefore);
  const blame = q.end_month ? 'end_month' : 'start_month';
  if (start > end) {
    throw dateError(
      blame,
      blame === 'end_month'
        ? 'The end month field must be a month after or equal to the start month.'
        : 'The start month field must be a month before or equal to the end month.',
    );
  }
  if (differenceInCalendarMonths(monthStart(end), monthStart(start)) + 1 > MAX_COHORT_MONTHS)
    throw dateError(blame, `The range must not have more than ${MAX_COHORT_MONTHS} months.`);
  return { start, end, currentMonth };
};

/** The attributes a cohort read projects. */
export const COHORT_PROJECTION = [STORED_ATTR.joined, STORED_ATTR.start, STORED_ATTR.customers, STORED_ATTR.mrr];

/** GET /metrics/cohorts's answer: the cohorts of the range from their items (every shard, `<cohort>#<month>` sort keys). */
export const cohortTable = ({ start, end, currentMonth }: ReturnType<typeof resolveCohortRange>, items: AggregateItem[]) => {
  const num = (v: unknown) => new Decimal(v === undefined ? 0 : String(v));
  // Shards summed: cohort → month → figures.
  const byCohort = new Map<string, Map<string, { joined: Decimal; start: Decimal; customers: Decimal; mrr: Decimal }>>();
  for (const item of items) {
    const [cohort, month] = String(item.sk).split('#');
    const months = byCohort.get(cohort) ?? new Map();
    const f = months.get(month) ?? { joined: ZERO, start: ZERO, customers: ZERO, mrr: ZERO };
    months.set(month, {
      joined: f.joined.plus(num(item[STORED_ATTR.joined])),
      start: f.start.plus(num(item[STORED_ATTR.start])),
      customers: f.customers.plus(num(item[STORED_ATTR.customers])),
      mrr: f.mrr.plus(num(item[STORED_ATTR.mrr])),
    });
    byCohort.set(cohort, months);
  }
  const last = end < currentMonth ? end : currentMonth;
  // Each cohort is followed from its own month to the last one (this month at most): all among the range's months.
  const cohorts = eachMonthOfInterval({ start: monthStart(start), end: monthStart(end) }).map((d) => isoDay(d).slice(0, 7));
  const out = [];
  for (let c = 0; c < cohorts.length; c++) {
    const cohort = cohorts[c];
    const months = byCohort.get(cohort) ?? new Map();
    const joined = months.get(cohort)?.joined ?? ZERO;
    const startMrr = months.get(cohort)?.start ?? ZERO;
    let customers = ZERO;
    let mrr = ZERO;
    const retention = [];
    for (let m = c; m < cohorts.length && cohorts[m] <= last; m++) {
      const item = months.get(cohorts[m]);
      customers = customers.plus(item?.customers ?? ZERO);
      mrr = mrr.plus(item?.mrr ?? ZERO);
      // The cohort month is measured right after each member joined (100 %), later months at their end.
      const [n, v] = m === c ? [joined, startMrr] : [customers, mrr];
      retention.push({
        month: cohorts[m],
        customers: n.toNumber(),
        mrr: money(v),
        customer_retention: pct(n, joined),
        mrr_retention: pct(v, startMrr),
      });
    }
    out.push({ cohort, customers: joined.toNumber(), mrr: money(startMrr), retention });
  }
  return out;
};

/**
 * One MRR movement as the API lists it (`GET /customers/{id}/activities`, `GET /metrics/movements`):
 * when, what, the rounded figures' difference (so each row adds up, and a customer's rows sum to its
 * MRR now), its MRR before and after, and the subscription or recurring order behind it.
 */
export const movementRow = (m: CustomerMovement) => ({
  date: m.at,
  type: m.kind,
  amount: new Decimal(money(m.after)).minus(money(m.before)).toFixed(2),
  mrr_before: money(m.before),
  mrr_after: money(m.after),
  subscription_id: m.line.startsWith('S') ? Number(m.line.slice(1)) : null,
  order_no: m.line.startsWith(lineOf.order('')) ? m.line.slice(lineOf.order('').length) : null,
});
