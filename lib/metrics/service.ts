import { now } from '#lib/clock';
import type { ChurnReasonsQuery, CohortsQuery, MrrQuery, PlansQuery, SummaryQuery } from '#lib/metrics/schemas';
import {
  cohortTable,
  dayOf,
  foldRange,
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
} from '#lib/metrics/rules';
import { movementsPartition, readCohortItems, readPlanNames, readRangeItems, reasonsPartition } from '#lib/metrics/store';

/**
 * GET /metrics/* (docs/metrics.md), from the pre-aggregated items only — never orders, events or
 * subscriptions: each read resolves its range, reads the items it needs (store.ts) and computes
 * the figures from them (rules.ts). What a read touches is bounded by the range and the months of
 * history, never by how many customers or subscriptions the merchant has. A segment (one plan,
 * billing cycle or currency) reads that segment's own items the same way.
 */

const today = () => dayOf(now());

/** GET /metrics/mrr: one entry per day, week, month, quarter or year of the range, and the range's summary. */
export const mrrSeries = async (merchantId: string, reportingCurrency: string, q: MrrQuery) => {
  const range = resolveRange(q, today());
  const segment = resolveSegment(q, reportingCurrency);
  return series(range, foldRange(range, await readRangeItems(movementsPartition(merchantId, segment), rangeReads(range))));
};

/** GET /metrics/summary: now, and the last 30 days (today and the 29 before it, UTC). */
export const metricsSummary = async (merchantId: string, reportingCurrency: string, q: SummaryQuery) => {
  const range = summaryRange(today());
  const segment = resolveSegment(q, reportingCurrency);
  return summaryOf(foldRange(range, await readRangeItems(movementsPartition(merchantId, segment), rangeReads(range))));
};

/** GET /metrics/cohorts: one Query over the cohort items of the range's cohorts. */
export const cohorts = async (merchantId: string, reportingCurrency: string, q: CohortsQuery) => {
  const range = resolveCohortRange(q, today().slice(0, 7));
  const segment = resolveSegment(q, reportingCurrency);
  return cohortTable(range, await readCohortItems(merchantId, range.start, range.end, segment));
};

/** GET /metrics/plans: the plan list (one Query), then each plan's segment read to the day (two Queries each, in parallel). */
export const planFigures = async (merchantId: string, q: PlansQuery) => {
  const day = resolveDay(q.date, today());
  const range = { start: day, end: day, interval: 'day' as const };
  const plans = await readPlanNames(merchantId);
  const folded = await Promise.all(
    plans.map(
      async (plan) =>
        [
          plan,
          foldRange(range, await readRangeItems(movementsPartition(merchantId, { dimension: 'plan', value: plan }), rangeReads(range))),
        ] as [string, ReturnType<typeof foldRange>],
    ),
  );
  return { date: day, data: planTable(folded) };
};

/** GET /metrics/churn-reasons: the churn-by-reason items of the range, read month-wise (up to three Queries). */
export const churnReasons = async (merchantId: string, q: ChurnReasonsQuery) => {
  const range = { ...resolveRange({ ...q, interval: 'month' }, today()), interval: 'month' as const };
  return reasonTable(range, await readRangeItems(reasonsPartition(merchantId), rangeReads(range)));
};
