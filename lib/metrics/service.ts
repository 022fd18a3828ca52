import { now } from '#lib/clock';
import type { CohortsQuery, MrrQuery } from '#lib/metrics/schemas';
import {
  cohortTable,
  dayOf,
  foldRange,
  rangeReads,
  resolveCohortRange,
  resolveRange,
  series,
  summaryOf,
  summaryRange,
} from '#lib/metrics/rules';
import { readCohortItems, readRangeItems } from '#lib/metrics/store';

/**
 * GET /metrics/* (docs/metrics.md), from the pre-aggregated items only — never orders, events or
 * subscriptions: each read resolves its range, reads the items it needs (store.ts) and computes
 * the figures from them (rules.ts). What a read touches is bounded by the range and the months of
 * history, never by how many customers or subscriptions the merchant has.
 */

const today = () => dayOf(now());

/** GET /metrics/mrr: one entry per day, week, month, quarter or year of the range, and the range's summary. */
export const mrrSeries = async (merchantId: string, q: MrrQuery) => {
  const range = resolveRange(q, today());
  return series(range, foldRange(range, await readRangeItems(merchantId, rangeReads(range))));
};

/** GET /metrics/summary: now, and the last 30 days (today and the 29 before it, UTC). */
export const metricsSummary = async (merchantId: string) => {
  const range = summaryRange(today());
  return summaryOf(foldRange(range, await readRangeItems(merchantId, rangeReads(range))));
};

/** GET /metrics/cohorts: one Query over the cohort items of the range's cohorts. */
export const cohorts = async (merchantId: string, q: CohortsQuery) => {
  const range = resolveCohortRange(q, today().slice(0, 7));
  return cohortTable(range, await readCohortItems(merchantId, range.start, range.end));
};
