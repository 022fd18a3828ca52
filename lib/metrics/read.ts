import Decimal from 'decimal.js';
import { now } from '#lib/clock';
import { cohortPartition, metricsPartition } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { pendingMovesOf } from '#lib/db/writes';
import { InvalidError } from '#lib/errors';
import { STORED_ATTR } from '#lib/metrics/store';
import { MOVEMENTS } from '#lib/metrics/timeline';
import { ExactSum } from '#lib/shared/money';
import { utcDayOf, type CohortsQuery, type Interval, type MrrQuery } from '#lib/metrics/schemas';

/**
 * GET /metrics/* (docs/metrics.md), from the pre-aggregated items only — never orders, events or
 * subscriptions. Levels (MRR, active customers and subscriptions) are sums of movements: the month
 * roll-ups before the range plus the day items of the range's first month before it. A monthly
 * series reads months, and days only for its partial first and last months; a daily or weekly one
 * reads the days of the range. Every Query is strongly consistent, so a read right after a write
 * sees it, and what a read touches is bounded by the range and the months of history, never by how
 * many customers or subscriptions the merchant has.
 */

const ZERO = new Decimal(0);
const DAY_MS = 86_400_000;

const isPending = (item: Record<string, unknown>) => item.moves !== undefined;
/** A pending-moves item as the items it is for (their sort keys, the deltas as their attributes). */
const pendingItems = (item: Record<string, unknown>): Record<string, unknown>[] =>
  pendingMovesOf(item).map(([sk, adds]) => ({ sk, ...adds }));
export const MAX_DAY_POINTS = 731;
export const MAX_YEARS = 10;
export const MAX_COHORT_MONTHS = 36;

const LEVEL_ATTRS = [...MOVEMENTS, 'customers', 'subscriptions', 'churned'] as const;
type Sums = Record<(typeof LEVEL_ATTRS)[number], Decimal>;
const emptySums = (): Sums => Object.fromEntries(LEVEL_ATTRS.map((a) => [a, ZERO])) as Sums;
/** Running sums while items are read (exact and cheap per item); `sumsOf` turns them into Decimals once. */
type Acc = Record<(typeof LEVEL_ATTRS)[number], ExactSum>;
const emptyAcc = (): Acc => Object.fromEntries(LEVEL_ATTRS.map((a) => [a, new ExactSum()])) as Acc;
const STORED_LEVEL_ATTRS = LEVEL_ATTRS.map((a) => STORED_ATTR[a]);
const addItem = (into: Acc, item: Record<string, unknown>, sign: 1 | -1 = 1) => {
  for (let i = 0; i < LEVEL_ATTRS.length; i++) {
    const v = item[STORED_LEVEL_ATTRS[i]];
    // Most shards of most items hold zeros (unmarshalled as the number 0).
    if (v !== undefined && v !== 0) into[LEVEL_ATTRS[i]].add(v as number | string, sign);
  }
};
const sumsOf = (acc: Acc): Sums => Object.fromEntries(LEVEL_ATTRS.map((a) => [a, acc[a].value()])) as Sums;
/** Adds `from` into `into` (both running sums: no Decimal per bucket and attribute). */
const addAcc = (into: Acc, from: Acc) => {
  for (const a of LEVEL_ATTRS) into[a].addSum(from[a]);
};
const net = (s: Sums) => MOVEMENTS.reduce((acc, m) => acc.plus(s[m]), ZERO);

const dayOf = (d: Date) => d.toISOString().slice(0, 10);
const toDate = (day: string) => new Date(`${day}T00:00:00Z`);
const addDays = (day: string, n: number) => dayOf(new Date(toDate(day).getTime() + n * DAY_MS));
const today = () => dayOf(now());
/** The last day of a `yyyy-mm` (setUTCFullYear: Date.UTC would read years below 100 as 19xx). */
const lastDayOf = (month: string) => {
  const d = new Date(0);
  d.setUTCFullYear(Number(month.slice(0, 4)), Number(month.slice(5, 7)), 0);
  return dayOf(d);
};

/** Intervals made of whole months: read from the month roll-ups, days only at a partial end. */
const MONTHS_IN: Partial<Record<Interval, number>> = { month: 1, quarter: 3, year: 12 };

/** The bucket a month falls in (`yyyy-mm`, `yyyy-Qn`, `yyyy`). */
const monthBucket = (month: string, interval: Interval) =>
  interval === 'year'
    ? month.slice(0, 4)
    : interval === 'quarter'
      ? `${month.slice(0, 4)}-Q${Math.floor((Number(month.slice(5, 7)) - 1) / 3) + 1}`
      : month;

const bucketKey = (day: string, interval: Interval) => {
  if (interval === 'day') return day;
  if (MONTHS_IN[interval]) return monthBucket(day.slice(0, 7), interval);
  const d = toDate(day);
  return addDays(day, -((d.getUTCDay() + 6) % 7)); // the Monday of its week (UTC)
};

/** The first day of each bucket of [start, end]: the range's start, then each next day, Monday, 1st of a month, quarter or year. */
function* bucketStarts(start: string, end: string, interval: Interval) {
  // Compared as times, not text: past 9999-12-31 ISO dates gain a sign and sort first.
  const last = toDate(end).getTime();
  const months = MONTHS_IN[interval];
  for (let t = toDate(start).getTime(); t <= last; ) {
    yield dayOf(new Date(t));
    const d = new Date(t);
    if (interval === 'day') t += DAY_MS;
    else if (interval === 'week') t += (7 - ((d.getUTCDay() + 6) % 7)) * DAY_MS;
    else t = d.setUTCMonth(d.getUTCMonth() - (d.getUTCMonth() % months!) + months!, 1);
  }
}

/**
 * The levels before `from` and the movements of [from, to] per bucket of `interval`: one Query of
 * month roll-ups and one (daily, weekly) or up to two (monthly: the partial first and last months'
 * days outside the range, subtracted from their months) of day items, all at once.
 */
const readRange = async (merchantId: string, from: string, to: string, interval: Interval) => {
  const projection = ['sk', 'moves', ...LEVEL_ATTRS.map((a) => STORED_ATTR[a])];
  const query = (lo: string, hi: string) =>
    queryAll<Record<string, unknown>>({ partition: metricsPartition(merchantId), from: lo, to: hi, descending: false }, projection);
  const fromMonth = from.slice(0, 7);
  const toMonth = to.slice(0, 7);
  const firstDay = `${fromMonth}-01`;
  const lastDay = lastDayOf(toMonth);
  const monthly = MONTHS_IN[interval] !== undefined;
  // Bounds are inclusive: `M#<fromMonth>` sorts before that month's items, so it stops just before them.
  const months = query('M#', monthly ? `M#${toMonth}#~` : `M#${fromMonth}`);
  const dayRanges = monthly
    ? [...(from > firstDay ? [[firstDay, addDays(from, -1)]] : []), ...(to < lastDay ? [[addDays(to, 1), lastDay]] : [])]
    : [[firstDay, to]];
  const [readMonths, ...dayItems] = await Promise.all([months, ...dayRanges.map(([lo, hi]) => query(`D#${lo}`, `D#${hi}#~`))]);
  // Pending moves (sorted before every month, so always read) count as the items they are for, where the queries would have read them.
  const monthItems = readMonths.filter((i) => !isPending(i));
  const monthsTo = monthly ? `M#${toMonth}#~` : `M#${fromMonth}`;
  for (const moved of readMonths.filter(isPending).flatMap(pendingItems)) {
    const sk = String(moved.sk);
    if (sk.startsWith('M#') && sk <= monthsTo) monthItems.push(moved);
    else if (sk.startsWith('D#') && dayRanges.some(([lo, hi]) => sk >= `D#${lo}` && sk <= `D#${hi}#~`)) dayItems.push([moved]);
  }
  const before = emptyAcc();
  const byBucket = new Map<string, Acc>();
  const into = (key: string) => byBucket.get(key) ?? byBucket.set(key, emptyAcc()).get(key)!;
  for (const item of monthItems) {
    const month = String(item.sk).slice(2, 9);
    if (month < fromMonth) addItem(before, item);
    else addItem(into(monthBucket(month, interval)), item);
  }
  for (const item of dayItems.flat()) {
    const day = String(item.sk).slice(2, 12);
    if (day < from) {
      addItem(before, item);
      if (monthly) addItem(into(monthBucket(fromMonth, interval)), item, -1);
    } else if (day > to)
      addItem(into(monthBucket(toMonth, interval)), item, -1); // months only: after the range, in its last month
    else addItem(into(bucketKey(day, interval)), item);
  }
  return { before, moves: byBucket };
};

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
  };
};

const plus = (a: Sums, b: Sums): Sums => Object.fromEntries(LEVEL_ATTRS.map((k) => [k, a[k].plus(b[k])])) as Sums;

const dateError = (field: string, message: string) => InvalidError.field(field, message);

/** start/end with their defaults and the limits of docs/metrics.md (422 on the parameter at fault). */
export const resolveRange = (q: MrrQuery) => {
  const interval: Interval = q.interval ?? 'month';
  const end = q.end_date ? utcDayOf(q.end_date)! : today();
  // No projections: the figures after today would only repeat today's.
  if (end > today()) throw dateError('end_date', 'The end date field must be a date before or equal to today.');
  const endMonth = toDate(end);
  const start = q.start_date
    ? utcDayOf(q.start_date)!
    : dayOf(new Date(Date.UTC(endMonth.getUTCFullYear(), endMonth.getUTCMonth() - 11, 1)));
  const blame = q.end_date ? 'end_date' : 'start_date';
  if (start > end) {
    throw dateError(
      blame,
      blame === 'end_date'
        ? 'The end date field must be a date after or equal to the start date.'
        : 'The start date field must be a date before or equal to the end date.',
    );
  }
  const days = (toDate(end).getTime() - toDate(start).getTime()) / DAY_MS + 1;
  if (interval === 'day' && days > MAX_DAY_POINTS) {
    throw dateError(blame, `The range must not have more than ${MAX_DAY_POINTS} days for the day interval.`);
  }
  const s = toDate(start);
  const limit = new Date(s.getTime());
  limit.setUTCFullYear(s.getUTCFullYear() + MAX_YEARS);
  if (toDate(end).getTime() >= limit.getTime()) throw dateError(blame, `The range must not be longer than ${MAX_YEARS} years.`);
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
    reactivation: money(moves.reactivation),
    net_change: money(net(moves)),
    active_subscriptions: end.subscriptions.toNumber(),
    active_customers: end.customers.toNumber(),
    arpa: end.customers.isZero() ? null : money(mrr.div(end.customers)),
    customer_churn_rate: pct(moves.churned, start.customers),
    mrr_churn_rate: pct(moves.churn.abs().plus(moves.contraction.abs()), base),
    net_mrr_retention: pct(kept.plus(moves.expansion), base),
    gross_mrr_retention: pct(kept, base),
  };
};

/** GET /metrics/mrr: one entry per day, week or month of the range, and the range's summary. */
export const mrrSeries = async (merchantId: string, q: MrrQuery) => {
  const { start, end, interval } = resolveRange(q);
  const { before, moves } = await readRange(merchantId, start, end, interval);
  const level = emptyAcc();
  addAcc(level, before);
  const all = emptyAcc();
  const none = emptySums();
  const data = [];
  let atStart = sumsOf(level);
  for (const day of bucketStarts(start, end, interval)) {
    const m = moves.get(bucketKey(day, interval));
    if (m) {
      addAcc(level, m);
      addAcc(all, m);
    }
    const atEnd = m ? sumsOf(level) : atStart;
    data.push(entryOf(day, atStart, m ? sumsOf(m) : none, atEnd));
    atStart = atEnd;
  }
  return { data, summary: rangeSummary({ start: sumsOf(before), moves: sumsOf(all), end: sumsOf(level) }) };
};

const SUMMARY_DAYS = 30;

/** GET /metrics/summary: now, and the last 30 days (today and the 29 before it, UTC). */
export const metricsSummary = async (merchantId: string) => {
  const end = today();
  const start = addDays(end, -(SUMMARY_DAYS - 1));
  const range = await readRange(merchantId, start, end, 'day');
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
  };
};

const monthIndex = (m: string) => Number(m.slice(0, 4)) * 12 + Number(m.slice(5, 7)) - 1;
const monthOf = (i: number) => `${String(Math.floor(i / 12)).padStart(4, '0')}-${String((i % 12) + 1).padStart(2, '0')}`;

/** GET /metrics/cohorts: one Query over the cohort items of the range's cohorts. */
export const cohorts = async (merchantId: string, q: CohortsQuery) => {
  const current = today().slice(0, 7);
  const end = q.end_month ?? current;
  const start = q.start_month ?? monthOf(Math.max(monthIndex(end) - 11, monthIndex('0001-01')));
  const blame = q.end_month ? 'end_month' : 'start_month';
  if (start > end) {
    throw dateError(
      blame,
      blame === 'end_month'
        ? 'The end month field must be a month after or equal to the start month.'
        : 'The start month field must be a month before or equal to the end month.',
    );
  }
  if (monthIndex(end) - monthIndex(start) + 1 > MAX_COHORT_MONTHS)
    throw dateError(blame, `The range must not have more than ${MAX_COHORT_MONTHS} months.`);
  const read = await queryAll<Record<string, unknown>>(
    { partition: cohortPartition(merchantId), from: `${start}#`, to: `${end}#~`, descending: false },
    ['sk', 'moves', STORED_ATTR.joined, STORED_ATTR.start, STORED_ATTR.customers, STORED_ATTR.mrr],
  );
  // A cohort's pending moves sit inside its range: they count as the items they are for.
  const items = read.flatMap((i) => (isPending(i) ? pendingItems(i) : [i]));
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
  const last = end < current ? end : current;
  const out = [];
  for (let c = monthIndex(start); c <= monthIndex(end); c++) {
    const cohort = monthOf(c);
    const months = byCohort.get(cohort) ?? new Map();
    const joined = months.get(cohort)?.joined ?? ZERO;
    const startMrr = months.get(cohort)?.start ?? ZERO;
    let customers = ZERO;
    let mrr = ZERO;
    const retention = [];
    for (let m = c; m <= monthIndex(last); m++) {
      const item = months.get(monthOf(m));
      customers = customers.plus(item?.customers ?? ZERO);
      mrr = mrr.plus(item?.mrr ?? ZERO);
      // The cohort month is measured right after each member joined (100 %), later months at their end.
      const [n, v] = m === c ? [joined, startMrr] : [customers, mrr];
      retention.push({
        month: monthOf(m),
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
