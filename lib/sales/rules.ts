import Decimal from 'decimal.js';
import { eachMonthOfInterval } from 'date-fns/eachMonthOfInterval';
import { UTCDate } from '@date-fns/utc';
import { bucketKey, bucketStarts, type Interval } from '#lib/shared/buckets';
import { CONVERSION_SCALE, type RateBook } from '#lib/shared/money';
import type { OrderItem } from '#lib/orders/model';
import { localDateOfIso } from '#lib/shared/zone';

/**
 * The sales figures (docs/sales.md), pure: raw orders in, the answer out. Each order is a set of
 * **bookings**: created (at `created_at`), paid (at `paid_at`, when its status is paid or refunded),
 * refunded (at `refunded_at`, when refunded) and failed (at `failed_at`, when failed), each on its
 * own day of the reporting time zone and, in the reporting currency, converted at the rate of its
 * own month. A booking that cannot be converted is left out, counts included, and summed per
 * currency as unconverted. A customer's first paid order (earliest `paid_at`, ties by `order_no`)
 * is judged over all its orders, whatever the read selects.
 */
export type SaleOrder = Pick<
  OrderItem,
  | 'order_no'
  | 'customer_id'
  | 'amount'
  | 'currency'
  | 'status'
  | 'payment_method'
  | 'source'
  | 'billing_cycle'
  | 'created_at'
  | 'paid_at'
  | 'refunded_at'
  | 'failed_at'
>;

/** A range of days of the reporting time zone, cut into buckets. */
export type Range = { start: string; end: string; interval: Interval };

/** What money is read in: the reporting currency (others converted by `rates`), or one currency's own money (`only`). */
export type Money = { zone: string; reporting: string; rates: RateBook; only?: string };

const ZERO = new Decimal(0);
const HUNDRED = new Decimal(100);
const cents = (d: Decimal) => d.toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2);

export const wasPaid = (o: SaleOrder) => (o.status === 'paid' || o.status === 'refunded') && !!o.paid_at;
const wasRefunded = (o: SaleOrder) => o.status === 'refunded' && !!o.refunded_at;
const hasFailed = (o: SaleOrder) => o.status === 'failed' && !!o.failed_at;
/** An order without a payment method is shown and filtered as `none`. */
export const NO_PAYMENT_METHOD = 'none';
export const paymentMethodOf = (o: SaleOrder) => o.payment_method ?? NO_PAYMENT_METHOD;

/** The segment filters of a sales read: one value of an order's field each. */
export type SalesFilters = { currency?: string; payment_method?: string; source?: string; billing_cycle?: string };

/** Whether an order is in a read's segment (its customer among `customers` when metadata filters apply). */
export const inSegment = (q: SalesFilters, customers: ReadonlySet<number> | null) => (o: SaleOrder) =>
  (q.currency === undefined || o.currency === q.currency) &&
  (q.payment_method === undefined || paymentMethodOf(o) === q.payment_method) &&
  (q.source === undefined || o.source === q.source) &&
  (q.billing_cycle === undefined || o.billing_cycle === q.billing_cycle) &&
  (customers === null || customers.has(o.customer_id));

/** Whether `a` comes before `b` as a customer's first paid order. */
const earlier = (a: SaleOrder, b: SaleOrder) => a.paid_at! < b.paid_at! || (a.paid_at === b.paid_at && a.order_no < b.order_no);

/** Each customer's first paid order (its order_no), judged over all of the customer's orders. */
export const firstPaidOrders = (orders: Iterable<SaleOrder>): Map<number, SaleOrder> => {
  const first = new Map<number, SaleOrder>();
  for (const o of orders) {
    if (!wasPaid(o)) continue;
    const f = first.get(o.customer_id);
    if (!f || earlier(o, f)) first.set(o.customer_id, o);
  }
  return first;
};

/** An order's amount in the read's money at `at` (its booking time), or null when its month has no rate. */
export const amountAt = (o: SaleOrder, at: string, money: Money): Decimal | null => {
  if (money.only !== undefined || o.currency === money.reporting) return new Decimal(o.amount);
  const rate = money.rates.get(o.currency)?.get(localDateOfIso(at, money.zone).slice(0, 7));
  return rate === undefined ? null : new Decimal(o.amount).times(rate).toDecimalPlaces(CONVERSION_SCALE, Decimal.ROUND_HALF_UP);
};

/** Money and orders left out for want of a rate, per currency. */
class LeftOut {
  private readonly byCurrency = new Map<string, { gross: Decimal; refunds: Decimal; orders: number }>();
  of(currency: string) {
    let u = this.byCurrency.get(currency);
    if (!u) this.byCurrency.set(currency, (u = { gross: ZERO, refunds: ZERO, orders: 0 }));
    return u;
  }
  shown<K extends 'gross_revenue' | 'refunds' | 'orders'>(fields: readonly K[]) {
    return Object.fromEntries(
      [...this.byCurrency]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([ccy, u]) => {
          const all = { gross_revenue: cents(u.gross), refunds: cents(u.refunds), orders: u.orders };
          return [ccy, Object.fromEntries(fields.map((f) => [f, all[f]])) as Pick<typeof all, K>];
        }),
    );
  }
}

type Sums = {
  gross: Decimal;
  refunds: Decimal;
  orders: number;
  paid: number;
  refunded: number;
  failed: number;
  first: Decimal;
  buyers: number;
};
const zeroSums = (): Sums => ({ gross: ZERO, refunds: ZERO, orders: 0, paid: 0, refunded: 0, failed: 0, first: ZERO, buyers: 0 });
const plus = (a: Sums, b: Sums): Sums => ({
  gross: a.gross.plus(b.gross),
  refunds: a.refunds.plus(b.refunds),
  orders: a.orders + b.orders,
  paid: a.paid + b.paid,
  refunded: a.refunded + b.refunded,
  failed: a.failed + b.failed,
  first: a.first.plus(b.first),
  buyers: a.buyers + b.buyers,
});

/** A point's (or the summary's) figures as the API shows them: money rounded half-up once, here. */
const salesFigures = (s: Sums) => ({
  gross_revenue: cents(s.gross),
  refunds: cents(s.refunds),
  net_revenue: cents(s.gross.minus(s.refunds)),
  orders: s.orders,
  paid_orders: s.paid,
  refunded_orders: s.refunded,
  failed_orders: s.failed,
  aov: s.paid === 0 ? null : cents(s.gross.div(s.paid)),
  first_order_revenue: cents(s.first),
  returning_revenue: cents(s.gross.minus(s.first)),
  new_buyers: s.buyers,
});

/**
 * GET /metrics/sales over `orders` (those the read's filters select) with `first` (every customer's
 * first paid order, over all its orders): one point per bucket of the range, the summary, and what
 * was left out.
 */
export const salesSeries = (orders: Iterable<SaleOrder>, first: ReadonlyMap<number, SaleOrder>, range: Range, money: Money) => {
  const days = new Map<string, Sums>();
  const leftOut = new LeftOut();
  const on = (at: string) => {
    const day = localDateOfIso(at, money.zone);
    if (day < range.start || day > range.end) return null;
    let s = days.get(day);
    if (!s) days.set(day, (s = zeroSums()));
    return s;
  };
  for (const o of orders) {
    const created = on(o.created_at);
    if (created) {
      if (amountAt(o, o.created_at, money) === null) leftOut.of(o.currency).orders++;
      else created.orders++;
    }
    if (wasPaid(o)) {
      const paid = on(o.paid_at!);
      const amount = paid && amountAt(o, o.paid_at!, money);
      if (paid && amount === null) leftOut.of(o.currency).gross = leftOut.of(o.currency).gross.plus(o.amount);
      else if (paid && amount) {
        paid.gross = paid.gross.plus(amount);
        paid.paid++;
        if (first.get(o.customer_id)?.order_no === o.order_no) {
          paid.first = paid.first.plus(amount);
          paid.buyers++;
        }
      }
    }
    if (wasRefunded(o)) {
      const refunded = on(o.refunded_at!);
      const amount = refunded && amountAt(o, o.refunded_at!, money);
      if (refunded && amount === null) leftOut.of(o.currency).refunds = leftOut.of(o.currency).refunds.plus(o.amount);
      else if (refunded && amount) {
        refunded.refunds = refunded.refunds.plus(amount);
        refunded.refunded++;
      }
    }
    if (hasFailed(o)) {
      const failed = on(o.failed_at!);
      if (failed && amountAt(o, o.failed_at!, money) !== null) failed.failed++;
    }
  }
  const points: { date: string; sums: Sums }[] = [];
  const starts = [...bucketStarts(range.start, range.end, range.interval)];
  const index = new Map(starts.map((d, i) => [bucketKey(d, range.interval), i]));
  for (const d of starts) points.push({ date: d, sums: zeroSums() });
  let summary = zeroSums();
  for (const [day, s] of days) {
    const p = points[index.get(bucketKey(day, range.interval))!];
    p.sums = plus(p.sums, s);
    summary = plus(summary, s);
  }
  return {
    data: points.map((p) => ({ date: p.date, ...salesFigures(p.sums) })),
    summary: salesFigures(summary),
    unconverted: leftOut.shown(['gross_revenue', 'refunds', 'orders'] as const),
  };
};

/** `part` ÷ `whole` × 100, half-up to `places`; null on a zero base. */
const percent = (part: number, whole: number, places: number) =>
  whole === 0 ? null : new Decimal(part).times(HUNDRED).div(whole).toDecimalPlaces(places, Decimal.ROUND_HALF_UP).toNumber();

/**
 * GET /metrics/payment-methods: the orders created in [start, end] (days of the zone) as they stand
 * now, one row per payment method that has any, most orders first (ties by name). An order counts
 * by its created booking (left out, with its paid money, when its created month has no rate); its
 * paid money converts at the rate of the month it was paid (left out alone when that has none).
 */
export const paymentMethodTable = (orders: Iterable<SaleOrder>, start: string, end: string, money: Money) => {
  type Row = { orders: number; paid: number; failed: number; pending: number; cancelled: number; gross: Decimal; seconds: Decimal };
  const rows = new Map<string, Row>();
  const leftOut = new LeftOut();
  for (const o of orders) {
    const day = localDateOfIso(o.created_at, money.zone);
    if (day < start || day > end) continue;
    if (amountAt(o, o.created_at, money) === null) {
      const u = leftOut.of(o.currency);
      u.orders++;
      if (wasPaid(o)) u.gross = u.gross.plus(o.amount);
      continue;
    }
    const method = paymentMethodOf(o);
    let r = rows.get(method);
    if (!r) rows.set(method, (r = { orders: 0, paid: 0, failed: 0, pending: 0, cancelled: 0, gross: ZERO, seconds: ZERO }));
    r.orders++;
    if (wasPaid(o)) {
      r.paid++;
      r.seconds = r.seconds.plus((Date.parse(o.paid_at!) - Date.parse(o.created_at)) / 1000);
      const amount = amountAt(o, o.paid_at!, money);
      if (amount === null) leftOut.of(o.currency).gross = leftOut.of(o.currency).gross.plus(o.amount);
      else r.gross = r.gross.plus(amount);
    } else if (o.status === 'failed') r.failed++;
    else if (o.status === 'pending') r.pending++;
    else if (o.status === 'cancelled') r.cancelled++;
  }
  const data = [...rows]
    .sort(([a, x], [b, y]) => y.orders - x.orders || (a < b ? -1 : a > b ? 1 : 0))
    .map(([method, r]) => ({
      payment_method: method,
      orders: r.orders,
      paid: r.paid,
      failed: r.failed,
      pending: r.pending,
      cancelled: r.cancelled,
      success_rate: percent(r.paid, r.paid + r.failed, 1),
      gross_revenue: cents(r.gross),
      avg_seconds_to_pay: r.paid === 0 ? null : r.seconds.div(r.paid).toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber(),
    }));
  return { data, unconverted: leftOut.shown(['gross_revenue', 'orders'] as const) };
};

const monthsOf = (start: string, end: string) =>
  eachMonthOfInterval({ start: new UTCDate(`${start}-01T00:00:00Z`), end: new UTCDate(`${end}-01T00:00:00Z`) }).map((d) =>
    d.toISOString().slice(0, 7),
  );

/**
 * GET /metrics/purchase-cohorts: customers by the month of their first paid order (over all their
 * orders), each cohort followed month by month from its own to `end` (the current month at most).
 * A paid order counts in the month of the zone it was paid, at that month's rate; one that cannot
 * be converted is left out (summed as unconverted), and a customer whose first paid order is left
 * out is in no cohort, as it is no new buyer in GET /metrics/sales: its paid orders are summed as
 * unconverted too.
 */
export const purchaseCohortTable = (
  orders: Iterable<SaleOrder>,
  first: ReadonlyMap<number, SaleOrder>,
  range: { start: string; end: string; currentMonth: string },
  money: Money,
) => {
  const cohorts = monthsOf(range.start, range.end);
  const last = range.end < range.currentMonth ? range.end : range.currentMonth;
  // Each counted customer's cohort, and per cohort and month: buyers, orders, gross; each customer's paid months.
  const cohortOf = new Map<number, string>();
  /** Customers of the range's cohorts left out, with all their orders, for want of their first paid order's rate. */
  const unconvertedFirst = new Set<number>();
  for (const [customer, o] of first) {
    const month = localDateOfIso(o.paid_at!, money.zone).slice(0, 7);
    if (month < range.start || month > range.end) continue;
    if (amountAt(o, o.paid_at!, money) === null) unconvertedFirst.add(customer);
    else cohortOf.set(customer, month);
  }
  const leftOut = new LeftOut();
  type Cell = { buyers: Set<number>; orders: number; gross: Decimal };
  const cells = new Map<string, Cell>();
  /** Per customer, the months (≤ last) of its counted paid orders, one entry per order. */
  const paidMonths = new Map<number, string[]>();
  for (const o of orders) {
    if (!wasPaid(o)) continue;
    const cohort = cohortOf.get(o.customer_id);
    const month = localDateOfIso(o.paid_at!, money.zone).slice(0, 7);
    if (month > last || (cohort === undefined && !unconvertedFirst.has(o.customer_id))) continue;
    const amount = amountAt(o, o.paid_at!, money);
    if (amount === null || cohort === undefined) {
      const u = leftOut.of(o.currency);
      u.orders++;
      u.gross = u.gross.plus(o.amount);
      continue;
    }
    const key = `${cohort}#${month}`;
    let c = cells.get(key);
    if (!c) cells.set(key, (c = { buyers: new Set(), orders: 0, gross: ZERO }));
    c.buyers.add(o.customer_id);
    c.orders++;
    c.gross = c.gross.plus(amount);
    const ms = paidMonths.get(o.customer_id) ?? [];
    ms.push(month);
    paidMonths.set(o.customer_id, ms);
  }
  const data = cohorts.map((cohort) => {
    const members = [...cohortOf].filter(([, c]) => c === cohort).map(([id]) => id);
    const customers = members.length;
    let gross = ZERO;
    const periods = [];
    for (const month of cohorts.filter((m) => m >= cohort && m <= last)) {
      const c = cells.get(`${cohort}#${month}`);
      gross = gross.plus(c?.gross ?? ZERO);
      const repeaters = members.filter((id) => (paidMonths.get(id) ?? []).filter((m) => m <= month).length >= 2).length;
      periods.push({
        month,
        buyers: c?.buyers.size ?? 0,
        orders: c?.orders ?? 0,
        gross_revenue: cents(c?.gross ?? ZERO),
        revenue_per_customer: customers === 0 ? null : cents(gross.div(customers)),
        repeat_rate: percent(repeaters, customers, 2),
      });
    }
    return { cohort, customers, periods };
  });
  return { data, unconverted: leftOut.shown(['gross_revenue', 'orders'] as const) };
};
