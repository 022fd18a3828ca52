import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { now } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import type { AuthContext } from '#lib/auth/tokens';
import { keys } from '#lib/db/keys';
import { allocateIds } from '#lib/db/sequences';
import { batchGet, keyId } from '#lib/db/batch-get';
import { retrying, RetryableError } from '#lib/db/retry';
import { WriteConflict, WriteSet } from '#lib/db/writes';
import { InvalidError } from '#lib/errors';
import { addCustomerCreate, liveCondition } from '#lib/customers/store';
import { orderTimeline } from '#lib/metrics/lines';
import { addTimelineChange, customersWithTimelines, EMPTY_TIMELINE } from '#lib/metrics/store';
import type { CustomerItem } from '#lib/customers/model';
import { addAggregateDeltas, addCustomerFigures } from '#lib/orders/figures';
import { addOutboxEvent } from '#lib/orders/events';
import { addIdempotencyRecord, isLive, replay as replayRecord, requestHash, type IdempotencyRecord } from '#lib/shared/idempotency';
export { IDEMPOTENCY_MISMATCH } from '#lib/shared/idempotency';
import { presentOrder, type Order, type OrderItem } from '#lib/orders/model';
import type { OrderInput } from '#lib/orders/schemas';
import { addOrderWrite, orderIndexAttributes } from '#lib/orders/store';
import { fillStatusTimestamp } from '#lib/orders/transitions';
import { formatTimestamp } from '#lib/shared/time';

export type CreateResult = { status: number; body: { data: Order }; replayed: boolean };

export const ORDER_NO_TAKEN = 'The order no has already been taken.';
const replay = (record: IdempotencyRecord, hash: string): CreateResult => replayRecord<CreateResult['body']>(record, hash);

/** A creation request with the defaults of docs/orders.md applied (null means the default). */
export const withOrderDefaults = (input: OrderInput) => ({
  ...input,
  status: input.status ?? 'pending',
  currency: input.currency ?? 'TWD',
  billing_cycle: input.billing_cycle ?? 'one-time',
  customer_name: input.customer_name ?? null,
  payment_method: input.payment_method ?? null,
  paid_at: input.paid_at ?? null,
  refunded_at: input.refunded_at ?? null,
  failed_at: input.failed_at ?? null,
  metadata: input.metadata ?? null,
});

/** The order a creation request describes, with the defaults of docs/orders.md. */
export const newOrderItem = (
  merchantId: string,
  id: number,
  customerId: number,
  input: OrderInput,
  source: OrderItem['source'],
  at: string,
  /** Imported history's own date (batch); else the time of the write. */
  createdAt: string = at,
): OrderItem => {
  const base = {
    id,
    order_no: input.order_no,
    amount: input.amount,
    currency: input.currency ?? 'TWD',
    status: input.status ?? 'pending',
    payment_method: input.payment_method ?? null,
    source,
    billing_cycle: input.billing_cycle ?? 'one-time',
    paid_at: input.paid_at ?? null,
    refunded_at: input.refunded_at ?? null,
    failed_at: input.failed_at ?? null,
    metadata: input.metadata ?? null,
    customer_id: customerId,
    created_at: createdAt,
    updated_at: at,
    version: 1,
  };
  // Imported history: a status time it does not give is the order's own date, not the import's.
  const filled = fillStatusTimestamp(base, createdAt);
  return { ...keys.order(merchantId, input.order_no), ...orderIndexAttributes(merchantId, filled), ...filled } as OrderItem;
};

/**
 * POST /orders: one transaction writes the order (unique order_no), the idempotency record, the
 * customer (created, or its figures moved), the stats and totals, and the outbox events.
 * Reads before it: one BatchGetItem (idempotency record, email marker, order_no), one id
 * allocation, and the existing customer. Each attempt re-reads; `retrying` bounds the attempts.
 */
export const createOrder = async (
  auth: AuthContext,
  input: OrderInput,
  opts: { idempotencyKey?: string },
): Promise<CreateResult> => {
  const { merchantId } = auth;
  // The validated request with its defaults: equal requests hash equally (docs/orders.md, idempotency).
  const hash = opts.idempotencyKey ? requestHash(withOrderDefaults(input)) : '';
  const emailKey = keys.customerEmail(merchantId, input.customer_email);
  const orderKey = keys.order(merchantId, input.order_no);
  const idemKey = opts.idempotencyKey ? keys.idempotency(merchantId, opts.idempotencyKey) : null;
  let orderId: number | undefined;

  /**
   * The order_no exists. BatchGetItem reads items one by one, not as of one transaction, so it can
   * see a concurrent same-key request's order before its idempotency record: read the record again
   * (the two were committed together) before calling the order_no taken.
   */
  const orderNoTaken = async (): Promise<CreateResult> => {
    if (idemKey) {
      const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: idemKey, ConsistentRead: true }));
      if (isLive(Item as IdempotencyRecord | undefined)) return replay(Item as IdempotencyRecord, hash);
    }
    throw InvalidError.field('order_no', ORDER_NO_TAKEN);
  };

  return retrying(async () => {
    const found = await batchGet([...(idemKey ? [idemKey] : []), emailKey, orderKey]);
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
      await addCustomerFigures(ws, merchantId, existing, [{ before: null, after: order }]);
      // Still live at commit: a customer deleted meanwhile sends us round again.
      ws.update('customer-figures', keys.customer(merchantId, existing.id)).when(liveCondition);
    } else {
      const created = addCustomerCreate(ws, merchantId, ids.customer!, { email: input.customer_email, name: input.customer_name ?? null }, at);
      customer = created;
      order = newOrderItem(merchantId, orderId, created.id, input, 'api', at);
      addOrderWrite(ws, merchantId, null, order);
      await addCustomerFigures(ws, merchantId, created, [{ before: null, after: order }], created);
    }
    addAggregateDeltas(ws, merchantId, null, order);
    const presented = presentOrder(order, customer);
    addOutboxEvent(ws, merchantId, 'order.created', presented, at);
    if (order.status === 'paid') addOutboxEvent(ws, merchantId, 'order.paid', presented, at);
    const body = { data: presented };
    if (opts.idempotencyKey) {
      addIdempotencyRecord(ws, merchantId, opts.idempotencyKey, { request_hash: hash, status: 201, body: JSON.stringify(body), created_at: at });
    }
    addTimelineChange(ws, merchantId, customer.id, timeline, orderTimeline(timeline.timeline, order.order_no, order, auth.reportingCurrency));
    try {
      await ws.commit();
      return { status: 201, body, replayed: false };
    } catch (err) {
      // The order_no was taken meanwhile (a same-key racer is told apart by its record).
      if (err instanceof WriteConflict && err.tags.includes('order') && !err.tags.includes('idempotency')) return orderNoTaken();
      // Otherwise (same key won, customer created/deleted/changed): read again.
      throw err;
    }
  });
};
