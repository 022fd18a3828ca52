import { now } from '#lib/clock';
import type {
  ForecastQuery,
  ChurnReasonsQuery,
  CohortsQuery,
  MovementsQuery,
  MrrQuery,
  PlansQuery,
  SummaryQuery,
} from '#lib/metrics/schemas';
import {
  aggregateItemsOf,
  cohortItemsIn,
  cohortTable,
  foldRange,
  itemsInRange,
  movementRow,
  planTable,
  rangeReads,
  reasonTable,
  resolveCohortRange,
  resolveDay,
  resolveRange,
  resolveSegment,
  series,
  summaryOf,
  summaryRange,
  trialSeries,
  forecastSeries,
  FORECAST_MONTHS,
  recoverySeries,
  type Range,
  type Selection,
} from '#lib/metrics/rules';
import {
  countedTimelines,
  customerNames,
  figuresRead,
  customerIdRounds,
  customersOfPlan,
  customersWithMetadata,
  movementsSource,
  readCohortItems,
  readForecastItems,
  readPlanNames,
  readRangeItems,
  readRangeItemsApart,
  readTimelines,
  reasonsSource,
} from '#lib/metrics/store';
import {
  addContributions,
  contributionsWhere,
  isReportingSegment,
  movementsOf,
  type Contributions,
  type Segment,
} from '#lib/metrics/timeline';
import { formatTimestamp, plusMonths } from '#lib/shared/time';
import { cursorMeta, pageOfRows } from '#lib/shared/pagination';
import type { AuthContext } from '#lib/auth/tokens';
import { localDateOfIso, localDayOf } from '#lib/shared/zone';

/** What the figures are kept in: the merchant's reporting currency and time zone (days, weeks, months). */
type Figures = Pick<AuthContext, 'reportingCurrency' | 'timezone' | 'generation' | 'recount'>;

/**
 * GET /metrics/* (docs/metrics.md), from the pre-aggregated items only — never orders, events or
 * subscriptions: each read resolves its range, reads the items it needs (store.ts) and computes
 * the figures from them (rules.ts). What a read touches is bounded by the range and the months of
 * history, never by how many customers or subscriptions the merchant has. A segment (one plan,
 * billing cycle or currency) reads that segment's own items the same way; any other segment (by
 * customer metadata, several plans, a plan with another filter) reads the matching customers'
 * timelines, so it costs in proportion to the customers it matches, never to the others.
 */

/** Today in the merchant's reporting time zone (`zone`). */
const today = (zone: string) => localDayOf(now().getTime(), zone);

/**
 * The matching customers' contributions, summed, as aggregate items (a segment of `kind:
 * 'customers'`, docs/metrics.md "Segments"): the customer ids from the metadata and plan-customers
 * indexes (every index's shards at once), intersected; their timelines read by key; each
 * restricted to the matching lines and mapped by the same pure function the writes use.
 */
const segmentItems = async (merchantId: string, figures: Figures, slice: Extract<Selection, { kind: 'customers' }>) => {
  const [byMetadata, byPlan] = await Promise.all([
    Promise.all(slice.metadata.map(([k, v]) => customersWithMetadata(merchantId, k, v))),
    Promise.all(slice.plans.map((plan) => customersOfPlan(merchantId, plan))),
  ]);
  const sets = [...byMetadata, ...(byPlan.length ? [new Set(byPlan.flatMap((s) => [...s]))] : [])];
  const [first, ...rest] = sets;
  const ids = [...(first ?? [])].filter((id) => rest.every((s) => s.has(id))).sort((a, b) => a - b);
  const sum: Contributions = new Map();
  for (const state of (await countedTimelines(merchantId, figures, await readTimelines(merchantId, ids))).values())
    addContributions(sum, contributionsWhere(state.timeline, figures.reportingCurrency, slice.lines, figures.timezone));
  return aggregateItemsOf(sum);
};

/** The movement items a range needs, of the whole, a stored segment, or the matching customers. */
const rangeItems = async (merchantId: string, figures: Figures, slice: Selection, range: Range) => {
  if (slice.kind === 'customers') return itemsInRange((await segmentItems(merchantId, figures, slice)).movements, rangeReads(range));
  return readRangeItems(
    merchantId,
    rangeReads(range),
    movementsSource(merchantId, storedParts(slice.segment, figures), figures.generation),
  );
};

/** The stored slices whose items add up to a segment's: its own, and for the reporting currency's (its difference from the whole) the whole's too. */
const storedParts = (segment: Segment | null, figures: Figures): (Segment | null)[] =>
  isReportingSegment(segment, figures.reportingCurrency) ? [null, segment] : [segment];

/** GET /metrics/mrr: one entry per day, week, month, quarter or year of the range, and the range's summary. */
export const mrrSeries = (merchantId: string, figures: Figures, q: MrrQuery) => figuresRead(figures, (f) => mrrSeriesIn(merchantId, f, q));
const mrrSeriesIn = async (merchantId: string, figures: Figures, q: MrrQuery) => {
  const range = resolveRange(q, today(figures.timezone), figures.timezone);
  const slice = resolveSegment(q);
  const items = await rangeItems(merchantId, figures, slice, range);
  return series(range, foldRange(range, items));
};

/** GET /metrics/trials: the trials started in each bucket (and segment) and what became of them. */
export const trialsSeries = (merchantId: string, figures: Figures, q: MrrQuery) =>
  figuresRead(figures, async (f) => {
    const range = resolveRange(q, today(f.timezone), f.timezone);
    return trialSeries(range, foldRange(range, await rangeItems(merchantId, f, resolveSegment(q), range)));
  });

/** GET /metrics/recovery: failed renewals per bucket (and segment): started, recovered, churned as delinquent. */
export const recoverySeriesOf = (merchantId: string, figures: Figures, q: MrrQuery) =>
  figuresRead(figures, async (f) => {
    const range = resolveRange(q, today(f.timezone), f.timezone);
    return recoverySeries(range, foldRange(range, await rangeItems(merchantId, f, resolveSegment(q), range)));
  });

/**
 * GET /metrics/forecast: MRR now and, at each month end from the current month's, as the changes
 * already scheduled move it (trial conversions, scheduled and delinquent cancellations): the level
 * of today's items, and the forecast's month items. Apart from the actuals, which never look past today.
 */
export const forecast = (merchantId: string, figures: Figures, q: ForecastQuery) =>
  figuresRead(figures, async (f) => {
    const day = today(f.timezone);
    const range: Range = { start: day, end: day, interval: 'day' };
    const months = q.months ?? FORECAST_MONTHS.default;
    const last = plusMonths(day.slice(0, 7), months - 1);
    return forecastSeries(range, await readForecastItems(merchantId, rangeReads(range), f.generation, day.slice(0, 7), last), months);
  });

/** GET /metrics/summary: now, and the last 30 days (today and the 29 before it, in the merchant's time zone). */
export const metricsSummary = (merchantId: string, figures: Figures, q: SummaryQuery) =>
  figuresRead(figures, (f) => metricsSummaryIn(merchantId, f, q));
const metricsSummaryIn = async (merchantId: string, figures: Figures, q: SummaryQuery) => {
  const range = summaryRange(today(figures.timezone));
  const slice = resolveSegment(q);
  const items = await rangeItems(merchantId, figures, slice, range);
  return summaryOf(foldRange(range, items));
};

/** GET /metrics/cohorts: one Query over the cohort items of the range's cohorts (or the matching customers' figures). */
export const cohorts = (merchantId: string, figures: Figures, q: CohortsQuery) => figuresRead(figures, (f) => cohortsIn(merchantId, f, q));
const cohortsIn = async (merchantId: string, figures: Figures, q: CohortsQuery) => {
  const range = resolveCohortRange(q, today(figures.timezone).slice(0, 7));
  const slice = resolveSegment(q);
  const items =
    slice.kind === 'stored'
      ? await readCohortItems(merchantId, range.start, range.end, storedParts(slice.segment, figures), figures.generation)
      : cohortItemsIn((await segmentItems(merchantId, figures, slice)).cohorts, range.start, range.end);
  return cohortTable(range, items);
};

/** GET /metrics/plans: the plan list (one Query), then every plan's segment read to the day in one state (two Queries a shard, all in parallel). */
export const planFigures = (merchantId: string, figures: Figures, q: PlansQuery) =>
  figuresRead(figures, (f) => planFiguresIn(merchantId, f, q));
const planFiguresIn = async (merchantId: string, { timezone: zone, generation }: Figures, q: PlansQuery) => {
  const day = resolveDay(q.date, today(zone), zone);
  const range = { start: day, end: day, interval: 'day' as const };
  const plans = await readPlanNames(merchantId);
  const read = await readRangeItemsApart(
    merchantId,
    rangeReads(range),
    plans.map((plan) => movementsSource(merchantId, [{ dimension: 'plan', value: plan }], generation)),
  );
  return {
    date: day,
    data: planTable(plans.map((plan, i) => [plan, foldRange(range, read[i])] as [string, ReturnType<typeof foldRange>])),
  };
};

/** GET /metrics/churn-reasons: the churn-by-reason items of the range, read month-wise (up to three Queries). */
export const churnReasons = (merchantId: string, figures: Figures, q: ChurnReasonsQuery) =>
  figuresRead(figures, (f) => churnReasonsIn(merchantId, f, q));
const churnReasonsIn = async (merchantId: string, { timezone: zone, generation }: Figures, q: ChurnReasonsQuery) => {
  const range = { ...resolveRange({ ...q, interval: 'month' }, today(zone), zone), interval: 'month' as const };
  return reasonTable(range, await readRangeItems(merchantId, rangeReads(range), reasonsSource(merchantId, generation)));
};

/** Timeline heads read a BatchGetItem each: 100 a request, these many requests at once. */
const MOVEMENT_ROUND = 1_000;

/**
 * GET /metrics/movements: the customers behind a range's movements, newest first (docs/metrics.md).
 * Every customer's timeline is read by key (ids 1 to the merchant's last, heads a BatchGetItem per
 * 100) and classified in memory as the aggregates count it, so the rows of one type in one bucket
 * add up to that bucket's figure; the cost grows with the merchant's customers, like a metadata
 * segment's with the customers it matches.
 */
export const mrrMovements = async (merchantId: string, figures: Figures, q: MovementsQuery) => {
  const { start, end } = resolveRange(
    { start_date: q.start_date, end_date: q.end_date, interval: 'day' },
    today(figures.timezone),
    figures.timezone,
  );
  // Up to now: a change dated later today is in today's figures only once it has happened.
  const upTo = `${formatTimestamp(now())}~`;
  const rows: (ReturnType<typeof movementRow> & { customer_id: number; line: string })[] = [];
  for await (const ids of customerIdRounds(merchantId, MOVEMENT_ROUND)) {
    for (const [id, state] of await countedTimelines(merchantId, figures, await readTimelines(merchantId, ids))) {
      if (state.version === null) continue;
      for (const m of movementsOf(state.timeline, figures.reportingCurrency)) {
        if (m.at >= upTo || (q.type !== undefined && m.kind !== q.type)) continue;
        const day = localDateOfIso(m.at, figures.timezone);
        if (day >= start && day <= end) rows.push({ customer_id: id, ...movementRow(m), line: m.line });
      }
    }
  }
  rows.sort((a, b) => (a.date !== b.date ? (a.date < b.date ? 1 : -1) : a.customer_id - b.customer_id));
  const list = `movements:${start}:${end}:${q.type ?? ''}`;
  const { shown, offset, total, next } = pageOfRows(merchantId, rows, list, (r) => `${r.date}|${r.customer_id}|${r.line}`, q);
  // The page's customers named in one BatchGetItem (a dashboard names people, never "Customer #12").
  const names = await customerNames(
    merchantId,
    shown.map((r) => r.customer_id),
  );
  const items = shown.map(({ line: _, ...row }) => ({
    ...row,
    customer_email: names.get(row.customer_id)?.email ?? null,
    customer_name: names.get(row.customer_id)?.name ?? null,
  }));
  return { items, meta: cursorMeta(offset, q.per_page, total, items.length, next) };
};
