import { now } from '#lib/clock';
import type { AuthContext } from '#lib/auth/tokens';
import { keys } from '#lib/db/keys';
import { allocateIds } from '#lib/db/sequences';
import { batchGet, keyId } from '#lib/db/batch-get';
import { retrying, RetryableError } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { InvalidError, NotFoundError } from '#lib/errors';
import { addCustomerCreate, customerIdsByEmail, customersByIds } from '#lib/customers/store';
import { addCustomerFigures, requireLiveCustomer } from '#lib/customers/figures';
import type { CustomerItem } from '#lib/customers/model';
import {
  addTimelineChange,
  customersWithTimelines,
  EMPTY_TIMELINE,
  generationSettings,
  orderTimeline,
  ratesKey,
  rememberRates,
  type SettingsMemo,
  saleOf,
  withBooking,
} from '#lib/metrics';
import { addOutboxEvent } from '#lib/outbox/store';
import { addIdempotencyRecord, isLive, replay as replayRecord, requestHash, type IdempotencyRecord } from '#lib/db/idempotency';
import { emptyPage } from '#lib/shared/pagination';
import { presentOrder, type Order, type OrderItem } from '#lib/orders/model';
import {
  createdWebhooks,
  decide,
  foldTerms,
  ORDER_NO_TAKEN,
  revenueCurrencies,
  stats,
  statsTerms,
  withOrderDefaults,
} from '#lib/orders/rules';
import { localPeriodsAt } from '#lib/shared/zone';
import type { OrderInput, OrderListQuery, OrderPatch } from '#lib/orders/schemas';
import {
  addAggregateDeltas,
  addOrderWrite,
  getIdempotencyRecord,
  getOrder,
  getOrderCustomer,
  newOrderItem,
  orderNoTakenBy,
  ordersPage,
  readStatsTerms,
  rewriteOrder,
} from '#lib/orders/store';
import { formatTimestamp } from '#lib/shared/time';

/**
 * Orders (docs/orders.md): each change reads by key, decides (lib/orders/rules.ts) and persists
 * in one transaction: the order, the customer's figures, the stats and totals, the MRR timeline
 * and the webhook's outbox item. A lost race re-reads and decides afresh.
 */

export type CreateResult = { status: number; body: { data: Order }; replayed: boolean };

const replay = (record: IdempotencyRecord, hash: string): CreateResult => replayRecord<CreateResult['body']>(record, hash);

/**
 * POST /orders: one transaction writes the order (unique order_no), the idempotency record, the
 * customer (created, or its figures moved), the stats and totals, and the outbox items.
 * Reads before it: one BatchGetItem (idempotency record, email marker, order_no), one id
 * allocation, and the existing customer. Each attempt re-reads; `retrying` bounds the attempts.
 */
export const createOrder = async (auth: AuthContext, input: OrderInput, opts: { idempotencyKey?: string }): Promise<CreateResult> => {
  const { merchantId } = auth;
  // The validated request with its defaults: equal requests hash equally (docs/orders.md, idempotency).
  const hash = opts.idempotencyKey ? requestHash(withOrderDefaults(input)) : '';
  const emailKey = keys.customerEmail(merchantId, input.customer_email);
  const orderKey = keys.order(merchantId, input.order_no);
  const idemKey = opts.idempotencyKey ? keys.idempotency(merchantId, opts.idempotencyKey) : null;
  // An order in another currency is converted when its figures are written: its rates come with the first read.
  const currency = input.currency ?? 'TWD';
  const rates = currency === auth.reportingCurrency ? null : ratesKey(merchantId, auth.generation, currency);
  let orderId: number | undefined;

  /**
   * The order_no exists. BatchGetItem reads items one by one, not as of one transaction, so it can
   * see a concurrent same-key request's order before its idempotency record: read the record again
   * (the two were committed together) before calling the order_no taken.
   */
  const orderNoTaken = async (): Promise<CreateResult> => {
    if (idemKey) {
      const record = await getIdempotencyRecord(idemKey);
      if (isLive(record)) return replay(record, hash);
    }
    throw InvalidError.field('order_no', ORDER_NO_TAKEN);
  };

  return retrying(async () => {
    const found = await batchGet([...(idemKey ? [idemKey] : []), emailKey, orderKey, ...(rates ? [rates] : [])]);
    const memo: SettingsMemo = new Map();
    if (rates) rememberRates(memo, merchantId, auth.generation, currency, found);
    const at = formatTimestamp(now());
    const record = idemKey ? (found.get(keyId(idemKey)) as IdempotencyRecord | undefined) : undefined;
    if (isLive(record)) return replay(record, hash);
    if (found.has(keyId(orderKey))) return orderNoTaken();
    const marker = found.get(keyId(emailKey)) as { customer_id: number } | undefined;

    const ids = await allocateIds(merchantId, { order: orderId ? 0 : 1, customer: marker ? 0 : 1 });
    orderId ??= ids.order!;

    const ws = new WriteSet();
    let customer: Pick<CustomerItem, 'id' | 'email' | 'name'>;
    let order: OrderItem;
    let timeline = EMPTY_TIMELINE;
    if (marker) {
      // The customer and its MRR timeline in one request.
      const read = await customersWithTimelines<CustomerItem>(merchantId, [Number(marker.customer_id)]);
      const existing = read.customers.get(Number(marker.customer_id));
      // Deleted meanwhile: the marker is gone on the next read, and a new customer is created.
      if (!existing || existing.deleted_at) throw new RetryableError('contention', 'customer deleted meanwhile');
      timeline = read.timelines.get(existing.id)!;
      customer = existing;
      order = newOrderItem(merchantId, orderId, existing.id, input, 'api', at);
      addOrderWrite(ws, merchantId, null, order);
      await addCustomerFigures(ws, merchantId, auth.reportingCurrency, existing, [{ before: null, after: order }]);
      // Still live at commit: a customer deleted meanwhile sends us round again.
      requireLiveCustomer(ws, merchantId, existing.id);
    } else {
      const created = addCustomerCreate(
        ws,
        merchantId,
        ids.customer!,
        { email: input.customer_email, name: input.customer_name ?? null },
        at,
      );
      customer = created;
      order = newOrderItem(merchantId, orderId, created.id, input, 'api', at);
      addOrderWrite(ws, merchantId, null, order);
      await addCustomerFigures(ws, merchantId, auth.reportingCurrency, created, [{ before: null, after: order }], created);
    }
    addAggregateDeltas(ws, merchantId, null, order);
    const presented = presentOrder(order, customer);
    for (const webhook of createdWebhooks(order)) addOutboxEvent(ws, merchantId, webhook, presented, at);
    const body = { data: presented };
    if (opts.idempotencyKey) {
      addIdempotencyRecord(ws, merchantId, opts.idempotencyKey, {
        request_hash: hash,
        status: 201,
        body: JSON.stringify(body),
        created_at: at,
      });
    }
    await addTimelineChange(
      ws,
      merchantId,
      auth,
      customer.id,
      timeline,
      orderTimeline(timeline.timeline, order.order_no, order),
      memo,
      withBooking(timeline.bookings, order.order_no, saleOf(order)),
    );
    try {
      await ws.commit();
      return { status: 201, body, replayed: false };
    } catch (err) {
      // The order_no was taken meanwhile (a same-key racer is told apart by its record).
      if (orderNoTakenBy(err)) return orderNoTaken();
      // Otherwise (same key won, customer created/deleted/changed): read again.
      throw err;
    }
  });
};

/**
 * PATCH /orders/{orderNo}: an allowed status move (rules: `decide`). The order is guarded by its
 * version; the customer's figures and the stats move by the difference in the same transaction,
 * with an `order.<status>` outbox item. A lost race re-reads and judges the move afresh.
 */
export const changeOrderStatus = async (auth: AuthContext, orderNo: string, patch: OrderPatch) => {
  const { merchantId } = auth;
  return retrying(async () => {
    const order = await getOrder(merchantId, orderNo);
    if (!order) throw new NotFoundError();
    const { changes, webhook } = decide(order, patch);
    const at = formatTimestamp(now());
    const after = rewriteOrder(merchantId, order, changes, at);

    // The customer and its MRR timeline in one request, with the rates of the order's currency when it is another.
    const rates = order.currency === auth.reportingCurrency ? null : ratesKey(merchantId, auth.generation, order.currency);
    const read = await customersWithTimelines<CustomerItem>(merchantId, [order.customer_id], rates ? [rates] : []);
    const memo: SettingsMemo = new Map();
    if (rates) rememberRates(memo, merchantId, auth.generation, order.currency, read.found);
    const customer = read.customers.get(order.customer_id);
    const timeline = read.timelines.get(order.customer_id)!;
    const ws = new WriteSet();
    addOrderWrite(ws, merchantId, order, after);
    if (customer) await addCustomerFigures(ws, merchantId, auth.reportingCurrency, customer, [{ before: order, after }]);
    addAggregateDeltas(ws, merchantId, order, after);
    const presented = presentOrder(after, customer);
    addOutboxEvent(ws, merchantId, webhook, presented, at);
    await addTimelineChange(
      ws,
      merchantId,
      auth,
      order.customer_id,
      timeline,
      orderTimeline(timeline.timeline, order.order_no, after),
      memo,
      withBooking(timeline.bookings, order.order_no, saleOf(after)),
    );
    await ws.commit();
    return presented;
  });
};

/** GET /orders/{orderNo}: the order and its customer (two GetItems). */
export const findOrder = async (merchantId: string, orderNo: string) => {
  const order = await getOrder(merchantId, orderNo);
  if (!order) return null;
  return presentOrder(order, await getOrderCustomer(merchantId, order.customer_id));
};

/** GET /orders: a page of orders (store: `ordersPage`) with their customers (one BatchGetItem). */
export const listOrders = async (merchantId: string, q: OrderListQuery) => {
  let customerId = q.customer_id;
  if (q.customer_email !== undefined) {
    const byEmail = (await customerIdsByEmail(merchantId, [q.customer_email])).get(q.customer_email);
    if (byEmail === undefined || (customerId !== undefined && customerId !== byEmail)) {
      return emptyPage(q);
    }
    customerId = byEmail;
  }
  const { items, meta } = await ordersPage(merchantId, customerId, q);
  const customers = await customersByIds(
    merchantId,
    items.map((o) => o.customer_id),
  );
  return { data: items.map((o) => presentOrder(o, customers.get(o.customer_id))), meta };
};

/**
 * GET /orders/stats from the pre-aggregated day and month items: revenue by `paid_at`, counts by
 * `created_at`, today and this month in the merchant's time zone (docs/orders.md).
 */
export const orderStats = async (
  merchantId: string,
  currency: string | undefined,
  { reportingCurrency, timezone, generation }: Pick<AuthContext, 'reportingCurrency' | 'timezone' | 'generation'>,
) => {
  const { day, today, month } = localPeriodsAt(now().getTime(), timezone);
  const todayTerms = statsTerms(today.from, today.to);
  const monthTerms = statsTerms(month.from, month.to);
  const counters = await readStatsTerms(merchantId, [...todayTerms, ...monthTerms]);
  const [daily, monthly] = [foldTerms(todayTerms, counters), foldTerms(monthTerms, counters)];
  // Without a currency, the reporting currency's revenue converts the others at this month's rate:
  // one read more, only when there are others. A currency named is its own money alone.
  const others = currency === undefined ? revenueCurrencies([daily, monthly], reportingCurrency) : [];
  // At the rates of the figures' generation (a rate change counts here from its recount's switch, as everywhere).
  const { rates: book } = others.length
    ? await generationSettings(merchantId, generation, others, new Map(), timezone)
    : { rates: new Map() };
  const rates = new Map(others.flatMap((c) => (book.get(c)?.has(day.slice(0, 7)) ? [[c, book.get(c)!.get(day.slice(0, 7))!]] : [])));
  return stats(daily, monthly, currency, reportingCurrency, rates);
};
