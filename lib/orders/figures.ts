import { NumberValue } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { keys } from '#lib/db/keys';
import type { WriteSet } from '#lib/db/writes';
import { ltvAttr, type CustomerItem } from '#lib/customers/model';
import type { OrderItem } from '#lib/orders/model';
import { utcDay, utcMonth } from '#lib/shared/time';

/**
 * What an order contributes to the pre-aggregated figures. Every order write turns the stored
 * state (`before`, null when new) and the new state (`after`) into ADD deltas in the same
 * transaction as the order, so figures and orders never disagree.
 */
export type OrderFigures = Pick<OrderItem, 'amount' | 'currency' | 'status' | 'paid_at' | 'created_at' | 'customer_id'>;

const ONE = new Decimal(1);
const sign = (d: Decimal, negative: boolean) => (negative ? d.negated() : d);

export const revenueAttr = (currency: string) => `rev_${currency}`;

/** The order's payment time for first/last_payment_at: orders that have been paid (paid or refunded). */
export const paymentTime = (o: Pick<OrderItem, 'status' | 'paid_at'> | null): string | null =>
  o && (o.status === 'paid' || o.status === 'refunded') && o.paid_at ? o.paid_at : null;

/** Stats (per UTC day and month, per currency) and list totals. */
export const addAggregateDeltas = (ws: WriteSet, merchantId: string, before: OrderFigures | null, after: OrderFigures | null) => {
  const apply = (o: OrderFigures, negative: boolean) => {
    if (o.status === 'paid' && o.paid_at) {
      const amount = sign(new Decimal(o.amount), negative);
      ws.update('stats', keys.statsDay(merchantId, utcDay(o.paid_at))).add(revenueAttr(o.currency), amount);
      ws.update('stats', keys.statsMonth(merchantId, utcMonth(o.paid_at))).add(revenueAttr(o.currency), amount);
    }
    const createdDay = ws.update('stats', keys.statsDay(merchantId, utcDay(o.created_at)));
    if (o.status === 'paid') createdDay.add('created_paid', sign(ONE, negative));
    ws.update('totals', keys.totals(merchantId)).add(`orders_${o.status}`, sign(ONE, negative));
  };
  if (before) apply(before, true);
  if (after) apply(after, false);
  if (!before && after) {
    ws.update('stats', keys.statsDay(merchantId, utcDay(after.created_at))).add('created', ONE);
    ws.update('totals', keys.totals(merchantId)).add('orders', ONE);
  }
};

/** A change of one order as seen by one customer (null: not this customer's order before/after). */
export type CustomerOrderChange = { before: OrderFigures | null; after: OrderFigures | null };

export type CustomerFigurePlan = {
  ltv: Map<string, Decimal>;
  orderCount: Decimal;
  /**
   * Present when the set of payment times changes: the new first/last, and what they were computed
   * from — the stored first/last (`extremes`), or the customer's other orders (`recomputed`).
   */
  payments?: { first: string | null; last: string | null; from: 'extremes' | 'recomputed'; read: { first: string | null; last: string | null } };
};

const minMax = (times: string[]) => ({
  first: times.length ? times.reduce((a, b) => (b < a ? b : a)) : null,
  last: times.length ? times.reduce((a, b) => (b > a ? b : a)) : null,
});

/**
 * The customer's figure changes for a set of order changes. first/last_payment_at move incrementally;
 * only when a removed payment was the first or the last does `otherPaymentTimes` (the customer's
 * other orders) get called to recompute them.
 */
export const planCustomerFigures = async (
  customer: Pick<CustomerItem, 'first_payment_at' | 'last_payment_at'>,
  changes: CustomerOrderChange[],
  otherPaymentTimes: () => Promise<string[]>,
): Promise<CustomerFigurePlan> => {
  const ltv = new Map<string, Decimal>();
  let orderCount = new Decimal(0);
  const removed: string[] = [];
  const added: string[] = [];
  // Unchanged times of the changed orders: `otherPaymentTimes` leaves those orders out.
  const kept: string[] = [];
  for (const { before, after } of changes) {
    for (const [o, negative] of [[before, true], [after, false]] as const) {
      if (o?.status === 'paid') {
        ltv.set(o.currency, (ltv.get(o.currency) ?? new Decimal(0)).plus(sign(new Decimal(o.amount), negative)));
        orderCount = orderCount.plus(sign(ONE, negative));
      }
    }
    const b = paymentTime(before);
    const a = paymentTime(after);
    if (b !== a) {
      if (b) removed.push(b);
      if (a) added.push(a);
    } else if (a) {
      kept.push(a);
    }
  }
  const plan: CustomerFigurePlan = { ltv, orderCount };
  if (!removed.length && !added.length) return plan;
  const first = customer.first_payment_at ?? null;
  const last = customer.last_payment_at ?? null;
  const read = { first, last };
  if (removed.some((t) => t === first || t === last)) {
    plan.payments = { ...minMax([...(await otherPaymentTimes()), ...added, ...kept]), from: 'recomputed', read };
  } else {
    plan.payments = { ...minMax([...(first ? [first] : []), ...(last ? [last] : []), ...added]), from: 'extremes', read };
  }
  return plan;
};

const sameTime = (attr: 'first_payment_at' | 'last_payment_at', value: string | null, placeholder: string) =>
  value === null
    ? { expression: `attribute_not_exists(${attr}) OR attribute_type(${attr}, :nullType)`, values: { ':nullType': 'NULL' } }
    : { expression: `${attr} = ${placeholder}`, values: { [placeholder]: value } };

/**
 * Writes a plan onto an existing customer. Every change to the set of payment times bumps
 * `payment_version`. Incremental first/last are guarded by the stored first/last they were computed
 * from (so writers that leave them alone don't contend); a recomputation is guarded by the version,
 * so any concurrent payment change sends it round again.
 */
export const addCustomerFigureUpdate = (
  ws: WriteSet,
  key: { pk: string; sk: string },
  customer: Pick<CustomerItem, 'payment_version'>,
  plan: CustomerFigurePlan,
) => {
  const u = ws.update('customer-figures', key);
  for (const [currency, delta] of plan.ltv) u.add(ltvAttr(currency), delta);
  u.add('order_count', plan.orderCount);
  const p = plan.payments;
  if (!p) return;
  u.add('payment_version', ONE);
  for (const [attr, value] of [['first_payment_at', p.first], ['last_payment_at', p.last]] as const) {
    if (value === null) u.remove(attr);
    else u.set(attr, value);
  }
  if (p.from === 'recomputed') {
    u.when(
      customer.payment_version === undefined
        ? { expression: 'attribute_not_exists(payment_version)' }
        : { expression: 'payment_version = :pv', values: { ':pv': customer.payment_version } },
    );
  } else {
    u.when(sameTime('first_payment_at', p.read.first, ':pf'));
    u.when(sameTime('last_payment_at', p.read.last, ':pl'));
  }
};

/** Applies a plan to a customer item that is being created in the same transaction. */
export const applyPlanToNewCustomer = (item: CustomerItem, plan: CustomerFigurePlan) => {
  const target = item as unknown as Record<string, unknown>;
  for (const [currency, delta] of plan.ltv) {
    const sum = new Decimal(String(target[ltvAttr(currency)] ?? 0)).plus(delta);
    if (!delta.isZero()) target[ltvAttr(currency)] = NumberValue.from(sum.toFixed());
  }
  item.order_count = Number(new Decimal(item.order_count ?? 0).plus(plan.orderCount));
  if (plan.payments) {
    item.first_payment_at = plan.payments.first ?? undefined;
    item.last_payment_at = plan.payments.last ?? undefined;
    item.payment_version = (item.payment_version ?? 0) + 1;
  }
};
