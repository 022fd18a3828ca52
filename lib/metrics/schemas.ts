import * as z from 'zod';
import { currency, pageQuery } from '#lib/shared/fields';
import { customerActivitySchema } from '#lib/shared/mrr-movement';
import { MOVEMENTS } from '#lib/metrics/timeline';
import { FORECAST_MONTHS } from '#lib/metrics/rules';
import { INTERVALS, type Interval } from '#lib/shared/buckets';
import { dayParam, METADATA_FILTERS_MAX, monthParam, onlyKnown, PLANS_MAX, SEGMENT_CYCLES } from '#lib/metrics/params';

export { INTERVALS, type Interval };

const PLAN_NAME_MAX = 255;
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
    voluntary_churn: signed().meta({ description: 'The churn not caused by a failed renewal (churn − delinquent_churn)' }),
    delinquent_churn: signed().meta({
      description: 'The churn of subscriptions cancelled as delinquent: past due longer than `delinquency_days` (involuntary churn)',
    }),
    reactivation: amount(),
    net_change: signed(),
    past_due_mrr: amount().meta({
      description: 'The MRR past due (a failed renewal not yet recovered) at the end of the interval; counted in mrr',
    }),
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

/** GET /metrics/trials: one entry per bucket of the trials that started in it. */
const trialFields = {
  trials_started: z.int().meta({ description: 'Trials that started in the interval (by started_at)' }),
  converted: z.int().meta({ description: 'Of those, the ones converted by now' }),
  cancelled: z.int().meta({ description: 'Of those, the ones cancelled during their trial' }),
  still_trialing: z.int().meta({ description: 'Of those, the ones still trialing now' }),
  conversion_rate: rate().meta({
    description: 'converted ÷ (trials_started − still_trialing) × 100, 2 decimals; null when none of them has ended',
  }),
  avg_days_to_convert: z
    .number()
    .nullable()
    .meta({ description: 'Mean days from started_at to conversion of the converted ones, 2 decimals; null when none', example: 14 }),
};
export const trialEntrySchema = z
  .object({ date: z.string().meta({ format: 'date', description: 'First day of the interval (clamped to start_date)' }), ...trialFields })
  .meta({ id: 'TrialEntry' });
export const trialSeriesSchema = z.object({
  data: z.array(trialEntrySchema),
  summary: z.object(trialFields).meta({ id: 'TrialSummary', description: 'The same over the whole range' }),
});

/** GET /metrics/recovery: a count of subscriptions and their MRR. */
const episodes = (description: string) =>
  z
    .object({
      mrr: amount().meta({ description: 'Their MRR (at the time), in the reporting currency' }),
      subscriptions: z.int(),
    })
    .meta({ description });
const recoveryFields = {
  past_due_started: episodes('Subscriptions that went past due in the interval (a failed renewal), and their MRR'),
  recovered: episodes('Past-due subscriptions recovered in the interval, and their MRR'),
  churned: episodes('Past-due subscriptions cancelled as delinquent in the interval (involuntary churn), and their MRR'),
  recovery_rate: rate().meta({
    description:
      'Of the past-due episodes that ended in the interval: recovered ÷ (recovered + churned) × 100, 2 decimals; null when none ended',
  }),
};
export const recoveryEntrySchema = z
  .object({
    date: z.string().meta({ format: 'date', description: 'First day of the interval (clamped to start_date)' }),
    ...recoveryFields,
  })
  .meta({ id: 'RecoveryEntry' });
export const recoverySeriesSchema = z.object({
  data: z.array(recoveryEntrySchema),
  summary: z.object(recoveryFields).meta({ id: 'RecoverySummary', description: 'The same over the whole range' }),
});

const MONTHS_MESSAGE = `The months field must be an integer between ${FORECAST_MONTHS.min} and ${FORECAST_MONTHS.max}.`;
const forecastFields = {
  months: z
    .string()
    .regex(/^\d+$/, { message: MONTHS_MESSAGE })
    .transform(Number)
    .refine((n) => n >= FORECAST_MONTHS.min && n <= FORECAST_MONTHS.max, { message: MONTHS_MESSAGE })
    .optional()
    .meta({
      type: 'integer',
      minimum: FORECAST_MONTHS.min,
      maximum: FORECAST_MONTHS.max,
      description: `Month ends to forecast, the current month's first: ${FORECAST_MONTHS.min}–${FORECAST_MONTHS.max} (default ${FORECAST_MONTHS.default})`,
    }),
};
export const forecastQuery = z.looseObject(forecastFields).superRefine(onlyKnown(Object.keys(forecastFields), []));
export type ForecastQuery = z.output<typeof forecastQuery>;

export const forecastEntrySchema = z
  .object({
    date: z.string().meta({ format: 'date', description: "The month's last day (in the merchant's reporting time zone)" }),
    committed_mrr: amount().meta({
      description:
        "Today's MRR moved by every change already scheduled up to the end of that day (trial conversions, scheduled and delinquent cancellations)",
    }),
    new: amount().meta({ description: 'Trial conversions scheduled in the month (their MRR)' }),
    churn: signed().meta({ description: 'Cancellations scheduled in the month, delinquent ones included (the MRR they take, negative)' }),
    delinquent_churn: signed().meta({
      description: 'Of the churn, the past-due subscriptions that will be cancelled as delinquent by then unless recovered',
    }),
    unconverted: z.record(z.string(), z.string()).meta({
      description: 'Scheduled moves in other currencies left out for want of an exchange rate for their month, per currency; {} when none',
      example: {},
    }),
  })
  .meta({ id: 'ForecastEntry' });
export const forecastSchema = z.object({
  data: z.array(forecastEntrySchema),
  summary: z
    .object({
      current_mrr: amount().meta({ description: 'MRR now: the actuals, where the forecast starts' }),
      committed_mrr: amount().meta({ description: "The last point's committed MRR" }),
      unconverted: unconverted(),
    })
    .meta({ id: 'ForecastSummary' }),
});
