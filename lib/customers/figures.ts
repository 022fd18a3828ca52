import { NumberValue, QueryCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { db, tableName } from '#lib/db/client';
import { batchGet } from '#lib/db/batch-get';
import { keys, PAYMENT_PREFIX } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import type { Condition, WriteSet } from '#lib/db/writes';
import { ltvAttr, ltvPartAmounts, ltvPartsOf, type CustomerItem, type LtvPart } from '#lib/customers/model';
import { liveCondition } from '#lib/customers/store';

/**
 * A customer's figures from its orders, the one home of their rules (docs/customers.md): `ltv_<CCY>`
 * and `order_count` by ADD, the LTV parts of other currencies, the payment items and
 * first/last_payment_at. Orders add these writes to their own transactions; only this module
 * writes the customer's item and partition.
 */

/** What a customer's figures need of an order. */
export type PaidOrder = { order_no: string; amount: string; currency: string; status: string; paid_at?: string | null };

/** The order's payment time for first/last_payment_at: orders that have been paid (paid or refunded). */
export const paymentTime = (o: Pick<PaidOrder, 'status' | 'paid_at'> | null): string | null =>
  o && (o.status === 'paid' || o.status === 'refunded') && o.paid_at ? o.paid_at : null;

/** The customer is still live when the transaction commits (a delete meanwhile refuses it). */
export const requireLiveCustomer = (ws: WriteSet, merchantId: string, customerId: number): void => {
  ws.update('customer', keys.customer(merchantId, customerId)).when(liveCondition);
};

const ONE = new Decimal(1);
const sign = (d: Decimal, negative: boolean) => (negative ? d.negated() : d);

/** A change of one order as seen by one customer (null: not this customer's order before/after). */
export type CustomerOrderChange = { before: PaidOrder | null; after: PaidOrder | null };

/** The payment-time fields of a customer, as read (or as a transaction leaves them). */
export type PaymentState = Pick<CustomerItem, 'first_payment_at' | 'last_payment_at' | 'payment_version'>;

const minOf = (times: string[]) => (times.length ? times.reduce((a, b) => (b < a ? b : a)) : null);
const maxOf = (times: string[]) => (times.length ? times.reduce((a, b) => (b > a ? b : a)) : null);

/**
 * Payment times of the customer's paid orders other than the `excluded` payment items, nearest
 * each end: a strongly consistent Query on the customer's own partition (never an index, which
 * can be stale on AWS). `k` items from each end are enough when at most k − 1 are excluded.
 */
const paymentExtremes = async (merchantId: string, customerId: number, excluded: Set<string>) => {
  const k = excluded.size + 1;
  const ends = await Promise.all(
    [true, false].map((forward) =>
      db().send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :pay)',
          ExpressionAttributeValues: { ':pk': keys.customer(merchantId, customerId).pk, ':pay': PAYMENT_PREFIX },
          ConsistentRead: true,
          ScanIndexForward: forward,
          Limit: k,
        }),
      ),
    ),
  );
  const times = (items: Record<string, unknown>[] | undefined) =>
    (items ?? []).filter((i) => !excluded.has(String(i.sk))).map((i) => String(i.paid_at));
  return { first: times(ends[0].Items)[0] ?? null, last: times(ends[1].Items)[0] ?? null };
};

const exists = (attr: string): Condition => ({ expression: `attribute_exists(${attr})` });

/**
 * Moves one customer's figures for a set of order changes inside `ws`: ltv and order_count by ADD,
 * payment-time items put/deleted under the customer's key, and first/last_payment_at:
 * - only additions (or removals strictly inside the range): monotone guards — the stored first is
 *   still ≤ what we keep (or ≥ what we lower it to), likewise the last — so concurrent payers of
 *   one customer never invalidate each other;
 * - a removal of the first or last: recomputed from the payment items (consistent Query), guarded
 *   by `payment_version`, which every payment change bumps.
 * `created` is the customer item being put in the same transaction (figures applied to it).
 * Returns the payment state the transaction leaves, for callers carrying state between transactions.
 */
export const addCustomerFigures = async (
  ws: WriteSet,
  merchantId: string,
  reportingCurrency: string,
  customer: CustomerItem,
  changes: CustomerOrderChange[],
  created?: CustomerItem,
): Promise<PaymentState> => {
  const ltv = new Map<string, Decimal>();
  /** The signed payments in other currencies: what moves in the LTV parts (docs/customers.md, "Lifetime value"). */
  const moved: { currency: string; paid_at: string; amount: Decimal }[] = [];
  let orderCount = new Decimal(0);
  const removed: { at: string; sk: string }[] = [];
  const added: { at: string; sk: string; order_no: string }[] = [];
  for (const { before, after } of changes) {
    for (const [o, negative] of [
      [before, true],
      [after, false],
    ] as const) {
      if (o?.status === 'paid') {
        const amount = sign(new Decimal(o.amount), negative);
        ltv.set(o.currency, (ltv.get(o.currency) ?? new Decimal(0)).plus(amount));
        orderCount = orderCount.plus(sign(ONE, negative));
        // Another currency's payment also goes to its month's part, which converts `ltv` at read time.
        if (o.paid_at) moved.push({ currency: o.currency, paid_at: o.paid_at, amount });
      }
    }
    const b = paymentTime(before);
    const a = paymentTime(after);
    if (b === a && before?.order_no === after?.order_no) continue;
    if (b) removed.push({ at: b, sk: keys.customerPayment(merchantId, customer.id, b, before!.order_no).sk });
    if (a) added.push({ at: a, sk: keys.customerPayment(merchantId, customer.id, a, after!.order_no).sk, order_no: after!.order_no });
  }
  for (const part of ltvPartsOf(moved, reportingCurrency)) {
    const amounts = ltvPartAmounts(part);
    if (!amounts.length) continue;
    const u = ws
      .update('ltv-part', keys.customerLtvPart(merchantId, customer.id, part.currency, part.year))
      .set('currency', part.currency)
      .set('year', part.year);
    for (const [attr, delta] of amounts) u.add(attr, new Decimal(delta));
  }
  const key = keys.customer(merchantId, customer.id);
  for (const r of removed) ws.delete('payment', { pk: key.pk, sk: r.sk }, exists('pk'));
  for (const a of added) ws.put('payment', { pk: key.pk, sk: a.sk, paid_at: a.at, order_no: a.order_no });

  const state: PaymentState = {
    first_payment_at: customer.first_payment_at ?? null,
    last_payment_at: customer.last_payment_at ?? null,
    payment_version: customer.payment_version ?? 0,
  };
  const paymentsMove = removed.length > 0 || added.length > 0;
  const addedTimes = added.map((a) => a.at);

  if (created) {
    for (const [currency, delta] of ltv) {
      if (delta.isZero()) continue;
      const sum = new Decimal(String(created[ltvAttr(currency) as `ltv_${string}`] ?? 0)).plus(delta);
      (created as Record<string, unknown>)[ltvAttr(currency)] = NumberValue.from(sum.toFixed());
    }
    created.order_count = Number(new Decimal(created.order_count ?? 0).plus(orderCount));
    if (paymentsMove) {
      created.first_payment_at = minOf(addedTimes) ?? undefined;
      created.last_payment_at = maxOf(addedTimes) ?? undefined;
      created.payment_version = (created.payment_version ?? 0) + 1;
    }
    return {
      first_payment_at: created.first_payment_at ?? null,
      last_payment_at: created.last_payment_at ?? null,
      payment_version: created.payment_version,
    };
  }

  const u = ws.update('customer', key);
  for (const [currency, delta] of ltv) u.add(ltvAttr(currency), delta);
  u.add('order_count', orderCount);
  if (!paymentsMove) return state;
  u.add('payment_version', ONE);
  const next: PaymentState = { ...state, payment_version: (state.payment_version ?? 0) + 1 };
  const first = state.first_payment_at ?? null;
  const last = state.last_payment_at ?? null;

  if (removed.some((r) => r.at === first || r.at === last)) {
    const others = await paymentExtremes(merchantId, customer.id, new Set(removed.map((r) => r.sk)));
    next.first_payment_at = minOf([...(others.first ? [others.first] : []), ...addedTimes]);
    next.last_payment_at = maxOf([...(others.last ? [others.last] : []), ...addedTimes]);
    u.when(
      customer.payment_version === undefined
        ? { expression: 'attribute_not_exists(payment_version)' }
        : { expression: 'payment_version = :pv', values: { ':pv': customer.payment_version } },
    );
    for (const [attr, value] of [
      ['first_payment_at', next.first_payment_at],
      ['last_payment_at', next.last_payment_at],
    ] as const) {
      if (value === null || value === undefined) u.remove(attr);
      else u.set(attr, value);
    }
    return next;
  }

  // Monotone guards: additions can only lower the first and raise the last.
  const minAdded = minOf(addedTimes);
  const maxAdded = maxOf(addedTimes);
  for (const [attr, read, cand, better] of [
    ['first_payment_at', first, minAdded, (x: string, y: string) => x < y],
    ['last_payment_at', last, maxAdded, (x: string, y: string) => x > y],
  ] as const) {
    const op = attr === 'first_payment_at' ? '>=' : '<=';
    const keep = attr === 'first_payment_at' ? '<=' : '>=';
    if (cand !== null && (read === null || better(cand, read))) {
      // Ours becomes the extreme unless a concurrent writer already went past it.
      u.set(attr, cand);
      u.when({
        expression: `attribute_not_exists(#a) OR attribute_type(#a, :null) OR #a ${op} :t`,
        names: { '#a': attr },
        values: { ':t': cand, ':null': 'NULL' },
      });
      next[attr] = cand;
    } else if (read !== null) {
      // The stored extreme stays: it must not have moved inwards (only a recomputation can do that).
      u.when({ expression: `#a ${keep} :t`, names: { '#a': attr }, values: { ':t': read } });
    } else {
      // Nothing stored and nothing added on this side (only removals of unknown times): stay empty.
      u.when({ expression: 'attribute_not_exists(#a) OR attribute_type(#a, :null)', names: { '#a': attr }, values: { ':null': 'NULL' } });
    }
  }
  return next;
};

/**
 * The LTV parts a customer's paid orders in other currencies make (docs/customers.md, "Lifetime
 * value in other currencies"), recomputed from the table alone: its payment items (every order it
 * has paid, by key), then those orders by key. For `ops metrics rebuild`: orders paid before the
 * parts existed get theirs.
 */
export const ltvPartsFromOrders = async (merchantId: string, reportingCurrency: string, customerId: number): Promise<LtvPart[]> => {
  const payments = await queryAll<{ order_no: string }>(
    { partition: keys.customer(merchantId, customerId).pk, from: PAYMENT_PREFIX, to: `${PAYMENT_PREFIX}~`, descending: false },
    ['order_no'],
  );
  const orders = await batchGet<PaidOrder & { customer_id: number }>(
    [...new Set(payments.map((p) => p.order_no))].map((no) => keys.order(merchantId, no)),
  );
  const paid = [...orders.values()].filter((o) => o.status === 'paid' && o.paid_at && Number(o.customer_id) === customerId);
  return ltvPartsOf(
    paid.map((o) => ({ currency: o.currency, paid_at: o.paid_at!, amount: o.amount })),
    reportingCurrency,
  );
};
