import { eventBridgePublisher } from '#lib/outbox/eventbridge';
import { createRelayHandler } from '#lib/outbox/relay';

/**
 * The outbox relay: the table's stream (INSERTs of outbox items, filtered by the event source
 * mapping) → PutEvents on EVENT_BUS_NAME. Answers partial batch failures (lib/outbox/relay.ts).
 */
export const handler = createRelayHandler(eventBridgePublisher());
