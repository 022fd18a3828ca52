import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { config } from '#lib/config';
import { traced } from '#lib/observability';
import type { Publish } from '#lib/outbox/relay';

/**
 * An EventBridge client for the relay: AWS, or an emulator at EVENTBRIDGE_ENDPOINT (moto, locally
 * and in tests). The SDK does not retry: the relay sends failed entries again itself (a whole
 * failed call is a failure of each of its entries), like every other retry in this code base.
 */
export const eventBridgeClient = (endpoint = config.eventBridgeEndpoint()): EventBridgeClient =>
  traced(
    new EventBridgeClient({
      region: config.region(),
      maxAttempts: 1,
      ...(endpoint ? { endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    }),
  );

/** PutEvents through `client` (created on first use from the environment unless given). */
export const eventBridgePublisher = (client?: EventBridgeClient): Publish => {
  let c = client;
  return (entries) => (c ??= eventBridgeClient()).send(new PutEventsCommand({ Entries: entries }));
};
