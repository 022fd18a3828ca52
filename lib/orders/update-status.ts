import { now } from '#lib/clock';
import type { AuthContext } from '#lib/auth/tokens';
import { keys } from '#lib/db/keys';
import { backoff, versionIs, WriteConflict, WriteSet } from '#lib/db/writes';
import { customersByIds } from '#lib/customers/store';
import { contended, invalidField, notFound } from '#lib/http/errors';
import { addAggregateDeltas, addCustomerFigureUpdate, planCustomerFigures } from '#lib/orders/figures';
import { addOutboxEvent, type OrderEventType } from '#lib/orders/events';
import { presentOrder, type OrderItem } from '#lib/orders/model';
import type { OrderPatch } from '#lib/orders/schemas';
import { getOrder, orderIndexAttributes, otherPaymentTimes } from '#lib/orders/store';
import { canTransition, fillStatusTimestamp } from '#lib/orders/transitions';
import { formatTimestamp } from '#lib/shared/time';

// Writers racing on one customer's payment times retry until each wins a round (N writers: ~N rounds).
const MAX_ATTEMPTS = 20;

/** The order after a change of fields: index keys follow the status, the version moves on. */
export const rewriteOrder = (merchantId: string, order: OrderItem, changes: Partial<OrderItem>, at: string): OrderItem => {
  const next = fillStatusTimestamp({ ...order, ...changes, updated_at: at, version: order.version + 1 }, at);
  return { ...next, ...orderIndexAttributes(merchantId, next) };
};

/**
 * PATCH /orders/{orderNo}: an allowed status move (decisions §6). The order is guarded by its
 * version; the customer's figures and the stats move by the difference in the same transaction,
 * with an `order.<status>` outbox event.
 */
export const changeOrderStatus = async (auth: AuthContext, orderNo: string, patch: OrderPatch) => {
  const { merchantId } = auth;
  for (let attempt = 1; ; attempt++) {
    const order = await getOrder(merchantId, orderNo);
    if (!order) throw notFound();
    if (!canTransition(order.status, patch.status)) {
      throw invalidField('status', `The order cannot move from ${order.status} to ${patch.status}.`);
    }
    const at = formatTimestamp(now());
    const changes: Partial<OrderItem> = { status: patch.status };
    for (const field of ['paid_at', 'failed_at', 'refunded_at'] as const) if (patch[field]) changes[field] = patch[field];
    if (patch.metadata !== undefined) changes.metadata = patch.metadata;
    const after = rewriteOrder(merchantId, order, changes, at);

    const customer = (await customersByIds(merchantId, [order.customer_id])).get(order.customer_id);
    const ws = new WriteSet();
    ws.put('order', after, versionIs(order.version));
    if (customer) {
      const plan = await planCustomerFigures(customer, [{ before: order, after }], () =>
        otherPaymentTimes(merchantId, customer.id, new Set([order.order_no])),
      );
      addCustomerFigureUpdate(ws, keys.customer(merchantId, customer.id), customer, plan);
    }
    addAggregateDeltas(ws, merchantId, order, after);
    const presented = presentOrder(after, customer);
    addOutboxEvent(ws, merchantId, `order.${after.status}` as OrderEventType, presented, at);
    try {
      await ws.commit();
      return presented;
    } catch (err) {
      if (!(err instanceof WriteConflict)) throw err;
      if (attempt >= MAX_ATTEMPTS) throw contended();
      await backoff(attempt);
    }
  }
};
