import Decimal from 'decimal.js';
import { CONVERSION_SCALE, ExactDecimal, type RateBook } from '#lib/shared/money';
import { localDateOfIso } from '#lib/shared/zone';
import { LEFT_OUT_ATTR, leftOutAttr, METHOD_ATTR, methodAttr, type SalesFigures, salesItem } from '#lib/shared/sales-items';
export { LEFT_OUT_ATTR, METHOD_ATTR, type SalesFigures, salesItem };

/**
 * The sales figures of a customer (docs/sales.md), pure. The customer's **bookings** are the raw
 * record: one entry per order, the fields the figures read, stored with its MRR timeline. They turn
 * into **figures**: amounts on aggregate items (day, month, payment-method day, cohort month), so
 * the figures of many customers add up item by item and a write adds `after − before`
 * (`salesChange`). Each order is a set of bookings: created (at `created_at`), paid (at `paid_at`,
 * when its status is paid or refunded), refunded (at `refunded_at`, when refunded) and failed (at
 * `failed_at`, when failed), each on its own day of the reporting time zone and, in the reporting
 * currency, converted at the rate of its own month. A booking that cannot be converted is left out,
 * counts included, and summed per currency as unconverted. A customer's first paid order (earliest
 * `paid_at`, ties by `order_no`) is judged over all its orders, whatever the read selects.
 */
export type SaleOrder = {
  order_no: string;
  customer_id: number;
  amount: string;
  currency: string;
  status: string;
  payment_method: string | null;
  source: string;
  billing_cycle: string;
  created_at: string;
  paid_at: string | null;
  refunded_at: string | null;
  failed_at: string | null;
};

/** What money is read in: the reporting currency (others converted by `rates`), or one currency's own money (`only`). */
export type Money = { zone: string; reporting: string; rates: RateBook; only?: string };

// Every amount is made wide (ExactDecimal), so sums and quotients never round before the end.
const ZERO = new ExactDecimal(0);

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

/** Each customer's first paid order, judged over all of the customer's orders. */
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

const addTo = (out: SalesFigures, item: string, attr: string, v: Decimal.Value) => {
  const d = new ExactDecimal(v);
  if (d.isZero()) return;
  let attrs = out.get(item);
  if (!attrs) out.set(item, (attrs = new Map()));
  attrs.set(attr, (attrs.get(attr) ?? ZERO).plus(d));
};

/** Adds every figure of `from` into `into` (a merchant's total of its customers' figures), negated with `sign` -1. */
export const addSalesFigures = (into: SalesFigures, from: SalesFigures, sign: 1 | -1 = 1) => {
  for (const [item, attrs] of from) for (const [attr, v] of attrs) addTo(into, item, attr, sign === 1 ? v : v.negated());
};

const monthOf = (at: string, zone: string) => localDateOfIso(at, zone).slice(0, 7);

/**
 * What one order adds to a slice's figures: its bookings on their days and months (with `first`, the
 * customer's new buyer and first-order revenue) and, in the whole (`whole`), its payment-method day.
 */
const addOrderFigures = (out: SalesFigures, o: SaleOrder, first: boolean, money: Money, whole: boolean) => {
  /** A booking at `at`: on its day and its month, or, left out, into `unconverted` there. */
  const book = (
    at: string,
    counted: (add: (attr: string, v: Decimal.Value) => void, amount: Decimal) => void,
    leftOut?: 'gross_revenue' | 'refunds' | 'orders',
  ) => {
    const day = localDateOfIso(at, money.zone);
    const amount = amountAt(o, at, money);
    for (const item of [salesItem.day(day), salesItem.month(day.slice(0, 7))]) {
      if (amount !== null) counted((attr, v) => addTo(out, item, attr, v), amount);
      else if (leftOut) addTo(out, item, leftOutAttr(o.currency, leftOut), leftOut === 'orders' ? 1 : o.amount);
    }
  };
  book(o.created_at, (add) => add('orders', 1), 'orders');
  if (wasPaid(o))
    book(
      o.paid_at!,
      (add, amount) => {
        add('gross_revenue', amount);
        add('paid_orders', 1);
        if (first) {
          add('first_order_revenue', amount);
          add('new_buyers', 1);
        }
      },
      'gross_revenue',
    );
  if (wasRefunded(o))
    book(
      o.refunded_at!,
      (add, amount) => {
        add('refunds', amount);
        add('refunded_orders', 1);
      },
      'refunds',
    );
  if (hasFailed(o)) book(o.failed_at!, (add) => add('failed_orders', 1));
  if (whole) addMethodDay(out, o, money);
};

/**
 * What one customer's orders add to the sales figures, in `money` (the reporting currency at the
 * rates of each booking's month, or one currency's own money). `select` picks the orders of a
 * segment (the first paid order is still judged over all of them); without it, the whole, which
 * also carries the payment-method days and the purchase cohorts.
 */
export const customerSales = (orders: readonly SaleOrder[], money: Money, select?: (o: SaleOrder) => boolean): SalesFigures => {
  const out: SalesFigures = new Map();
  const first = firstPaidOrders(orders).values().next().value as SaleOrder | undefined;
  for (const o of select ? orders.filter(select) : orders) addOrderFigures(out, o, o === first, money, !select);
  if (!select) addCohortMonths(out, orders, first, money);
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
 * Payment methods: the order on the day it was created, by its status now. Left out (with its paid
 * money) when its created month has no rate; its paid money alone when only its paid month has none.
 */
const addMethodDay = (out: SalesFigures, o: SaleOrder, money: Money) => {
  const item = salesItem.methodDay(localDateOfIso(o.created_at, money.zone));
  const add = (attr: string, v: Decimal.Value) => addTo(out, item, attr, v);
  if (amountAt(o, o.created_at, money) === null) {
    add(leftOutAttr(o.currency, 'orders'), 1);
    if (wasPaid(o)) add(leftOutAttr(o.currency, 'gross_revenue'), o.amount);
    return;
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
};

/**
 * Purchase cohorts: the customer joins the cohort of its first paid order's month (counted only when
 * that order can be converted), and each of its paid orders adds to the cohort's month it was paid
 * in; its second counted paid order makes it a repeater from that month on. A customer whose first
 * paid order cannot be converted leaves all its paid orders to `unconverted`.
 */
const addCohortMonths = (
  out: SalesFigures,
  orders: readonly SaleOrder[],
  first: SaleOrder | undefined,
  money: Money,
  months?: ReadonlySet<string>,
) => {
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
    // Outside `months` only what decides the repeaters' month is followed (no amount is made).
    const shown = !months || months.has(month);
    if (!counted || !convertible(o, o.paid_at!, money)) {
      if (!shown) continue;
      addTo(out, item, leftOutAttr(o.currency, 'orders'), 1);
      addTo(out, item, leftOutAttr(o.currency, 'gross_revenue'), o.amount);
      continue;
    }
    if (shown) {
      addTo(out, item, 'orders', 1);
      addTo(out, item, 'gross_revenue', amountAt(o, o.paid_at!, money)!);
      if (!buyerMonths.has(month)) addTo(out, item, 'buyers', 1);
    }
    buyerMonths.add(month);
    if (++countedOrders === 2) addTo(out, item, 'repeaters', 1);
  }
};

/** Whether an order's amount at `at` can be read in `money` (its month has a rate, or it needs none). */
const convertible = (o: SaleOrder, at: string, money: Money) =>
  money.only !== undefined || o.currency === money.reporting || money.rates.get(o.currency)?.has(monthOf(at, money.zone)) === true;

/**
 * The stored slices of the sales figures: the whole, and one segment per value of an order's
 * payment method (`none` included), source, billing cycle and currency (in its own money, the
 * reporting currency's too). A figure filtered by one of them reads its slice alone.
 */
export const SALES_DIMENSIONS = ['payment_method', 'source', 'billing_cycle', 'currency'] as const;
export type SalesDimension = (typeof SALES_DIMENSIONS)[number];
export type SalesSegment = { dimension: SalesDimension; value: string };

const segmentValue = (o: SaleOrder, dimension: SalesDimension) => (dimension === 'payment_method' ? paymentMethodOf(o) : o[dimension]);
/** The segments an order is in. */
export const orderSegments = (o: SaleOrder): SalesSegment[] =>
  SALES_DIMENSIONS.map((dimension) => ({ dimension, value: segmentValue(o, dimension) }));
/** The money and the orders of a slice (null: the whole). */
export const sliceMoney = (money: Money, segment: SalesSegment | null): Money =>
  segment?.dimension === 'currency' ? { ...money, only: segment.value } : money;
const inSlice = (segment: SalesSegment) => (o: SaleOrder) => segmentValue(o, segment.dimension) === segment.value;

/** A slice's id among a change's slices ('' the whole). */
const sliceKey = (segment: SalesSegment | null) => (segment ? `${segment.dimension}\u0000${segment.value}` : '');

/** What one customer's orders add to every stored slice it is in: the whole and each of its segments. */
export const salesSlices = (orders: readonly SaleOrder[], money: Money): { segment: SalesSegment | null; figures: SalesFigures }[] => {
  const segments = new Map<string, SalesSegment>();
  for (const o of orders) for (const s of orderSegments(o)) segments.set(sliceKey(s), s);
  return [
    { segment: null, figures: customerSales(orders, money) },
    ...[...segments.values()].map((segment) => ({ segment, figures: customerSales(orders, sliceMoney(money, segment), inSlice(segment)) })),
  ];
};

const sameOrder = (a: SaleOrder | undefined, b: SaleOrder | undefined) =>
  a === b || (!!a && !!b && SALE_FIELDS.every((f) => a[f] === b[f]));

/**
 * `after − before` of one customer's sales figures, per stored slice, for a change of its orders
 * (`before` and `after` by order_no). Only the orders that changed, and the two whose standing as
 * the first paid order changed, are counted again; the cohort months are counted again over the
 * paid orders when a paid order moved. So an order written today costs its own bookings, whatever
 * the customer's history, and the sum over all writes equals `salesSlices` of the orders at the end.
 */
export const salesChange = (
  before: ReadonlyMap<string, SaleOrder>,
  after: ReadonlyMap<string, SaleOrder>,
  money: Money,
): { segment: SalesSegment | null; moves: SalesFigures }[] => {
  const touched = new Set<string>();
  for (const [no, o] of before) if (!sameOrder(o, after.get(no))) touched.add(no);
  for (const no of after.keys()) if (!before.has(no)) touched.add(no);
  if (!touched.size) return [];
  const firstBefore = firstPaidOrders(before.values()).values().next().value as SaleOrder | undefined;
  const firstAfter = firstPaidOrders(after.values()).values().next().value as SaleOrder | undefined;
  if (firstBefore?.order_no !== firstAfter?.order_no) {
    if (firstBefore) touched.add(firstBefore.order_no);
    if (firstAfter) touched.add(firstAfter.order_no);
  }
  const slices = new Map<string, { segment: SalesSegment | null; moves: SalesFigures }>();
  const sliceOf = (segment: SalesSegment | null) => {
    const id = sliceKey(segment);
    let s = slices.get(id);
    if (!s) slices.set(id, (s = { segment, moves: new Map() }));
    return s.moves;
  };
  const count = (o: SaleOrder | undefined, first: SaleOrder | undefined, sign: 1 | -1) => {
    if (!o) return;
    for (const segment of [null, ...orderSegments(o)]) {
      const figures: SalesFigures = new Map();
      addOrderFigures(figures, o, o.order_no === first?.order_no, sliceMoney(money, segment), segment === null);
      addSalesFigures(sliceOf(segment), figures, sign);
    }
  };
  let paidMoved = false;
  for (const no of touched) {
    const [b, a] = [before.get(no), after.get(no)];
    count(b, firstBefore, -1);
    count(a, firstAfter, 1);
    if ((b && wasPaid(b)) || (a && wasPaid(a))) paidMoved = true;
  }
  if (paidMoved) {
    // The customer's cohort as it was and is: when it stays (the same first order, as counted), only the
    // months of the orders that changed move, and the repeaters' month; else every month moves.
    const kept =
      firstBefore !== undefined &&
      firstAfter !== undefined &&
      sameOrder(firstBefore, firstAfter) &&
      convertible(firstAfter, firstAfter.paid_at!, money);
    const months = kept
      ? new Set(
          [...touched].flatMap((no) =>
            [before.get(no), after.get(no)].flatMap((o) => (o && wasPaid(o) ? [monthOf(o.paid_at!, money.zone)] : [])),
          ),
        )
      : undefined;
    const cohorts: SalesFigures = new Map();
    addCohortMonths(cohorts, [...after.values()], firstAfter, money, months);
    const was: SalesFigures = new Map();
    addCohortMonths(was, [...before.values()], firstBefore, money, months);
    addSalesFigures(cohorts, was, -1);
    addSalesFigures(sliceOf(null), cohorts);
  }
  const out: { segment: SalesSegment | null; moves: SalesFigures }[] = [];
  for (const s of slices.values()) {
    for (const [item, attrs] of s.moves) {
      for (const [attr, v] of attrs) if (v.isZero()) attrs.delete(attr);
      if (!attrs.size) s.moves.delete(item);
    }
    if (s.moves.size) out.push(s);
  }
  return out;
};

/** The fields of an order the sales figures read. */
export const SALE_FIELDS = [
  'order_no',
  'customer_id',
  'amount',
  'currency',
  'status',
  'payment_method',
  'source',
  'billing_cycle',
  'created_at',
  'paid_at',
  'refunded_at',
  'failed_at',
] as const satisfies readonly (keyof SaleOrder)[];

/** An order as the sales figures read it (any stored or API shape of it). */
export const saleOf = (o: { [K in keyof SaleOrder]?: SaleOrder[K] | null | undefined }): SaleOrder =>
  Object.fromEntries(SALE_FIELDS.map((f) => [f, o[f] ?? null])) as unknown as SaleOrder;

/**
 * A booking as stored with the customer's timeline (lib/metrics/store.ts): the line `B<order_no>`
 * holding one entry, its created time first (the chunks of a long record are cut by it).
 */
export type BookingEntry = [
  created_at: string,
  amount: string,
  currency: string,
  status: string,
  paid_at: string | null,
  refunded_at: string | null,
  failed_at: string | null,
  payment_method: string | null,
  source: string,
  billing_cycle: string,
];
/** A customer's bookings as stored: `B<order_no>` → its one entry. */
export type BookingLines = Record<string, [BookingEntry]>;
export const BOOKING_LINE = 'B';
export const isBookingLine = (line: string) => line.startsWith(BOOKING_LINE);

const entryOf = (o: SaleOrder): BookingEntry => [
  o.created_at,
  o.amount,
  o.currency,
  o.status,
  o.paid_at,
  o.refunded_at,
  o.failed_at,
  o.payment_method,
  o.source,
  o.billing_cycle,
];

/** The bookings with `orderNo`'s entry set to the order as it now is (null: gone, as moved to another customer). Other lines stay the same arrays. */
export const withBooking = (lines: BookingLines, orderNo: string, order: SaleOrder | null): BookingLines =>
  withBookings(lines, [[orderNo, order]]);

/**
 * `withBooking` for several orders in turn (a later one of the same order wins), copying the
 * customer's bookings once (a batch's hundred orders of a customer with thousands): `lines`
 * itself when nothing changes.
 */
export const withBookings = (lines: BookingLines, changes: Iterable<[orderNo: string, order: SaleOrder | null]>): BookingLines => {
  let next: BookingLines | null = null;
  for (const [orderNo, order] of changes) {
    const line = `${BOOKING_LINE}${orderNo}`;
    const was = (next ?? lines)[line]?.[0];
    const entry = order && entryOf(order);
    if (entry ? was?.every((v, i) => v === entry[i]) : !was) continue;
    next ??= { ...lines };
    if (entry) next[line] = [entry];
    else delete next[line];
  }
  return next ?? lines;
};

/** The bookings of a customer's orders, built at once. */
export const bookingsOf = (orders: Iterable<SaleOrder>): BookingLines => {
  const out: BookingLines = {};
  for (const o of orders) out[`${BOOKING_LINE}${o.order_no}`] = [entryOf(o)];
  return out;
};

/** Whether two customers' bookings hold the same entries. */
export const sameBookings = (a: BookingLines, b: BookingLines): boolean => {
  const lines = Object.keys(a);
  return (
    lines.length === Object.keys(b).length &&
    lines.every((line) => b[line] !== undefined && a[line][0].every((v, i) => v === b[line][0][i]))
  );
};

/** Whether an attribute of a sales item is a figure (not a key or bookkeeping attribute). */
export const isSalesAttr = (attr: string) =>
  /^(gross_revenue|refunds|orders|paid_orders|refunded_orders|failed_orders|first_order_revenue|new_buyers|customers|buyers|repeaters)$/.test(
    attr,
  ) ||
  LEFT_OUT_ATTR.test(attr) ||
  METHOD_ATTR.test(attr);

/** The customer's orders as its bookings say, by order_no. */
export const ordersOfBookings = (lines: BookingLines, customerId: number): Map<string, SaleOrder> => {
  const out = new Map<string, SaleOrder>();
  for (const [line, [e]] of Object.entries(lines)) {
    const order_no = line.slice(BOOKING_LINE.length);
    out.set(order_no, {
      order_no,
      customer_id: customerId,
      created_at: e[0],
      amount: e[1],
      currency: e[2],
      status: e[3],
      paid_at: e[4],
      refunded_at: e[5],
      failed_at: e[6],
      payment_method: e[7],
      source: e[8],
      billing_cycle: e[9],
    });
  }
  return out;
};

/** The other currencies than the reporting one the bookings are in (their rates are read to count them). */
export const bookingCurrencies = (lines: BookingLines, reportingCurrency: string): Set<string> => {
  const out = new Set<string>();
  for (const [e] of Object.values(lines)) if (e[2] !== reportingCurrency) out.add(e[2]);
  return out;
};
