import { randomBytes } from 'node:crypto';
import { keys } from '#lib/db/keys';
import { itemAbsent, type WriteSet } from '#lib/db/writes';
import type { Order } from '#lib/orders/model';

/**
 * Webhook events are recorded as outbox items in the order's own transaction (an order committed
 * is an event recorded); the relay publishes them to EventBridge from the table's stream.
 */
export type OrderEventType = 'order.created' | 'order.paid' | 'order.failed' | 'order.refunded' | 'order.cancelled';

export const OUTBOX_ENTITY = 'outbox';
export const OUTBOX_TTL_SECONDS = 3 * 24 * 3600;

export const newEventId = (): string => `evt_${randomBytes(12).toString('hex')}`;

export const addOutboxEvent = (ws: WriteSet, merchantId: string, type: OrderEventType, order: Order, at: string) => {
  const id = newEventId();
  ws.put(
    'outbox',
    {
      ...keys.outbox(merchantId, at, id),
      id,
      type,
      merchant_id: merchantId,
      created_at: at,
      // JSON text: the order's metadata may hold values a DynamoDB map cannot.
      data: JSON.stringify({ object: order }),
      // What the stream's event-source filter matches, so rate counters and data writes never reach the relay.
      entity: OUTBOX_ENTITY,
      // Published within seconds by the relay; kept a few days for replay, then expired by TTL.
      expires_at: Math.floor(Date.parse(at) / 1000) + OUTBOX_TTL_SECONDS,
    },
    itemAbsent,
  );
  return id;
};
