import * as z from 'zod';
import { currency } from '#lib/shared/fields';
import { dayParam, INTERVALS, METADATA_FILTERS_MAX, monthParam, NO_PAYMENT_METHOD, onlyKnown } from '#lib/metrics';
import { BILLING_CYCLES, ORDER_SOURCES, PAYMENT_METHODS } from '#lib/orders/schemas';

export const SALES_PAYMENT_METHODS = [...PAYMENT_METHODS, NO_PAYMENT_METHOD] as const;

const rangeFields = {
  start_date: dayParam().optional().meta({
    description: "First day (in the merchant's reporting time zone, inclusive). Default: the 1st of the month 11 months before end_date",
  }),
  end_date: dayParam()
    .optional()
    .meta({ description: "Last day (in the merchant's reporting time zone, inclusive), today at the latest. Default: today there" }),
};

const salesFields = {
  ...rangeFields,
  interval: z.enum(INTERVALS).optional().meta({
    description:
      "day, week (Monday to Sunday), month (default), quarter (January, April, July, October) or year, in the merchant's reporting time zone",
  }),
};

/** The segment filters of GET /metrics/sales (and `metadata.<key>=<value>`). */
const salesSegmentFields = {
  payment_method: z
    .enum(SALES_PAYMENT_METHODS)
    .optional()
    .meta({ description: 'Only the orders paid this way (`none`: without a payment method)' }),
  currency: currency().optional().meta({
    description:
      'Only the orders in this currency, in it, unconverted (without it: every order, other currencies converted into the reporting currency)',
  }),
  source: z.enum(ORDER_SOURCES).optional().meta({ description: 'Only the orders from this source' }),
  billing_cycle: z
    .enum(BILLING_CYCLES)
    .optional()
    .meta({ description: 'Only the orders of this billing cycle (`one-time` or a recurring one)' }),
};
export const SALES_SEGMENT_FILTERS = Object.keys(salesSegmentFields);

export const salesQuery = z
  .looseObject({ ...salesFields, ...salesSegmentFields })
  .superRefine(onlyKnown(Object.keys(salesFields), SALES_SEGMENT_FILTERS))
  .meta({
    description: `Also \`metadata.<key>=<value>\`: only the orders of customers whose metadata holds it (at most ${METADATA_FILTERS_MAX} such filters, repeats included, ANDed)`,
  });
export type SalesQuery = z.output<typeof salesQuery>;

export const paymentMethodsQuery = z.looseObject({ ...rangeFields }).superRefine(onlyKnown(Object.keys(rangeFields), []));
export type PaymentMethodsQuery = z.output<typeof paymentMethodsQuery>;

const cohortFields = {
  start_month: monthParam().optional().meta({ description: 'First cohort (YYYY-MM). Default: 11 months before end_month' }),
  end_month: monthParam().optional().meta({
    description: 'Last cohort and last month followed (YYYY-MM); at most 36 months from start_month to it. Default: the current month',
  }),
};
export const purchaseCohortsQuery = z.looseObject({ ...cohortFields }).superRefine(onlyKnown(Object.keys(cohortFields), []));
export type PurchaseCohortsQuery = z.output<typeof purchaseCohortsQuery>;

const money = () => z.string().meta({ example: '1200.00', description: 'Exact decimal, 2 decimals' });

/** What a read leaves out for want of an exchange rate, per currency, in that currency. */
const leftOut = (fields: Record<string, z.ZodType>, description: string) =>
  z.record(z.string(), z.object(fields)).meta({
    description: `${description}; {} when nothing is left out. Set rates with PUT /exchange-rates/{currency}`,
  });

const salesUnconverted = () =>
  leftOut(
    {
      gross_revenue: money().meta({ description: 'Paid money left out, in that currency' }),
      refunds: money().meta({ description: 'Refunded money left out, in that currency' }),
      orders: z.int().meta({ description: 'Created orders left out' }),
    },
    "Orders in other currencies left out of these figures because their booking's month has no exchange rate",
  ).meta({ example: { USD: { gross_revenue: '120.00', refunds: '0.00', orders: 2 } } });

const salesFigures = {
  gross_revenue: money().meta({ description: 'Money of the orders paid in the period (by paid_at), refunded since or not' }),
  refunds: money().meta({ description: 'Money of the orders refunded in the period (by refunded_at)' }),
  net_revenue: money().meta({ description: 'gross_revenue − refunds' }),
  orders: z.int().meta({ description: 'Orders created in the period (by created_at), any status' }),
  paid_orders: z.int().meta({ description: 'Orders paid in the period (status now paid or refunded)' }),
  refunded_orders: z.int().meta({ description: 'Orders refunded in the period' }),
  failed_orders: z.int().meta({ description: 'Orders failed in the period (by failed_at)' }),
  aov: money().nullable().meta({ description: 'Average order value: gross_revenue ÷ paid_orders; null when no order was paid' }),
  first_order_revenue: money().meta({ description: "The gross of orders that are their customer's first paid order" }),
  returning_revenue: money().meta({ description: 'The gross of the other paid orders' }),
  new_buyers: z.int().meta({ description: 'Customers whose first paid order was paid in the period' }),
};

export const salesPointSchema = z
  .object({
    date: z.string().meta({ format: 'date', description: 'First day of the interval (clamped to start_date)' }),
    ...salesFigures,
  })
  .meta({ id: 'SalesPoint' });

export const salesSeriesSchema = z.object({
  data: z.array(salesPointSchema),
  summary: z.object(salesFigures).meta({ id: 'SalesSummary', description: 'The same figures over the whole range' }),
  unconverted: salesUnconverted(),
});

const rate1 = () => z.number().nullable();

export const paymentMethodRowSchema = z
  .object({
    payment_method: z.enum(SALES_PAYMENT_METHODS),
    orders: z.int().meta({ description: 'Orders created in the range with this payment method' }),
    paid: z.int().meta({ description: 'Of them, those now paid or refunded' }),
    failed: z.int().meta({ description: 'Of them, those now failed' }),
    pending: z.int().meta({ description: 'Of them, those still pending' }),
    cancelled: z.int().meta({ description: 'Of them, those now cancelled' }),
    success_rate: rate1().meta({ description: 'paid ÷ (paid + failed) × 100, one decimal; null when both are 0', example: 92.5 }),
    gross_revenue: money().meta({ description: 'Money of the paid ones, converted at the rate of the month each was paid' }),
    avg_seconds_to_pay: z
      .int()
      .nullable()
      .meta({ description: 'Mean of paid_at − created_at over the paid ones, in whole seconds; null when none was paid' }),
  })
  .meta({ id: 'PaymentMethodRow' });

const moneyLeftOut = () =>
  leftOut(
    {
      gross_revenue: money().meta({ description: 'Paid money left out, in that currency' }),
      orders: z.int().meta({ description: 'Orders left out' }),
    },
    'Orders in other currencies left out of these figures because their month has no exchange rate',
  ).meta({ example: { USD: { gross_revenue: '120.00', orders: 2 } } });

export const paymentMethodsSchema = z.object({
  data: z.array(paymentMethodRowSchema),
  unconverted: moneyLeftOut(),
});

const cohortPeriodSchema = z
  .object({
    month: z.string().meta({ example: '2026-03' }),
    buyers: z.int().meta({ description: 'Cohort customers with a paid order in this month' }),
    orders: z.int().meta({ description: "The cohort's orders paid in this month" }),
    gross_revenue: money().meta({ description: "The cohort's money paid in this month" }),
    revenue_per_customer: money().nullable().meta({
      description: "The cohort's gross from its month to this one ÷ its customers (realized lifetime value); null for an empty cohort",
    }),
    repeat_rate: z.number().nullable().meta({
      description:
        'Cohort customers with 2 or more paid orders by the end of this month ÷ its customers × 100, 2 decimals; null for an empty cohort',
      example: 18.75,
    }),
  })
  .meta({ id: 'PurchaseCohortPeriod' });

export const purchaseCohortSchema = z
  .object({
    cohort: z.string().meta({ description: "The month of the customers' first paid order (YYYY-MM)", example: '2026-01' }),
    customers: z.int().meta({ description: 'Customers whose first paid order was paid in that month' }),
    periods: z
      .array(cohortPeriodSchema)
      .meta({ description: 'One per month from the cohort month to end_month (the current month at most)' }),
  })
  .meta({ id: 'PurchaseCohort' });

export const purchaseCohortsSchema = z.object({
  data: z.array(purchaseCohortSchema),
  unconverted: moneyLeftOut(),
});
