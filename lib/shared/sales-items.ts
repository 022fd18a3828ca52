import type Decimal from 'decimal.js';

/**
 * The sales aggregates' items and attributes (docs/sales.md), shared by the figures that write them
 * (lib/metrics/bookings.ts) and the reads that fold them (lib/sales/rules.ts).
 */

/** Aggregate item id → attribute → amount: what customers add to the sales aggregates. */
export type SalesFigures = Map<string, Map<string, Decimal>>;

/** The items: a day and a month of bookings, a day of orders created (payment methods), a cohort's month. */
export const salesItem = {
  day: (day: string) => `D#${day}`,
  month: (month: string) => `M#${month}`,
  methodDay: (day: string) => `Y#${day}`,
  cohort: (cohort: string, month: string) => `C#${cohort}#${month}`,
};
/** What a booking left out for want of a rate adds, per currency, in that currency. */
export const leftOutAttr = (currency: string, what: 'gross_revenue' | 'refunds' | 'orders') => `u#${currency}#${what}`;
export const LEFT_OUT_ATTR = /^u#([A-Z]{3})#(gross_revenue|refunds|orders)$/;
/** A payment method's figure on a day of orders created. */
export const methodAttr = (method: string, what: 'orders' | 'paid' | 'failed' | 'pending' | 'cancelled' | 'seconds' | 'gross') =>
  `m#${method}#${what}`;
export const METHOD_ATTR = /^m#([^#]+)#(orders|paid|failed|pending|cancelled|seconds|gross)$/;
