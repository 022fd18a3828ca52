import Decimal from 'decimal.js';
import { eachMonthOfInterval } from 'date-fns/eachMonthOfInterval';
import { UTCDate } from '@date-fns/utc';
import { bucketStarts, type Interval } from '#lib/shared/buckets';
import { ExactDecimal } from '#lib/shared/money';
import { monthLastDay, plusDays } from '#lib/shared/time';
import { LEFT_OUT_ATTR, METHOD_ATTR, type SalesFigures, salesItem } from '#lib/shared/sales-items';

/**
 * The sales reads (docs/sales.md), pure: each folds the items of its range, as the merchant's
 * figures hold them (the per-customer rules are lib/metrics/bookings.ts), into its answer.
 */

/** A range of days of the reporting time zone, cut into buckets. */
export type Range = { start: string; end: string; interval: Interval };

const ZERO = new ExactDecimal(0);
const HUNDRED = new ExactDecimal(100);
const cents = (d: Decimal) => d.toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2);

/** Money and orders left out, per currency, from the `u#…` attributes of the items read. */
class LeftOut {
  private readonly byCurrency = new Map<string, { gross_revenue: Decimal; refunds: Decimal; orders: Decimal }>();
  add(attrs: ReadonlyMap<string, Decimal> | undefined) {
    for (const [attr, v] of attrs ?? []) {
      const m = LEFT_OUT_ATTR.exec(attr);
      if (!m) continue;
      let u = this.byCurrency.get(m[1]);
      if (!u) this.byCurrency.set(m[1], (u = { gross_revenue: ZERO, refunds: ZERO, orders: ZERO }));
      u[m[2] as 'gross_revenue'] = u[m[2] as 'gross_revenue'].plus(v);
    }
  }
  shown<K extends 'gross_revenue' | 'refunds' | 'orders'>(fields: readonly K[]) {
    return Object.fromEntries(
      [...this.byCurrency]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([ccy, u]) => {
          const all = { gross_revenue: cents(u.gross_revenue), refunds: cents(u.refunds), orders: u.orders.toNumber() };
          return [ccy, Object.fromEntries(fields.map((f) => [f, all[f]])) as Pick<typeof all, K>];
        }),
    );
  }
}

const SALES_ATTRS = [
  'gross_revenue',
  'refunds',
  'orders',
  'paid_orders',
  'refunded_orders',
  'failed_orders',
  'first_order_revenue',
  'new_buyers',
] as const;
type Sums = Record<(typeof SALES_ATTRS)[number], Decimal>;
const zeroSums = (): Sums => Object.fromEntries(SALES_ATTRS.map((a) => [a, ZERO])) as Sums;
const addSums = (into: Sums, attrs: ReadonlyMap<string, Decimal> | undefined) => {
  for (const a of SALES_ATTRS) into[a] = into[a].plus(attrs?.get(a) ?? ZERO);
};

/** A point's (or the summary's) figures as the API shows them: money rounded half-up once, here. */
const shownSales = (s: Sums) => ({
  gross_revenue: cents(s.gross_revenue),
  refunds: cents(s.refunds),
  net_revenue: cents(s.gross_revenue.minus(s.refunds)),
  orders: s.orders.toNumber(),
  paid_orders: s.paid_orders.toNumber(),
  refunded_orders: s.refunded_orders.toNumber(),
  failed_orders: s.failed_orders.toNumber(),
  aov: s.paid_orders.isZero() ? null : cents(s.gross_revenue.div(s.paid_orders)),
  first_order_revenue: cents(s.first_order_revenue),
  returning_revenue: cents(s.gross_revenue.minus(s.first_order_revenue)),
  new_buyers: s.new_buyers.toNumber(),
});

const monthsOf = (start: string, end: string) =>
  eachMonthOfInterval({ start: new UTCDate(`${start}-01T00:00:00Z`), end: new UTCDate(`${end}-01T00:00:00Z`) }).map((d) =>
    d.toISOString().slice(0, 7),
  );

/**
 * The items a range of days is made of: each month wholly inside [from, to] as its month item, the
 * days of a month it only touches as day items (so a monthly read of years reads months, not days).
 */
export const salesItemsOf = (from: string, to: string): string[] => {
  const out: string[] = [];
  for (const month of monthsOf(from.slice(0, 7), to.slice(0, 7))) {
    const first = `${month}-01`;
    const last = monthLastDay(month);
    if (first >= from && last <= to) out.push(salesItem.month(month));
    else for (let d = first < from ? from : first; d <= (last > to ? to : last); d = plusDays(d, 1)) out.push(salesItem.day(d));
  }
  return out;
};

/** GET /metrics/sales from the figures' items: one point per bucket of the range, the summary, what was left out. */
export const salesSeries = (figures: SalesFigures, range: Range) => {
  const starts = [...bucketStarts(range.start, range.end, range.interval)];
  const summary = zeroSums();
  const leftOut = new LeftOut();
  const data = starts.map((start, i) => {
    const end = i + 1 < starts.length ? plusDays(starts[i + 1], -1) : range.end;
    const sums = zeroSums();
    for (const item of salesItemsOf(start, end)) {
      const attrs = figures.get(item);
      addSums(sums, attrs);
      addSums(summary, attrs);
      leftOut.add(attrs);
    }
    return { date: start, ...shownSales(sums) };
  });
  return { data, summary: shownSales(summary), unconverted: leftOut.shown(['gross_revenue', 'refunds', 'orders'] as const) };
};

/** `part` ÷ `whole` × 100, half-up to `places`; null on a zero base. */
const percent = (part: Decimal, whole: Decimal, places: number) =>
  whole.isZero() ? null : part.times(HUNDRED).div(whole).toDecimalPlaces(places, Decimal.ROUND_HALF_UP).toNumber();

/** GET /metrics/payment-methods from the payment-method days of [start, end]: most orders first, ties by name. */
export const paymentMethodTable = (figures: SalesFigures, start: string, end: string) => {
  const rows = new Map<string, Record<string, Decimal>>();
  const leftOut = new LeftOut();
  for (let d = start; d <= end; d = plusDays(d, 1)) {
    const attrs = figures.get(salesItem.methodDay(d));
    leftOut.add(attrs);
    for (const [attr, v] of attrs ?? []) {
      const m = METHOD_ATTR.exec(attr);
      if (!m) continue;
      const row = rows.get(m[1]) ?? {};
      rows.set(m[1], row);
      row[m[2]] = (row[m[2]] ?? ZERO).plus(v);
    }
  }
  const n = (r: Record<string, Decimal>, k: string) => r[k] ?? ZERO;
  const data = [...rows]
    .filter(([, r]) => !n(r, 'orders').isZero())
    .sort(([a, x], [b, y]) => n(y, 'orders').comparedTo(n(x, 'orders')) || (a < b ? -1 : a > b ? 1 : 0))
    .map(([method, r]) => ({
      payment_method: method,
      orders: n(r, 'orders').toNumber(),
      paid: n(r, 'paid').toNumber(),
      failed: n(r, 'failed').toNumber(),
      pending: n(r, 'pending').toNumber(),
      cancelled: n(r, 'cancelled').toNumber(),
      success_rate: percent(n(r, 'paid'), n(r, 'paid').plus(n(r, 'failed')), 1),
      gross_revenue: cents(n(r, 'gross')),
      avg_seconds_to_pay: n(r, 'paid').isZero()
        ? null
        : n(r, 'seconds').div(n(r, 'paid')).toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber(),
    }));
  return { data, unconverted: leftOut.shown(['gross_revenue', 'orders'] as const) };
};

/** GET /metrics/purchase-cohorts from the cohort items: each cohort month of the range followed to `end` (the current month at most). */
export const purchaseCohortTable = (figures: SalesFigures, range: { start: string; end: string; currentMonth: string }) => {
  const last = range.end < range.currentMonth ? range.end : range.currentMonth;
  const months = monthsOf(range.start, range.end);
  const leftOut = new LeftOut();
  const data = months.map((cohort) => {
    const customers = figures.get(salesItem.cohort(cohort, cohort))?.get('customers') ?? ZERO;
    let gross = ZERO;
    let repeaters = ZERO;
    const periods = months
      .filter((m) => m >= cohort && m <= last)
      .map((month) => {
        const attrs = figures.get(salesItem.cohort(cohort, month));
        leftOut.add(attrs);
        const monthGross = attrs?.get('gross_revenue') ?? ZERO;
        gross = gross.plus(monthGross);
        repeaters = repeaters.plus(attrs?.get('repeaters') ?? ZERO);
        return {
          month,
          buyers: (attrs?.get('buyers') ?? ZERO).toNumber(),
          orders: (attrs?.get('orders') ?? ZERO).toNumber(),
          gross_revenue: cents(monthGross),
          revenue_per_customer: customers.isZero() ? null : cents(gross.div(customers)),
          repeat_rate: percent(repeaters, customers, 2),
        };
      });
    return { cohort, customers: customers.toNumber(), periods };
  });
  return { data, unconverted: leftOut.shown(['gross_revenue', 'orders'] as const) };
};
