import * as z from 'zod';
import { DATE_OR_DATETIME_PATTERN, isDateOnly, parseDate, parseTimestamp } from '#lib/shared/time';

export const INTERVALS = ['day', 'week', 'month', 'quarter', 'year'] as const;
export type Interval = (typeof INTERVALS)[number];

/** A UTC day `YYYY-MM-DD`; a date-time (ISO 8601 with `Z` or an offset, docs/api-conventions.md) names its UTC day. */
export const utcDayOf = (v: string): string | null => {
  const d = parseDate(v) ?? (isDateOnly(v) ? null : parseTimestamp(v));
  return d ? d.toISOString().slice(0, 10) : null;
};

const date = () =>
  z
    .string()
    .refine((v) => utcDayOf(v) !== null, { message: 'The :field field must be a valid date (YYYY-MM-DD).' })
    .meta({
      pattern: DATE_OR_DATETIME_PATTERN,
      example: '2026-01-31',
      description: 'A date (YYYY-MM-DD); a date-time is taken as its UTC day',
    });

const MONTH = /^(\d{4})-(\d{2})$/;
/** `YYYY-MM`, years 0001–9999. */
export const isMonth = (v: string): boolean => {
  const m = MONTH.exec(v);
  return !!m && Number(m[1]) >= 1 && Number(m[2]) >= 1 && Number(m[2]) <= 12;
};
const month = () =>
  z.string().refine(isMonth, { message: 'The :field field must be a valid month (YYYY-MM).' }).meta({ example: '2026-01' });

/** GET /metrics/mrr: dates (UTC days, inclusive); the range checks need the clock's defaults (service). */
export const mrrQuery = z.object({
  start_date: date()
    .optional()
    .meta({ description: 'First day (UTC, inclusive). Default: the 1st of the month 11 months before end_date' }),
  end_date: date().optional().meta({ description: 'Last day (UTC, inclusive). Default: today' }),
  interval: z
    .enum(INTERVALS)
    .optional()
    .meta({ description: 'day, week (Monday to Sunday, UTC), month (default), quarter (January, April, July, October) or year' }),
});
export type MrrQuery = z.output<typeof mrrQuery>;

export const cohortsQuery = z.object({
  start_month: month().optional().meta({ description: 'First cohort (YYYY-MM). Default: 11 months before end_month' }),
  end_month: month().optional().meta({
    description: 'Last cohort and last retention month (YYYY-MM), at most 36 months after start_month. Default: the current month',
  }),
});
export type CohortsQuery = z.output<typeof cohortsQuery>;

const amount = () => z.string().meta({ example: '1200.00' });
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
  })
  .meta({ id: 'MrrEntry' });

export const mrrSummarySchema = z
  .object({
    current_mrr: amount(),
    arr: amount(),
    arpa: amount().nullable(),
    customer_churn_rate: rate(),
    mrr_churn_rate: rate(),
  })
  .meta({ id: 'MrrRangeSummary' });

export const mrrSeriesSchema = z.object({ data: z.array(mrrEntrySchema), summary: mrrSummarySchema });

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
