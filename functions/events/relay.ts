import { eventBridgePublisher } from '#lib/events/eventbridge';
import { createRelayHandler } from '#lib/events/relay';

/**
 * The outbox relay: the table's stream (INSERTs of outbox items, filtered by the event source
 * mapping) → PutEvents on EVENT_BUS_NAME. Answers partial batch failures (lib/events/relay.ts).
 */
export const handler = createRelayHandler(eventBridgePublisher());
