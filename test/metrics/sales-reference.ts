import Base from 'decimal.js';
import { addDays, bucketOf, type RefInterval, refLocalDate } from './reference.ts';

/**
 * A from-scratch reference of `GET /metrics/sales` (orders as the core of revenue), written apart
 * from lib/ (no import from it): the raw orders a test sent → what the read must answer. Each order
 * is a list of bookings (created, paid, refunded, failed), each on its own day of the zone and
 * converted at its own month's rate; the first paid order is judged over all of a customer's orders.
 */
export type RefOrder = {
  order_no: string;
  customer_id: number;
  amount: string;
  currency: string;
  status: 'pending' | 'paid' | 'failed' | 'refunded' | 'cancelled';
  payment_method: string | null;
  source: string;
  billing_cycle: string;
  created_at: string;
  paid_at: string | null;
  refunded_at: string | null;
  failed_at: string | null;
};
/** currency → `yyyy-mm` → rate (reporting-currency units per one unit). */
export type RefRateBook = Map<string, Map<string, string>>;
export type RefSalesQuery = {
  start: string;
  end: string;
  interval: RefInterval;
  zone: string;
  reporting: string;
  rates: RefRateBook;
  /** `currency=X`: X's own money alone, unconverted. */
  currency?: string;
  payment_method?: string;
  source?: string;
  billing_cycle?: string;
  /** Customers whose metadata matches (`metadata.<k>=<v>`); absent: every customer. */
  customers?: Set<number>;
};

/** 100 significant digits: sums of converted amounts (23 digits each) stay exact. */
const Decimal = Base.clone({ precision: 100 });
type Decimal = Base;
const ZERO = new Decimal(0);
const money = (d: Decimal) => d.toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2);
const wasPaid = (o: RefOrder) => (o.status === 'paid' || o.status === 'refunded') && o.paid_at !== null;

/** Each customer's first paid order (earliest `paid_at`, ties by `order_no`), over all its orders. */
export const refFirstOrders = (orders: RefOrder[]): Map<number, RefOrder> => {
  const first = new Map<number, RefOrder>();
  for (const o of orders.filter(wasPaid)) {
    const f = first.get(o.customer_id);
    const earlier = !f || o.paid_at! < f.paid_at! || (o.paid_at === f.paid_at && o.order_no < f.order_no);
    if (earlier) first.set(o.customer_id, o);
  }
  return first;
};

/** An order matched by the query's segment filters (the currency filter included). */
const selected = (o: RefOrder, q: RefSalesQuery) =>
  (q.currency === undefined || o.currency === q.currency) &&
  (q.payment_method === undefined || (o.payment_method ?? 'none') === q.payment_method) &&
  (q.source === undefined || o.source === q.source) &&
  (q.billing_cycle === undefined || o.billing_cycle === q.billing_cycle) &&
  (q.customers === undefined || q.customers.has(o.customer_id));

/** The amount in the read's money at `at`, or null when it cannot be converted (no rate for that month of the zone). */
const inReadMoney = (o: RefOrder, at: string, q: RefSalesQuery): Decimal | null => {
  if (q.currency !== undefined || o.currency === q.reporting) return new Decimal(o.amount);
  const rate = q.rates.get(o.currency)?.get(refLocalDate(at, q.zone).slice(0, 7));
  return rate === undefined ? null : new Decimal(o.amount).times(rate);
};

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

const shown = (s: Sums) => ({
  gross_revenue: money(s.gross),
  refunds: money(s.refunds),
  net_revenue: money(s.gross.minus(s.refunds)),
  orders: s.orders,
  paid_orders: s.paid,
  refunded_orders: s.refunded,
  failed_orders: s.failed,
  aov: s.paid === 0 ? null : money(s.gross.div(s.paid)),
  first_order_revenue: money(s.first),
  returning_revenue: money(s.gross.minus(s.first)),
  new_buyers: s.buyers,
});

/** GET /metrics/sales from scratch: `{data, summary, unconverted}`. */
export const refSales = (orders: RefOrder[], q: RefSalesQuery) => {
  const first = refFirstOrders(orders);
  const days = new Map<string, Sums>();
  const unconverted = new Map<string, { gross: Decimal; refunds: Decimal; orders: number }>();
  const leftOut = (o: RefOrder) => {
    const u = unconverted.get(o.currency) ?? { gross: ZERO, refunds: ZERO, orders: 0 };
    unconverted.set(o.currency, u);
    return u;
  };
  const book = (
    o: RefOrder,
    at: string | null,
    apply: (s: Sums, amount: Decimal) => void,
    leave: ((u: ReturnType<typeof leftOut>) => void) | null,
  ) => {
    if (at === null) return;
    const day = refLocalDate(at, q.zone);
    if (day < q.start || day > q.end) return;
    const amount = inReadMoney(o, at, q);
    // A failed booking carries no money: left out without a trace in `unconverted`.
    if (amount === null) return leave?.(leftOut(o));
    const s = days.get(day) ?? zeroSums();
    days.set(day, s);
    apply(s, amount);
  };
  for (const o of orders.filter((x) => selected(x, q))) {
    book(
      o,
      o.created_at,
      (s) => {
        s.orders += 1;
      },
      (u) => {
        u.orders += 1;
      },
    );
    if (wasPaid(o))
      book(
        o,
        o.paid_at,
        (s, amount) => {
          s.gross = s.gross.plus(amount);
          s.paid += 1;
          if (first.get(o.customer_id) === o) {
            s.first = s.first.plus(amount);
            s.buyers += 1;
          }
        },
        (u) => {
          u.gross = u.gross.plus(o.amount);
        },
      );
    if (o.status === 'refunded')
      book(
        o,
        o.refunded_at,
        (s, amount) => {
          s.refunds = s.refunds.plus(amount);
          s.refunded += 1;
        },
        (u) => {
          u.refunds = u.refunds.plus(o.amount);
        },
      );
    if (o.status === 'failed')
      book(
        o,
        o.failed_at,
        (s) => {
          s.failed += 1;
        },
        null,
      );
  }
  const add = (a: Sums, b: Sums): Sums => ({
    gross: a.gross.plus(b.gross),
    refunds: a.refunds.plus(b.refunds),
    orders: a.orders + b.orders,
    paid: a.paid + b.paid,
    refunded: a.refunded + b.refunded,
    failed: a.failed + b.failed,
    first: a.first.plus(b.first),
    buyers: a.buyers + b.buyers,
  });
  const buckets: { key: string; date: string; s: Sums }[] = [];
  let summary = zeroSums();
  for (let d = q.start; d <= q.end; d = addDays(d, 1)) {
    const key = bucketOf(d, q.interval);
    if (buckets.at(-1)?.key !== key) buckets.push({ key, date: d, s: zeroSums() });
    const s = days.get(d) ?? zeroSums();
    buckets.at(-1)!.s = add(buckets.at(-1)!.s, s);
    summary = add(summary, s);
  }
  return {
    data: buckets.map((b) => ({ date: b.date, ...shown(b.s) })),
    summary: shown(summary),
    unconverted: Object.fromEntries(
      [...unconverted]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([ccy, u]) => [ccy, { gross_revenue: money(u.gross), refunds: money(u.refunds), orders: u.orders }]),
    ),
  };
};

/** The read's money of an order's paid amount (at `paid_at`'s month), or null when it cannot be converted. */
const paidMoney = (o: RefOrder, q: Pick<RefSalesQuery, 'zone' | 'reporting' | 'rates'>) =>
  inReadMoney(o, o.paid_at!, { ...q, start: '', end: '', interval: 'day' });

/**
 * GET /metrics/payment-methods from scratch: orders created in [start, end] (days of the zone) as
 * they stand now, by payment method (`none` without one), most orders first then by name. An order
 * whose created month has no rate is left out with its paid money; a paid one whose paid month has
 * none keeps its counts and leaves its money out.
 */
export const refPaymentMethods = (orders: RefOrder[], q: Pick<RefSalesQuery, 'start' | 'end' | 'zone' | 'reporting' | 'rates'>) => {
  const rows = new Map<
    string,
    { orders: number; paid: number; failed: number; pending: number; cancelled: number; gross: Decimal; secs: number }
  >();
  const out = new Map<string, { gross: Decimal; orders: number }>();
  const lost = (ccy: string) => out.get(ccy) ?? out.set(ccy, { gross: ZERO, orders: 0 }).get(ccy)!;
  for (const o of orders) {
    const day = refLocalDate(o.created_at, q.zone);
    if (day < q.start || day > q.end) continue;
    if (inReadMoney(o, o.created_at, { ...q, interval: 'day' }) === null) {
      lost(o.currency).orders += 1;
      if (wasPaid(o)) lost(o.currency).gross = lost(o.currency).gross.plus(o.amount);
      continue;
    }
    const key = o.payment_method ?? 'none';
    const r = rows.get(key) ?? { orders: 0, paid: 0, failed: 0, pending: 0, cancelled: 0, gross: ZERO, secs: 0 };
    rows.set(key, r);
    r.orders += 1;
    if (wasPaid(o)) {
      r.paid += 1;
      r.secs += (new Date(o.paid_at!).getTime() - new Date(o.created_at).getTime()) / 1000;
      const m = paidMoney(o, q);
      if (m === null) lost(o.currency).gross = lost(o.currency).gross.plus(o.amount);
      else r.gross = r.gross.plus(m);
    }
    if (o.status === 'failed') r.failed += 1;
    if (o.status === 'pending') r.pending += 1;
    if (o.status === 'cancelled') r.cancelled += 1;
  }
  const round1 = (n: number, d: number) =>
    d === 0 ? null : new Decimal(n).div(d).times(100).toDecimalPlaces(1, Decimal.ROUND_HALF_UP).toNumber();
  return {
    data: [...rows.entries()]
      .sort((a, b) => b[1].orders - a[1].orders || a[0].localeCompare(b[0]))
      .map(([method, r]) => ({
        payment_method: method,
        orders: r.orders,
        paid: r.paid,
        failed: r.failed,
        pending: r.pending,
        cancelled: r.cancelled,
        success_rate: round1(r.paid, r.paid + r.failed),
        gross_revenue: money(r.gross),
        avg_seconds_to_pay: r.paid === 0 ? null : new Decimal(r.secs).div(r.paid).toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber(),
      })),
    unconverted: Object.fromEntries(
      [...out].sort(([a], [b]) => a.localeCompare(b)).map(([c, u]) => [c, { gross_revenue: money(u.gross), orders: u.orders }]),
    ),
  };
};

const nextMonth = (m: string) => {
  const [y, mm] = m.split('-').map(Number);
  return mm === 12 ? `${String(y + 1).padStart(4, '0')}-01` : `${String(y).padStart(4, '0')}-${String(mm + 1).padStart(2, '0')}`;
};

/**
 * GET /metrics/purchase-cohorts from scratch: a customer's cohort is the zone month of its first
 * paid order (over all its orders), counted only when that order can be converted (else all its
 * paid orders are left out and summed per currency); each cohort
 * month of [start, end] followed to min(end, current); paid orders that cannot be converted are
 * left out (and summed per currency).
 */
export const refPurchaseCohorts = (
  orders: RefOrder[],
  q: { start: string; end: string; current: string; zone: string; reporting: string; rates: RefRateBook },
) => {
  const first = refFirstOrders(orders);
  const month = (t: string) => refLocalDate(t, q.zone).slice(0, 7);
  const cohortOf = new Map<number, string>();
  const lostWithFirst = new Set<number>();
  for (const [id, o] of first) {
    const m = month(o.paid_at!);
    if (m < q.start || m > q.end) continue;
    if (paidMoney(o, q) === null) lostWithFirst.add(id);
    else cohortOf.set(id, m);
  }
  const last = q.end < q.current ? q.end : q.current;
  const out = new Map<string, { gross: Decimal; orders: number }>();
  const kept = orders.filter((o) => {
    if (!wasPaid(o) || month(o.paid_at!) > last) return false;
    if (!cohortOf.has(o.customer_id) && !lostWithFirst.has(o.customer_id)) return false;
    // A customer whose first paid order cannot be converted is left out with all its orders.
    if (cohortOf.has(o.customer_id) && paidMoney(o, q) !== null) return true;
    const u = out.get(o.currency) ?? { gross: ZERO, orders: 0 };
    out.set(o.currency, { gross: u.gross.plus(o.amount), orders: u.orders + 1 });
    return false;
  });
  const data = [];
  for (let c = q.start; c <= q.end; c = nextMonth(c)) {
    const members = [...cohortOf].filter(([, m]) => m === c).map(([id]) => id);
    const periods = [];
    let total = ZERO;
    for (let m = c; m <= last; m = nextMonth(m)) {
      const inMonth = kept.filter((o) => cohortOf.get(o.customer_id) === c && month(o.paid_at!) === m);
      const gross = inMonth.reduce((s, o) => s.plus(paidMoney(o, q)!), ZERO);
      total = total.plus(gross);
      const repeaters = members.filter((id) => kept.filter((o) => o.customer_id === id && month(o.paid_at!) <= m).length >= 2).length;
      periods.push({
        month: m,
        buyers: new Set(inMonth.map((o) => o.customer_id)).size,
        orders: inMonth.length,
        gross_revenue: money(gross),
        revenue_per_customer: members.length ? money(total.div(members.length)) : null,
        repeat_rate: members.length
          ? new Decimal(repeaters).times(100).div(members.length).toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toNumber()
          : null,
      });
    }
    data.push({ cohort: c, customers: members.length, periods });
  }
  return {
    data,
    unconverted: Object.fromEntries(
      [...out].sort(([a], [b]) => a.localeCompare(b)).map(([c, u]) => [c, { gross_revenue: money(u.gross), orders: u.orders }]),
    ),
  };
};
