/** Order webhook event types; the outbox itself is `lib/outbox.ts`. */
export type OrderEventType = Extract<import('#lib/outbox').EventType, `order.${string}`>;
export { addOutboxEvent } from '#lib/outbox';
