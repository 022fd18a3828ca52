import * as z from 'zod';
import {
  churnReasonRowSchema,
  metricsMovementSchema,
  movementsQuery,
  churnReasonsQuery,
  cohortSchema,
  cohortsQuery,
  metricsSummaryAnswer,
  mrrQuery,
  mrrSeriesSchema,
  planRowSchema,
  plansQuery,
  summaryQuery,
  trialSeriesSchema,
  forecastQuery,
  forecastSchema,
  recoverySeriesSchema,
} from '#lib/metrics/schemas';
import { SEGMENT_REPEATABLE } from '#lib/metrics/params';
import { defineRoute } from '#lib/http/route';
import { listOf } from '#lib/shared/schemas';
import { errors, dashboardRead, invalid } from '#lib/http/route-parts';
import { RECOUNT_PENDING_DOC } from '#lib/shared/recount-pending-header';

/** What the segmented reads say of their filters (docs/metrics.md, "Segments"). */
const SEGMENT_FILTERS_NOTE =
  'Segment filters: `plan` (repeatable: the lines of any of the plans), `billing_cycle`, `currency`, and `metadata.<key>=<value>` (customer metadata, the value compared exactly as a string; repeatable, ANDed): the figures over only the matching customers\' lines. One plan, cycle or currency reads its own aggregates; any other segment reads the matching customers\' timelines, at a cost that grows with the customers it matches (docs/metrics.md, "Segments").';

/** The metrics routes (their handlers import only these; lib/api/routes.ts is the union). */
export const routes = {
  metricsMrr: defineRoute({
    method: 'GET',
    path: '/metrics/mrr',
    handler: 'functions/metrics/mrr.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary:
      "MRR, its movements and rates per day, week (from Monday), month, quarter or year of the merchant's time zone, with the range summary",
    description: `MRR per interval (day, week from Monday, month, calendar quarter or year, in the merchant's reporting time zone: \`GET /settings\`) between \`start_date\` and \`end_date\`, with each point's movements (new, expansion, contraction, churn, reactivation), its rates (ARPA, customer and MRR churn, net and gross MRR retention) and a summary of the range. Every figure equals a recomputation over the raw records (docs/metrics.md). \`Accept: text/csv\` gives the points as CSV (docs/api-conventions.md). ${SEGMENT_FILTERS_NOTE}`,
    tags: ['metrics'],
    request: { query: mrrQuery, repeatable: SEGMENT_REPEATABLE },
    responses: {
      200: {
        description: 'The MRR series',
        schema: mrrSeriesSchema,
        headers: {
          'Recount-Pending': RECOUNT_PENDING_DOC.read,
        },
      },
      ...errors,
      ...invalid,
    },
  }),
  metricsTrials: defineRoute({
    method: 'GET',
    path: '/metrics/trials',
    handler: 'functions/metrics/trials.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'Trials started per day, week, month, quarter or year, and what became of them: converted, cancelled, still trialing',
    description: `Per interval of the range (as \`GET /metrics/mrr\`), the trials whose subscription started in it (\`trial_ends_at\` given) and, of them by now: converted, cancelled during the trial, still trialing, the conversion rate of those that ended and the mean days to convert; and the same over the range (\`summary\`). \`Accept: text/csv\` gives the points as CSV. ${SEGMENT_FILTERS_NOTE}`,
    tags: ['metrics'],
    request: { query: mrrQuery, repeatable: SEGMENT_REPEATABLE },
    responses: {
      200: { description: 'The trials series', schema: trialSeriesSchema, headers: { 'Recount-Pending': RECOUNT_PENDING_DOC.read } },
      ...errors,
      ...invalid,
    },
  }),
  metricsRecovery: defineRoute({
    method: 'GET',
    path: '/metrics/recovery',
    handler: 'functions/metrics/recovery.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary:
      'Failed renewals per day, week, month, quarter or year: gone past due, recovered, churned as delinquent, and the recovery rate',
    description: `Per interval of the range (as \`GET /metrics/mrr\`): the subscriptions that went past due (\`PUT /subscriptions/{id}/past-due\`) and their MRR, those recovered (\`/recover\`), those cancelled as delinquent (past due longer than \`delinquency_days\`), and the recovery rate of the past-due episodes that ended in it; and the same over the range (\`summary\`). \`Accept: text/csv\` gives the points as CSV. ${SEGMENT_FILTERS_NOTE}`,
    tags: ['metrics'],
    request: { query: mrrQuery, repeatable: SEGMENT_REPEATABLE },
    responses: {
      200: { description: 'The recovery series', schema: recoverySeriesSchema, headers: { 'Recount-Pending': RECOUNT_PENDING_DOC.read } },
      ...errors,
      ...invalid,
    },
  }),
  metricsForecast: defineRoute({
    method: 'GET',
    path: '/metrics/forecast',
    handler: 'functions/metrics/forecast.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: "Committed MRR: today's MRR moved by the changes already scheduled, at each month end",
    description:
      "One point per month end in the merchant's reporting time zone, the current month's first (`months=3` on 28 November: 30 November, 31 December, 31 January): `committed_mrr`, today's MRR moved by every change already scheduled up to that day (trial conversions at `trial_ends_at`, scheduled cancellations at `cancel_at`, past-due subscriptions' delinquent cancellations at `failed_at` + `delinquency_days`), with that month's scheduled `new`, `churn` and `delinquent_churn`. A separate read: the actual series (`GET /metrics/mrr`) never look past today. `Accept: text/csv` gives the points as CSV (docs/metrics.md).",
    tags: ['metrics'],
    request: { query: forecastQuery },
    responses: {
      200: { description: 'The committed MRR forecast', schema: forecastSchema, headers: { 'Recount-Pending': RECOUNT_PENDING_DOC.read } },
      ...errors,
      ...invalid,
    },
  }),
  metricsSummary: defineRoute({
    method: 'GET',
    path: '/metrics/summary',
    handler: 'functions/metrics/summary.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'Current MRR, ARR, ARPA, active counts, and the last 30 days: churn rates, quick ratio, LTV',
    description: `The figures of today: MRR, ARR, ARPA, active subscriptions and customers, and over the last 30 days the customer and MRR churn rates, quick ratio and LTV (docs/metrics.md). ${SEGMENT_FILTERS_NOTE}`,
    tags: ['metrics'],
    request: { query: summaryQuery, repeatable: SEGMENT_REPEATABLE },
    responses: {
      200: {
        description: 'The summary',
        schema: metricsSummaryAnswer,
        headers: {
          'Recount-Pending': RECOUNT_PENDING_DOC.read,
        },
      },
      ...errors,
      ...invalid,
    },
  }),
  metricsCohorts: defineRoute({
    method: 'GET',
    path: '/metrics/cohorts',
    handler: 'functions/metrics/cohorts.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'Monthly cohorts (first month with MRR) with customer and MRR retention',
    description: `Customers grouped by the month their MRR first went above zero, with customer and MRR retention at the end of each later month; the first element is 100 / 100 (docs/metrics.md). ${SEGMENT_FILTERS_NOTE}`,
    tags: ['metrics'],
    request: { query: cohortsQuery, repeatable: SEGMENT_REPEATABLE },
    responses: {
      200: {
        description: 'Cohorts',
        schema: z.object({ data: z.array(cohortSchema) }),
        headers: { 'Recount-Pending': RECOUNT_PENDING_DOC.read },
      },
      ...errors,
      ...invalid,
    },
  }),
  metricsPlans: defineRoute({
    method: 'GET',
    path: '/metrics/plans',
    handler: 'functions/metrics/plans.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'MRR, active subscriptions and customers per plan at the end of a day',
    description:
      "Each plan's MRR, active subscriptions and customers with MRR in it at the end of `date` (default today), largest MRR first; plans with none left out. The same figures as `GET /metrics/mrr?plan=` at that day (docs/metrics.md).",
    tags: ['metrics'],
    request: { query: plansQuery },
    responses: {
      200: {
        description: 'Figures per plan',
        schema: z.object({ date: z.string().meta({ format: 'date' }), data: z.array(planRowSchema) }),
        headers: { 'Recount-Pending': RECOUNT_PENDING_DOC.read },
      },
      ...errors,
      ...invalid,
    },
  }),
  metricsChurnReasons: defineRoute({
    method: 'GET',
    path: '/metrics/churn-reasons',
    handler: 'functions/metrics/churn-reasons.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'Churned MRR and customers per cancellation reason over a range of days',
    description:
      "The MRR cancellations took to zero and the customers they churned between `start_date` and `end_date` (days of the merchant's reporting time zone, inclusive; the defaults and limits of `GET /metrics/mrr`), per cancellation `reason` (null: none given), largest first (docs/metrics.md).",
    tags: ['metrics'],
    request: { query: churnReasonsQuery },
    responses: {
      200: {
        description: 'Churn per reason',
        schema: z.object({ data: z.array(churnReasonRowSchema) }),
        headers: { 'Recount-Pending': RECOUNT_PENDING_DOC.read },
      },
      ...errors,
      ...invalid,
    },
  }),
  metricsMovements: defineRoute({
    method: 'GET',
    path: '/metrics/movements',
    handler: 'functions/metrics/movements.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'The customers behind the MRR movements of a range of days, newest first',
    description:
      "Each MRR movement between `start_date` and `end_date` (days of the merchant's reporting time zone, inclusive; the defaults and limits of `GET /metrics/mrr`), of one `type` or all: the customer, when, how much, its MRR before and after, and the subscription or recurring order behind it, newest first. The rows of one type in one bucket are the movements that bucket's figure in `GET /metrics/mrr` sums (the drill-down of a bar; each row rounded to the cent). Reads every customer's timeline: the cost grows with the merchant's customers (docs/metrics.md). Pages by number or by cursor.",
    tags: ['metrics'],
    request: { query: movementsQuery },
    responses: {
      200: {
        description: 'A page of movements',
        schema: listOf(metricsMovementSchema),
        headers: { 'Recount-Pending': RECOUNT_PENDING_DOC.read },
      },
      ...errors,
      ...invalid,
    },
  }),
};
