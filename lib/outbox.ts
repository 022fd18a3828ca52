import { randomBytes } from 'node:crypto';
import { keys } from '#lib/db/keys';
import { itemAbsent, type WriteSet } from '#lib/db/writes';

/**
 * Webhook events (decisions §8) are recorded as outbox items in the same transaction as the change
 * they announce (a change committed is an event recorded); the relay publishes them to EventBridge
 * from the table's stream, filtered on `entity`.
 */
export const EVENT_TYPES = [
  'order.created',
  'order.paid',
  'order.failed',
  'order.refunded',
  'order.cancelled',
  'subscription.created',
  'subscription.updated',
  'subscription.paused',
  'subscription.reactivated',
  'subscription.cancelled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const OUTBOX_ENTITY = 'outbox';
export const OUTBOX_TTL_SECONDS = 3 * 24 * 3600;

export const newEventId = (): string => `evt_${randomBytes(12).toString('hex')}`;

/** Adds an outbox event carrying `object` exactly as the API returns it. */
export const addOutboxEvent = (ws: WriteSet, merchantId: string, type: EventType, object: unknown, at: string): string => {
  const id = newEventId();
  const ordinal = ws.tags().filter((t) => t === 'outbox').length;
  ws.put(
    'outbox',
    {
      ...keys.outbox(merchantId, at, id, ordinal),
      id,
      type,
      merchant_id: merchantId,
      created_at: at,
      // JSON text: an object's metadata may hold values a DynamoDB map cannot.
      data: JSON.stringify({ object }),
      // What the stream's event-source filter matches, so rate counters and data writes never reach the relay.
      entity: OUTBOX_ENTITY,
      // Published within seconds by the relay; kept a few days for replay, then expired by TTL.
      expires_at: Math.floor(Date.parse(at) / 1000) + OUTBOX_TTL_SECONDS,
    },
    itemAbsent,
  );
  return id;
};
