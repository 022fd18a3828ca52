import { now } from '#lib/clock';
import type { AuthContext } from '#lib/auth/tokens';
import { retrying } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { InvalidError, NotFoundError } from '#lib/errors';
import type { CustomerItem } from '#lib/customers/model';
import { orderTimeline } from '#lib/metrics/lines';
import { addTimelineChange, customersWithTimelines } from '#lib/metrics/store';
import { addAggregateDeltas, addCustomerFigures } from '#lib/orders/figures';
import { addOutboxEvent, type OrderEventType } from '#lib/orders/events';
import { presentOrder, type OrderItem } from '#lib/orders/model';
import type { OrderPatch } from '#lib/orders/schemas';
import { addOrderWrite, getOrder, orderIndexAttributes, withoutListKeys } from '#lib/orders/store';
import { canTransition, fillStatusTimestamp } from '#lib/orders/transitions';
import { formatTimestamp } from '#lib/shared/time';


/**
 * The order after a change of fields: its index keys follow it, the version moves on. List keys an
 * earlier version kept on the item are dropped (its list entries carry them: `addOrderWrite`).
 */
export const rewriteOrder = (merchantId: string, order: OrderItem, changes: Partial<OrderItem>, at: string): OrderItem => {
  const next = fillStatusTimestamp(withoutListKeys({ ...order, ...changes, updated_at: at, version: order.version + 1 }), at);
  return { ...next, ...orderIndexAttributes(merchantId, next) };
};

/**
 * PATCH /orders/{orderNo}: an allowed status move (docs/orders.md). The order is guarded by its
 * version; the customer's figures and the stats move by the difference in the same transaction,
 * with an `order.<status>` outbox event. A lost race re-reads and judges the move afresh.
 */
export const changeOrderStatus = async (auth: AuthContext, orderNo: string, patch: OrderPatch) => {
  const { merchantId } = auth;
  return retrying(async () => {
    const order = await getOrder(merchantId, orderNo);
    if (!order) throw new NotFoundError();
    if (!canTransition(order.status, patch.status)) {
      throw InvalidError.field('status', `The order cannot move from ${order.status} to ${patch.status}.`);
    }
    const at = formatTimestamp(now());
    const changes: Partial<OrderItem> = { status: patch.status };
    for (const field of ['paid_at', 'failed_at', 'refunded_at'] as const) if (patch[field]) changes[field] = patch[field];
    if (patch.metadata !== undefined) changes.metadata = patch.metadata;
    const after = rewriteOrder(merchantId, order, changes, at);

    // The customer and its MRR timeline in one request.
    const read = await customersWithTimelines<CustomerItem>(merchantId, [order.customer_id]);
    const customer = read.customers.get(order.customer_id);
    const timeline = read.timelines.get(order.customer_id)!;
    const ws = new WriteSet();
    addOrderWrite(ws, merchantId, order, after);
    if (customer) await addCustomerFigures(ws, merchantId, customer, [{ before: order, after }]);
    addAggregateDeltas(ws, merchantId, order, after);
    const presented = presentOrder(after, customer);
    addOutboxEvent(ws, merchantId, `order.${after.status}` as OrderEventType, presented, at);
    addTimelineChange(ws, merchantId, order.customer_id, timeline, orderTimeline(timeline.timeline, order.order_no, after, auth.reportingCurrency));
    await ws.commit();
    return presented;
  });
};
