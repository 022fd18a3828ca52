import Decimal from 'decimal.js';
import { eachMonthOfInterval } from 'date-fns/eachMonthOfInterval';
import { UTCDate } from '@date-fns/utc';
import { bucketKey, bucketStarts, type Interval } from '#lib/shared/buckets';
import { CONVERSION_SCALE, ExactDecimal, type RateBook } from '#lib/shared/money';
import { monthLastDay, plusDays } from '#lib/shared/time';
import type { OrderItem } from '#lib/orders/model';
import { localDateOfIso } from '#lib/shared/zone';

/**
 * The sales figures (docs/sales.md), pure. Each customer's orders turn into **figures**: amounts on
 * aggregate items (day, month, payment-method day, cohort month), the same shape the stored
 * aggregates have, so the figures of many customers add up item by item; a read folds the items of
 * its range into its answer. Each order is a set of
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

// Every amount is made wide (ExactDecimal), so sums and quotients never round before the end.
const ZERO = new ExactDecimal(0);
const HUNDRED = new ExactDecimal(100);
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
  if (money.only !== undefined || o.currency === money.reporting) return new ExactDecimal(o.amount);
  const rate = money.rates.get(o.currency)?.get(localDateOfIso(at, money.zone).slice(0, 7));
  return rate === undefined ? null : new ExactDecimal(o.amount).times(rate).toDecimalPlaces(CONVERSION_SCALE, Decimal.ROUND_HALF_UP);
};

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
const leftOutAttr = (currency: string, what: 'gross_revenue' | 'refunds' | 'orders') => `u#${currency}#${what}`;
const LEFT_OUT_ATTR = /^u#([A-Z]{3})#(gross_revenue|refunds|orders)$/;
/** A payment method's figure on a day of orders created. */
const methodAttr = (method: string, what: 'orders' | 'paid' | 'failed' | 'pending' | 'cancelled' | 'seconds' | 'gross') =>
  `m#${method}#${what}`;
const METHOD_ATTR = /^m#([^#]+)#(orders|paid|failed|pending|cancelled|seconds|gross)$/;

const addTo = (out: SalesFigures, item: string, attr: string, v: Decimal.Value) => {
  const d = new ExactDecimal(v);
  if (d.isZero()) return;
  let attrs = out.get(item);
  if (!attrs) out.set(item, (attrs = new Map()));
  attrs.set(attr, (attrs.get(attr) ?? ZERO).plus(d));
};

/** Adds every figure of `from` into `into` (a merchant's total of its customers' figures). */
export const addSalesFigures = (into: SalesFigures, from: SalesFigures) => {
  for (const [item, attrs] of from) for (const [attr, v] of attrs) addTo(into, item, attr, v);
};

const monthOf = (at: string, zone: string) => localDateOfIso(at, zone).slice(0, 7);

/**
 * What one customer's orders add to the sales figures, in `money` (the reporting currency at the
 * rates of each booking's month, or one currency's own money). `select` picks the orders of a
 * segment (the first paid order is still judged over all of them); without it, the whole, which
 * also carries the payment-method days and the purchase cohorts.
 */
export const customerSales = (orders: readonly SaleOrder[], money: Money, select?: (o: SaleOrder) => boolean): SalesFigures => {
  const out: SalesFigures = new Map();
  const first = firstPaidOrders(orders).values().next().value as SaleOrder | undefined;
  /** A booking at `at`: on its day and its month, or, left out, into `unconverted` there. */
  const book = (
    o: SaleOrder,
    at: string,
    counted: (add: (attr: string, v: Decimal.Value) => void, amount: Decimal) => void,
    leftOut?: 'gross_revenue' | 'refunds' | 'orders',
  ) => {
    const day = localDateOfIso(at, money.zone);
    const items = [salesItem.day(day), salesItem.month(day.slice(0, 7))];
    const amount = amountAt(o, at, money);
    for (const item of items) {
      if (amount !== null) counted((attr, v) => addTo(out, item, attr, v), amount);
      else if (leftOut) addTo(out, item, leftOutAttr(o.currency, leftOut), leftOut === 'orders' ? 1 : o.amount);
    }
  };
  for (const o of select ? orders.filter(select) : orders) {
    book(o, o.created_at, (add) => add('orders', 1), 'orders');
    if (wasPaid(o))
      book(
        o,
        o.paid_at!,
        (add, amount) => {
          add('gross_revenue', amount);
          add('paid_orders', 1);
          if (o === first) {
            add('first_order_revenue', amount);
            add('new_buyers', 1);
          }
        },
        'gross_revenue',
      );
    if (wasRefunded(o))
      book(
        o,
        o.refunded_at!,
        (add, amount) => {
          add('refunds', amount);
          add('refunded_orders', 1);
        },
        'refunds',
      );
    if (hasFailed(o)) book(o, o.failed_at!, (add) => add('failed_orders', 1));
  }
  if (!select) {
    addMethodDays(out, orders, money);
    addCohortMonths(out, orders, first, money);
  }
  return out;
};

/**
 * The merchant's figures summed from each customer's, as the aggregates hold them (`select`: a
 * segment's orders; `customers`: only theirs).
 */
export const merchantSales = (
  orders: SaleOrder[],
  money: Money,
  select?: (o: SaleOrder) => boolean,
  customers: ReadonlySet<number> | null = null,
) => {
  const byCustomer = new Map<number, SaleOrder[]>();
  for (const o of orders) {
    if (customers && !customers.has(o.customer_id)) continue;
    const list = byCustomer.get(o.customer_id) ?? [];
    list.push(o);
    byCustomer.set(o.customer_id, list);
  }
  const sum: SalesFigures = new Map();
  for (const list of byCustomer.values()) addSalesFigures(sum, customerSales(list, money, select));
  return sum;
};

/**
 * Payment methods: each order on the day it was created, by its status now. Left out (with its paid
 * money) when its created month has no rate; its paid money alone when only its paid month has none.
 */
const addMethodDays = (out: SalesFigures, orders: readonly SaleOrder[], money: Money) => {
  for (const o of orders) {
    const item = salesItem.methodDay(localDateOfIso(o.created_at, money.zone));
    const add = (attr: string, v: Decimal.Value) => addTo(out, item, attr, v);
    if (amountAt(o, o.created_at, money) === null) {
      add(leftOutAttr(o.currency, 'orders'), 1);
      if (wasPaid(o)) add(leftOutAttr(o.currency, 'gross_revenue'), o.amount);
      continue;
    }
    const method = paymentMethodOf(o);
    add(methodAttr(method, 'orders'), 1);
    if (wasPaid(o)) {
      add(methodAttr(method, 'paid'), 1);
      add(methodAttr(method, 'seconds'), (Date.parse(o.paid_at!) - Date.parse(o.created_at)) / 1000);
      const amount = amountAt(o, o.paid_at!, money);
      if (amount === null) add(leftOutAttr(o.currency, 'gross_revenue'), o.amount);
      else add(methodAttr(method, 'gross'), amount);
    } else if (o.status === 'failed' || o.status === 'pending' || o.status === 'cancelled') add(methodAttr(method, o.status), 1);
  }
};

/**
 * Purchase cohorts: the customer joins the cohort of its first paid order's month (counted only when
 * that order can be converted), and each of its paid orders adds to the cohort's month it was paid
 * in; its second counted paid order makes it a repeater from that month on. A customer whose first
 * paid order cannot be converted leaves all its paid orders to `unconverted`.
 */
const addCohortMonths = (out: SalesFigures, orders: readonly SaleOrder[], first: SaleOrder | undefined, money: Money) => {
  if (!first) return;
  const cohort = monthOf(first.paid_at!, money.zone);
  const counted = amountAt(first, first.paid_at!, money) !== null;
  if (counted) addTo(out, salesItem.cohort(cohort, cohort), 'customers', 1);
  const paid = orders.filter(wasPaid).sort((a, b) => (earlier(a, b) ? -1 : earlier(b, a) ? 1 : 0));
  const buyerMonths = new Set<string>();
  let countedOrders = 0;
  for (const o of paid) {
    const month = monthOf(o.paid_at!, money.zone);
    const item = salesItem.cohort(cohort, month);
    const amount = counted ? amountAt(o, o.paid_at!, money) : null;
    if (amount === null) {
      addTo(out, item, leftOutAttr(o.currency, 'orders'), 1);
      addTo(out, item, leftOutAttr(o.currency, 'gross_revenue'), o.amount);
      continue;
    }
    addTo(out, item, 'orders', 1);
    addTo(out, item, 'gross_revenue', amount);
    if (!buyerMonths.has(month)) {
      buyerMonths.add(month);
      addTo(out, item, 'buyers', 1);
    }
    if (++countedOrders === 2) addTo(out, item, 'repeaters', 1);
  }
};

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
