import { randomUUID } from 'node:crypto';
import { deliverRecords, fanOutRecords, sqsHandler, type DeliveryOptions } from '#lib/webhooks/consumers';
import { DELIVERY_FUNCTION_TIMEOUT_SECONDS } from '#lib/webhooks/schedule';
import { taskBody, WEBHOOK_QUEUES, type DeliveryQueue } from '#lib/webhooks/queue';
import { EVENT_TYPES } from '#lib/outbox/store';
import type { LocalBus } from './local-bus.ts';
import { LocalQueue } from './local-queue.ts';
import { lambdaContext } from './server.ts';

/**
 * `npm start`'s webhook delivery: the deployed pipeline (bus rule → events queue → fan-out →
 * delivery queue → delivery, infra/constructs/webhook-delivery.ts) with the local bus and two
 * in-memory queues in place of EventBridge and SQS, invoking the same consumers. Deliveries go to
 * the registered URLs for real, on the real retry schedule (WEBHOOK_RETRY_DELAYS_SECONDS shortens it).
 */
export const startLocalWebhooks = (bus: LocalBus, opts: { log?: (line: string) => void } & Pick<DeliveryOptions, 'resolver'> = {}) => {
  const log = opts.log ?? (() => undefined);
  const context = (name: string) => () => lambdaContext(name, randomUUID(), Date.now(), DELIVERY_FUNCTION_TIMEOUT_SECONDS * 1000);
  const deliveries = new LocalQueue('webhook-deliveries', {
    // As the deployed queue: longer than an invocation; retries set their own visibility.
    ...WEBHOOK_QUEUES.deliveries,
    context: context('webhookDelivery'),
    onDeadLetter: (body, reason) => log(`webhook task dead-lettered (${reason}): ${body.slice(0, 200)}`),
  });
  const deadLetters: { task: unknown; reason: string }[] = [];
  const queue: DeliveryQueue = {
    send: async (tasks) => {
      for (const t of tasks) deliveries.send(taskBody(t));
    },
    postpone: async (receiptHandle, seconds) => deliveries.changeVisibility(receiptHandle, seconds),
    deadLetter: async (task, reason) => {
      deadLetters.push({ task, reason });
      log(`webhook ${task.event.type} ${task.event.id} → endpoint ${task.endpoint_id}: parked in the dead-letter list (${reason})`);
    },
  };
  const events = new LocalQueue('webhook-events', {
    ...WEBHOOK_QUEUES.events,
    context: context('webhookFanOut'),
    onDeadLetter: (body, reason) => log(`webhook event dead-lettered (${reason}): ${body.slice(0, 200)}`),
  });
  events.consume(sqsHandler((records) => fanOutRecords(records, queue)));
  deliveries.consume(
    sqsHandler((records) =>
      deliverRecords(records, queue, {
        resolver: opts.resolver,
        onOutcome: (task, outcome) => {
          const e = outcome.entry;
          const what = e
            ? `attempt ${e.attempt}: ${e.status ?? e.error} (${e.duration_ms} ms)`
            : outcome.action === 'done'
              ? outcome.reason
              : '';
          const next = outcome.action === 'retry' ? `, next in ${Math.round(outcome.delaySeconds)} s` : '';
          log(`webhook ${task.event.type} ${task.event.id} → endpoint ${task.endpoint_id}: ${what}${next}`);
        },
      }),
    ),
  );
  // The bus rule: every webhook event of the service goes to the events queue, as the EventBridge → SQS target does.
  const WEBHOOK_TYPES = new Set<string>(EVENT_TYPES);
  const unsubscribe = bus.subscribe((event) => {
    if (WEBHOOK_TYPES.has(String(event['detail-type']))) void events.send(JSON.stringify(event));
  });
  return {
    events,
    deliveries,
    deadLetters,
    /** Resolves when both queues are empty and idle. */
    drained: async () => {
      for (;;) {
        await events.drained();
        await deliveries.drained();
        if (!events.depth && !deliveries.depth) return;
      }
    },
    stop: async () => {
      unsubscribe();
      await Promise.all([events.stop(), deliveries.stop()]);
    },
  };
};
