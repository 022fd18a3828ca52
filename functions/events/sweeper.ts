import { eventBridgePublisher } from '#lib/events/eventbridge';
import { createSweeperHandler } from '#lib/events/sweeper';

/**
 * The outbox sweeper, on a schedule: publishes events still pending past the grace period (their
 * stream record never reached the bus) and stamps them published (lib/events/sweeper.ts).
 */
export const handler = createSweeperHandler(eventBridgePublisher());
