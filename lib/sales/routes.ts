import { defineRoute } from '#lib/http/route';
import { dashboardRead, errors, invalid } from '#lib/http/route-parts';
import { RECOUNT_PENDING_DOC } from '#lib/shared/recount-pending-header';
import {
  paymentMethodsQuery,
  paymentMethodsSchema,
  purchaseCohortsQuery,
  purchaseCohortsSchema,
  salesQuery,
  salesSeriesSchema,
} from '#lib/sales/schemas';

const recountPending = { 'Recount-Pending': RECOUNT_PENDING_DOC.read };

/** The sales routes (docs/sales.md): orders as the core of revenue analysis. */
export const routes = {
  metricsSales: defineRoute({
    method: 'GET',
    path: '/metrics/sales',
    handler: 'functions/sales/sales.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'Gross revenue, refunds, net revenue, orders, AOV, first-time and returning revenue and new buyers per interval',
    description:
      "Sales per interval (day, week from Monday, month, calendar quarter or year, in the merchant's reporting time zone) between `start_date` and `end_date`, with a summary of the range: every order counts, whatever its billing cycle. Gross revenue is booked at `paid_at`, refunds at `refunded_at`, failures at `failed_at`, created orders at `created_at`; money in other currencies converts at the rate of its booking's month, and what cannot be converted is left out and reported in `unconverted` (docs/sales.md). Segment filters: `payment_method`, `currency`, `source`, `billing_cycle` and `metadata.<key>=<value>`; a customer's first paid order is always judged over all its orders. `Accept: text/csv` gives the points as CSV.",
    tags: ['metrics'],
    request: { query: salesQuery, repeatable: ['metadata.'] },
    responses: {
      200: { description: 'The sales series', schema: salesSeriesSchema, headers: recountPending },
      ...errors,
      ...invalid,
    },
  }),
  metricsPaymentMethods: defineRoute({
    method: 'GET',
    path: '/metrics/payment-methods',
    handler: 'functions/sales/payment-methods.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'Orders created in a range per payment method, as they stand now: success rate, revenue, time to pay',
    description:
      "One row per payment method (`none`: orders without one) that has orders created between `start_date` and `end_date` (days of the merchant's reporting time zone, inclusive; the defaults of `GET /metrics/mrr`): how many, how many are now paid (or refunded), failed, pending or cancelled, the success rate, the paid ones' gross revenue and their mean time to pay. A later status change moves its order's row (docs/sales.md).",
    tags: ['metrics'],
    request: { query: paymentMethodsQuery },
    responses: {
      200: { description: 'Rows per payment method, most orders first', schema: paymentMethodsSchema, headers: recountPending },
      ...errors,
      ...invalid,
    },
  }),
  metricsPurchaseCohorts: defineRoute({
    method: 'GET',
    path: '/metrics/purchase-cohorts',
    handler: 'functions/sales/purchase-cohorts.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'Customers by the month of their first paid order, with buyers, revenue per customer and repeat rate month by month',
    description:
      "Each month from `start_month` to `end_month` (at most 36, in the merchant's reporting time zone) as a cohort: the customers whose first paid order was paid in it, then, month by month to `end_month` (the current month at most), the cohort's buyers, paid orders and gross revenue, its revenue per customer so far (realized LTV) and its repeat rate (docs/sales.md). A back-dated first order moves its customer, with all their orders, into the earlier cohort.",
    tags: ['metrics'],
    request: { query: purchaseCohortsQuery },
    responses: {
      200: { description: 'Purchase cohorts', schema: purchaseCohortsSchema, headers: recountPending },
      ...errors,
      ...invalid,
    },
  }),
};
