import { eventBridgePublisher } from '#lib/outbox/eventbridge';
import { createSweeperHandler } from '#lib/outbox/sweeper';

/**
 * The outbox sweeper, on a schedule: publishes events still pending past the grace period (their
 * stream record never reached the bus) and stamps them published (lib/outbox/sweeper.ts).
 */
export const handler = createSweeperHandler(eventBridgePublisher());
