import * as z from 'zod';
import { DATE_OR_DATETIME_PATTERN, isDateOnly, parseDate, parseTimestamp } from '#lib/shared/time';
import { currency, pageQuery } from '#lib/shared/fields';
import { customerActivitySchema } from '#lib/shared/mrr-movement';
import { MOVEMENTS } from '#lib/metrics/timeline';
import { DEFAULT_TIMEZONE, localDayOf } from '#lib/shared/zone';

import { INTERVALS, type Interval } from '#lib/shared/buckets';
export { INTERVALS, type Interval };

/**
 * A day `YYYY-MM-DD`; a date-time (ISO 8601 with `Z` or an offset, docs/api-conventions.md) names
 * its day in `zone`, the merchant's reporting time zone (UTC by default).
 */
export const utcDayOf = (v: string, zone = DEFAULT_TIMEZONE): string | null => {
  const d = parseDate(v) ?? (isDateOnly(v) ? null : parseTimestamp(v));
  if (!d) return null;
  return isDateOnly(v) ? d.toISOString().slice(0, 10) : localDayOf(d.getTime(), zone);
};

/** A day parameter (`start_date`, `end_date`, `date`). */
export const dayParam = () =>
  z
    .string()
    .refine((v) => utcDayOf(v) !== null, { message: 'The :field field must be a valid date (YYYY-MM-DD).' })
    .meta({
      pattern: DATE_OR_DATETIME_PATTERN,
      example: '2026-01-31',
      description: "A date (YYYY-MM-DD); a date-time is taken as its day in the merchant's reporting time zone",
    });

const MONTH = /^(\d{4})-(\d{2})$/;
/** `YYYY-MM`, years 0001–9999. */
export const isMonth = (v: string): boolean => {
  const m = MONTH.exec(v);
  return !!m && Number(m[1]) >= 1 && Number(m[2]) >= 1 && Number(m[2]) <= 12;
};
/** A month parameter (`start_month`, `end_month`). */
export const monthParam = () =>
  z
    .string()
    .refine(isMonth, { message: 'The :field field must be a valid month (YYYY-MM).' })
    .meta({ example: '2026-01', pattern: '^(?!0000)\\d{4}-(?:0[1-9]|1[0-2])$' });

/** The recurring billing cycles a segment can name. */
export const SEGMENT_CYCLES = ['monthly', 'quarterly', 'semi-annual', 'yearly'] as const;
/** The filters a metrics read takes besides its own parameters (`metadata.<key>` too). */
export const SEGMENT_FILTERS = ['plan', 'billing_cycle', 'currency'] as const;

/** The query parameters a segmented read may repeat: `plan` (a union) and `metadata.<key>` (ANDed). */
export const SEGMENT_REPEATABLE = ['plan', 'metadata.'] as const;
const PLAN_NAME_MAX = 255;
/**
 * Most plans a query may name, and most metadata filters (each repeat counts): a segment of the
 * matching customers reads 4 index partitions for each, and a URL holding more would pass what
 * API Gateway takes (a 414 no document describes).
 */
export const PLANS_MAX = 20;
export const METADATA_FILTERS_MAX = 10;

/** Segment filters (docs/metrics.md, "Segments"): the figures over only the matching customers' lines. */
const segmentFields = {
  plan: z
    .union([
      z.string().min(1).max(PLAN_NAME_MAX),
      z
        .array(z.string())
        .min(2)
        .refine((names) => names.every((n) => n.length >= 1 && n.length <= PLAN_NAME_MAX), {
          message: `Each plan must have 1 to ${PLAN_NAME_MAX} characters.`,
        })
        .meta({ maxItems: PLANS_MAX }),
    ])
    // Outside the union, so the excess gets its own message rather than the union's.
    .refine((v) => !Array.isArray(v) || v.length <= PLANS_MAX, { message: `The plan parameter may be given at most ${PLANS_MAX} times.` })
    .optional()
    .meta({
      description: `Only the lines of this plan (exact name). Repeat it (\`plan=Pro&plan=Team\`, at most ${PLANS_MAX} times) for the lines of any of the plans: read from the matching customers' timelines (docs/metrics.md). Also \`metadata.<key>=<value>\`: only the customers whose metadata holds it (at most ${METADATA_FILTERS_MAX} such filters, repeats included)`,
      example: 'Pro',
    }),
  billing_cycle: z.enum(SEGMENT_CYCLES).optional().meta({ description: 'Only the lines of this billing cycle' }),
  currency: currency().optional().meta({
    description:
      'Only the subscriptions and orders in this currency, in it, the reporting currency included (without it: every line, other currencies converted into the reporting currency)',
  }),
};

/** The parameter prefix of a customer-metadata filter. */
export const METADATA_PREFIX = 'metadata.';

/**
 * A metrics query takes only its own parameters, the segment filters and `metadata.<key>`: any
 * other name is a 422 on it, naming what is allowed (a misspelt filter must not answer the whole).
 * A metadata filter must name its key and give a value (repeated: each value must match).
 */
export const onlyKnown =
  (own: readonly string[], filters: readonly string[] = SEGMENT_FILTERS) =>
  (q: Record<string, unknown>, ctx: z.core.$RefinementCtx<Record<string, unknown>>) => {
    const known = [...own, ...filters];
    let metadata = 0;
    for (const [key, value] of Object.entries(q)) {
      if (key.startsWith(METADATA_PREFIX) && key !== METADATA_PREFIX) {
        const before = metadata;
        metadata += Array.isArray(value) ? value.length : 1;
        // Named once, on the parameter that passes the bound.
        if (before <= METADATA_FILTERS_MAX && metadata > METADATA_FILTERS_MAX)
          ctx.addIssue({
            code: 'custom',
            path: [key],
            message: `A query may hold at most ${METADATA_FILTERS_MAX} metadata.<key> filters, repeats included.`,
          });
      }
      if (known.includes(key)) continue;
      if (key === METADATA_PREFIX) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'The metadata. parameter must name a metadata key: metadata.<key>=<value>.' });
        continue;
      }
      if (key.startsWith(METADATA_PREFIX)) continue;
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `The ${key} parameter is not supported. Allowed: ${[...known, 'metadata.<key>'].join(', ')}.`,
      });
    }
  };

/** The metadata filters of a query (`metadata.<key>=<value>`, each repeat its own), as [key, value] pairs: all must match. */
export const metadataFilters = (q: Record<string, unknown>): [key: string, value: string][] =>
  Object.entries(q)
    .filter(([k]) => k.startsWith(METADATA_PREFIX) && k.length > METADATA_PREFIX.length)
    .flatMap(([k, v]) =>
      (Array.isArray(v) ? v : [v])
        .filter((x): x is string => typeof x === 'string')
        .map((x) => [k.slice(METADATA_PREFIX.length), x] as [string, string]),
    );

/** The plans a query names (`plan`, repeatable). */
export const planFilters = (q: { plan?: string | string[] }): string[] =>
  q.plan === undefined ? [] : Array.isArray(q.plan) ? [...new Set(q.plan)] : [q.plan];

/** GET /metrics/mrr: dates (days of the merchant's time zone, inclusive); the range checks need the clock's defaults (service). */
const mrrFields = {
  start_date: dayParam().optional().meta({
    description: "First day (in the merchant's reporting time zone, inclusive). Default: the 1st of the month 11 months before end_date",
  }),
  end_date: dayParam()
    .optional()
    .meta({ description: "Last day (in the merchant's reporting time zone, inclusive). Default: today there" }),
  interval: z.enum(INTERVALS).optional().meta({
    description:
      "day, week (Monday to Sunday), month (default), quarter (January, April, July, October) or year, in the merchant's reporting time zone",
  }),
};
export const mrrQuery = z.looseObject({ ...mrrFields, ...segmentFields }).superRefine(onlyKnown(Object.keys(mrrFields)));
export type MrrQuery = z.output<typeof mrrQuery>;

/** GET /metrics/summary: only segment filters. */
export const summaryQuery = z.looseObject({ ...segmentFields }).superRefine(onlyKnown([]));
export type SummaryQuery = z.output<typeof summaryQuery>;

const cohortFields = {
  start_month: monthParam().optional().meta({ description: 'First cohort (YYYY-MM). Default: 11 months before end_month' }),
  end_month: monthParam().optional().meta({
    description: 'Last cohort and last retention month (YYYY-MM), at most 36 months after start_month. Default: the current month',
  }),
};
export const cohortsQuery = z.looseObject({ ...cohortFields, ...segmentFields }).superRefine(onlyKnown(Object.keys(cohortFields)));
export type CohortsQuery = z.output<typeof cohortsQuery>;
/** The segment filters any metrics query carries. */
export type SegmentQuery = { plan?: string | string[]; billing_cycle?: string; currency?: string } & Record<string, unknown>;

const amount = () => z.string().meta({ example: '1200.00' });
/** The MRR the reporting currency's figures leave out for want of an exchange rate, per currency (docs/exchange-rates.md). */
const unconverted = () =>
  z.record(z.string(), z.string()).meta({
    description:
      'MRR in other currencies left out of these figures because their month has no exchange rate, per currency, in that currency (2 decimals); {} when nothing is left out. Set rates with PUT /exchange-rates/{currency}',
    example: { USD: '120.00' },
  });

const signed = () => z.string().meta({ example: '-50.00' });
const rate = () => z.number().nullable().meta({ description: 'Percentage with 2 decimals; null when its base is 0', example: 4.17 });

export const mrrEntrySchema = z
  .object({
    date: z.string().meta({ format: 'date', description: 'First day of the interval (clamped to start_date)' }),
    mrr: amount().meta({ description: 'MRR at the end of the interval' }),
    new: amount(),
    expansion: amount(),
    contraction: signed(),
    churn: signed(),
    reactivation: amount(),
    net_change: signed(),
    active_subscriptions: z.int(),
    active_customers: z.int(),
    arpa: amount().nullable().meta({ description: 'mrr ÷ active_customers at the end of the interval; null without any' }),
    customer_churn_rate: rate().meta({
      description: 'Customers churned in the interval ÷ active customers just before it × 100; null when there were none',
    }),
    mrr_churn_rate: rate().meta({
      description: '(|churn| + |contraction|) ÷ MRR just before the interval × 100; null when that MRR was 0',
    }),
    net_mrr_retention: rate().meta({
      description:
        '(MRR just before the interval + expansion + contraction + churn) ÷ that MRR × 100 (new and reactivation left out); null when that MRR was 0',
    }),
    gross_mrr_retention: rate().meta({
      description: '(MRR just before the interval + contraction + churn) ÷ that MRR × 100; null when that MRR was 0',
    }),
    unconverted: unconverted(),
  })
  .meta({ id: 'MrrEntry' });

export const mrrSummarySchema = z
  .object({
    current_mrr: amount(),
    arr: amount(),
    arpa: amount().nullable(),
    customer_churn_rate: rate(),
    mrr_churn_rate: rate(),
    unconverted: unconverted(),
  })
  .meta({ id: 'MrrRangeSummary' });

export const mrrSeriesSchema = z.object({
  data: z.array(mrrEntrySchema),
  summary: mrrSummarySchema,
  unconverted: unconverted().meta({ description: "The summary's `unconverted`: what the figures leave out at the range's end" }),
});
/** GET /metrics/summary's answer: the summary, and what it leaves out, also at the top level. */
export const metricsSummaryAnswer = z.object({
  data: z.lazy(() => metricsSummarySchema),
  unconverted: unconverted().meta({ description: "The summary's `unconverted`" }),
});

export const metricsSummarySchema = z
  .object({
    current_mrr: amount(),
    arr: amount(),
    arpa: amount().nullable(),
    active_subscriptions: z.int(),
    active_customers: z.int(),
    customer_churn_rate: rate(),
    mrr_churn_rate: rate(),
    net_mrr_churn_rate: rate(),
    quick_ratio: z.number().nullable().meta({ description: 'Ratio with 2 decimals; null when nothing was lost' }),
    ltv: amount().nullable(),
    unconverted: unconverted(),
  })
  .meta({ id: 'MetricsSummary' });

const retentionSchema = z.object({
  month: z.string(),
  customers: z.int(),
  mrr: amount(),
  customer_retention: rate(),
  mrr_retention: rate(),
});

export const cohortSchema = z
  .object({ cohort: z.string(), customers: z.int(), mrr: amount(), retention: z.array(retentionSchema) })
  .meta({ id: 'Cohort' });

/** GET /metrics/plans: the day the figures are read at. */
export const plansQuery = z.object({
  date: dayParam()
    .optional()
    .meta({ description: "The day (in the merchant's reporting time zone) whose end the figures are read at. Default: today there" }),
});
export type PlansQuery = z.output<typeof plansQuery>;

export const planRowSchema = z
  .object({
    plan: z.string().meta({ description: 'Plan name, as on its subscriptions' }),
    mrr: amount().meta({ description: 'MRR of the plan at the end of the day' }),
    subscriptions: z.int().meta({ description: 'Active subscriptions of the plan' }),
    customers: z.int().meta({ description: 'Customers with MRR in the plan' }),
  })
  .meta({ id: 'PlanFigures' });

/** GET /metrics/churn-reasons: a range of days, as for GET /metrics/mrr. */
export const churnReasonsQuery = z.object({
  start_date: mrrFields.start_date,
  end_date: mrrFields.end_date,
});
export type ChurnReasonsQuery = z.output<typeof churnReasonsQuery>;

export const churnReasonRowSchema = z
  .object({
    reason: z.string().nullable().meta({ description: 'The cancellation reason as given; null when none was given' }),
    churned_mrr: amount().meta({ description: 'MRR those cancellations took to 0 in the range (a positive amount)' }),
    churned_customers: z.int().meta({ description: 'Customers whose last live subscription those cancellations ended' }),
  })
  .meta({ id: 'ChurnReason' });

/** GET /metrics/movements: the customers behind the movements of a range of days (the bars of GET /metrics/mrr). */
export const movementsQuery = z.object({
  start_date: mrrFields.start_date,
  end_date: mrrFields.end_date,
  type: z
    .enum(MOVEMENTS)
    .optional()
    .meta({ description: 'Only this movement (new, expansion, contraction, churn, reactivation). Default: all' }),
  ...pageQuery,
});
export type MovementsQuery = z.output<typeof movementsQuery>;

export const metricsMovementSchema = customerActivitySchema
  .extend({
    customer_id: z.int().meta({ description: 'The customer whose MRR moved' }),
    customer_email: z.string().nullable().meta({ description: "The customer's email (a deleted customer's too)" }),
    customer_name: z.string().nullable().meta({ description: "The customer's name; null when it has none" }),
  })
  .meta({ id: 'MetricsMovement' });
