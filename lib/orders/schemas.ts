import * as z from 'zod';
import { batchItems } from '#lib/shared/schemas';
import { amountCurrencyError } from '#lib/shared/currency';
import {
  amount,
  currency,
  dateBound,
  email,
  idParam,
  isWellFormed,
  metadata,
  pageQuery,
  pastTimestamp,
  timestamp,
  WELL_FORMED_MESSAGE,
  plainText,
} from '#lib/shared/fields';

export const ORDER_STATUSES = ['pending', 'paid', 'failed', 'refunded', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
export const PAYMENT_METHODS = ['credit_card', 'atm', 'cvs', 'wallet_a_pay', 'wallet_b_pay', 'wallet_c_pay'] as const;
export const BILLING_CYCLES = ['monthly', 'quarterly', 'semi-annual', 'yearly', 'one-time'] as const;
export const ORDER_SOURCES = ['api', 'import', 'manual', 'webhook'] as const;

const RESERVED_ORDER_NOS = new Set(['.', '..', 'stats']);

export const orderNo = () =>
  z
    .string()
    .min(1)
    .max(100)
    .regex(/^[^\s/]+$/, { message: 'The :field field must not contain whitespace or "/".' })
    // Unreachable by GET /orders/{orderNo}: a lone surrogate has no URL form, "." and ".." are
    // collapsed by URL handling and "stats" is GET /orders/stats.
    .refine(isWellFormed, { message: WELL_FORMED_MESSAGE })
    .refine((v) => !RESERVED_ORDER_NOS.has(v), { message: 'The :field field must not be ".", ".." or "stats".' })
    .meta({ pattern: '^(?!(?:\\.{1,2}|stats)$)[^\\s/\\p{Cs}]+$' });

/** Order creation fields; defaults are applied by the domain (batch upserts must not invent them). */
export const orderFields = z.object({
  order_no: orderNo(),
  amount: amount(),
  customer_email: email(),
  status: z.enum(ORDER_STATUSES).nullish(),
  customer_name: plainText(255).nullish(),
  currency: currency().nullish(),
  payment_method: z.enum(PAYMENT_METHODS).nullish(),
  billing_cycle: z.enum(BILLING_CYCLES).nullish(),
  paid_at: timestamp().nullish(),
  refunded_at: timestamp().nullish(),
  failed_at: timestamp().nullish(),
  metadata: metadata().nullish(),
});
export type OrderInput = z.output<typeof orderFields>;

/** An amount in a zero-decimal currency (JPY, KRW…) has no fraction: a 422 on the amount. */
const wholeInCurrency = (o: { amount?: string | null; currency?: string | null }, ctx: z.RefinementCtx) => {
  const message = o.amount && o.currency ? amountCurrencyError(o.amount, o.currency) : null;
  if (message) ctx.addIssue({ code: 'custom', path: ['amount'], message });
};

export const orderCreateBody = orderFields.superRefine(wholeInCurrency);
export const orderCreateHeaders = z.object({
  'x-idempotency-key': z.string().min(1).max(255).optional().meta({ description: 'Replays the first response for 24 hours' }),
});

export const orderPatchBody = z.object({
  status: z.enum(ORDER_STATUSES),
  paid_at: timestamp().nullish(),
  failed_at: timestamp().nullish(),
  refunded_at: timestamp().nullish(),
  metadata: metadata().nullish(),
});
export type OrderPatch = z.output<typeof orderPatchBody>;

export const orderPathParams = z.object({ orderNo: z.string().min(1).meta({ description: 'The order_no the order was created with' }) });

export const orderListQuery = z
  .object({
    ...pageQuery,
    status: z.enum(ORDER_STATUSES).optional().meta({ description: 'Only orders in this status' }),
    customer_id: idParam().optional().meta({ description: "Only this customer's orders, by id" }),
    customer_email: email().optional().meta({ description: "Only this customer's orders, by email" }),
    start_date: dateBound(false).optional(),
    end_date: dateBound(true).optional(),
  })
  // An inverted range would reach DynamoDB as an invalid BETWEEN (a 500).
  .refine((q) => !q.start_date || !q.end_date || q.start_date <= q.end_date, {
    path: ['end_date'],
    message: 'The :field field must be a date after or equal to the start date.',
  });
export type OrderListQuery = z.output<typeof orderListQuery>;

export const orderBatchBody = z.object({ orders: batchItems('OrderBatchItem') });

export const orderStatsQuery = z.object({
  currency: currency().optional().meta({
    description:
      'Revenue of orders in this currency (ISO 4217) alone, in it, the reporting currency included; absent: the reporting currency with the others converted',
  }),
});

export const orderSchema = z
  .object({
    id: z.int(),
    order_no: z.string(),
    amount: z.string().meta({ example: '1200.00' }),
    currency: z.string(),
    status: z.enum(ORDER_STATUSES),
    payment_method: z.enum(PAYMENT_METHODS).nullable(),
    source: z.enum(ORDER_SOURCES),
    billing_cycle: z.enum(BILLING_CYCLES),
    paid_at: z.string().nullable(),
    refunded_at: z.string().nullable(),
    failed_at: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    customer_id: z.int(),
    customer_email: z.string().nullable(),
    customer_name: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Order' });

export const orderStatsSchema = z
  .object({
    today_revenue: z.string(),
    monthly_revenue: z.string(),
    today_count: z.int(),
    today_success_rate: z.number(),
  })
  .meta({ id: 'OrderStats' });

/** GET /orders/stats's answer: the figures, and per currency the revenue they leave out for want of this month's exchange rate. */
export const orderStatsAnswer = z.object({
  data: orderStatsSchema,
  unconverted: z.record(z.string(), z.object({ today_revenue: z.string(), monthly_revenue: z.string() })).meta({
    description:
      "Revenue in the reporting currency counts other currencies at this month's exchange rate; those without one are left out and named here, with what they left out, in them (2 decimals). {} when nothing is left out, and always {} for another `currency`.",
    example: { USD: { today_revenue: '30.00', monthly_revenue: '120.00' } },
  }),
});

/** A batch item: only order_no is always required; a new order_no also needs amount and customer_email. */
export const orderBatchItem = orderFields
  .partial()
  .extend({
    order_no: orderNo(),
    // Imported history keeps its dates: lists, date filters and today's count follow created_at.
    created_at: pastTimestamp()
      .nullish()
      .meta({ description: 'When the order was placed (imports only; default: the time of the import)' }),
  })
  .superRefine(wholeInCurrency);
export type OrderBatchItem = z.output<typeof orderBatchItem>;
