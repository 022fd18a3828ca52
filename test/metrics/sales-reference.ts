import Decimal from 'decimal.js';
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
    leave: (u: ReturnType<typeof leftOut>) => void,
  ) => {
    if (at === null) return;
    const day = refLocalDate(at, q.zone);
    if (day < q.start || day > q.end) return;
    const amount = inReadMoney(o, at, q);
    if (amount === null) return leave(leftOut(o));
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
        () => {},
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
