import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { DEADLINE_MARGIN_MS, withDeadline } from '#lib/db/retry';
import type { EventDetail } from '#lib/outbox/relay';
import { logger } from '#lib/logger';
import { EVENT_TYPES, type EventType } from '#lib/outbox/store';
import { deliverTask, type AttemptOptions, type DeliveryTask, type TaskOutcome } from '#lib/webhooks/delivery';
import { parseTask, type DeliveryQueue } from '#lib/webhooks/queue';
import { endpointsReceiving } from '#lib/webhooks/store';
import { asFunction, WORKER_FUNCTIONS } from '#lib/shared/invocation';
import { processQueueBatch } from '#lib/shared/batch';
import { inOrderPerKey } from '#lib/shared/in-turn';

/**
 * The two SQS consumers of webhook delivery:
 *
 *   event bus ─rule─▶ events queue ─▶ fan-out ─▶ delivery queue (one task per endpoint) ─▶ delivery
 *
 * The fan-out turns each event into one task per enabled endpoint subscribed to its type; the
 * delivery consumer makes one attempt per task and either finishes it, postpones its message to
 * the next attempt of the schedule, or parks it in the dead-letter queue. Each task is its own
 * message (in its endpoint's message group, so SQS fair queues serve a quiet endpoint before a
 * noisy one's backlog), and a batch's tasks run at once, so one slow or failing endpoint never
 * delays or repeats another's deliveries (docs/webhooks.md). Both answer partial batch failures
 * (Powertools' batch processing: lib/shared/batch.ts): only the messages that failed come back.
 */

const KNOWN_TYPES = new Set<string>(EVENT_TYPES);

/** Not an error: the message is reported failed so the queue shows it again at the postponed time. */
class RetryLater extends Error {}

/** The event an EventBridge → SQS message carries (its `detail`); throws on anything else. */
export const eventOfMessage = (body: string): EventDetail => {
  const detail = (JSON.parse(body) as { detail?: EventDetail })?.detail;
  const valid =
    typeof detail?.id === 'string' &&
    typeof detail.merchant_id === 'string' &&
    typeof detail.created_at === 'string' &&
    KNOWN_TYPES.has(detail.type) &&
    detail.data !== null &&
    typeof detail.data === 'object';
  if (!valid) throw new Error('not a webhook event');
  return detail;
};

/** One task per enabled endpoint of the merchant subscribed to the event's type. */
export const tasksFor = async (event: EventDetail): Promise<DeliveryTask[]> => {
  const endpoints = await endpointsReceiving(event.merchant_id, event.type as EventType);
  const { id, type, created_at, data } = event;
  return endpoints.map((e) => ({ merchant_id: event.merchant_id, endpoint_id: e.id, event: { id, type, created_at, data } }));
};

/**
 * Runs the record handler over an SQS batch with Powertools' batch processing (lib/shared/batch.ts):
 * it parses the record's body once and runs `each` on it; a record that does not parse, or whose
 * `each` throws, is reported failed. Records of one group (`groupOf`) run one after another in
 * batch order, groups concurrently; without `groupOf` every record runs at once.
 */
const eachRecord = <P>(
  records: SQSRecord[],
  parse: (body: string) => P,
  groupOf: ((parsed: P) => string) | undefined,
  each: (r: SQSRecord, parsed: P) => Promise<void>,
): Promise<SQSBatchResponse> => {
  const fail = (r: SQSRecord, err: unknown): never => {
    if (!(err instanceof RetryLater)) logger.error('webhook message failed', { message_id: r.messageId, error: (err as Error).message });
    throw err;
  };
  const inOrder = inOrderPerKey();
  return processQueueBatch(records, async (r) => {
    let parsed: P;
    try {
      parsed = parse(r.body);
    } catch (err) {
      return fail(r, err);
    }
    // Handlers start in batch order (lib/shared/batch.ts), so a group's records queue up in it.
    const run = () => each(r, parsed).catch((err) => fail(r, err));
    return groupOf ? inOrder(groupOf(parsed), run) : run();
  });
};

/** The fan-out over a batch of events-queue messages. */
export const fanOutRecords = asFunction(
  WORKER_FUNCTIONS.webhookFanOut,
  (records: SQSRecord[], queue: DeliveryQueue): Promise<SQSBatchResponse> =>
    eachRecord(
      records,
      eventOfMessage,
      (event) => event.merchant_id,
      async (_r, event) => {
        const tasks = await tasksFor(event);
        if (tasks.length) await queue.send(tasks);
        logger.info('webhook event fanned out', {
          event_id: event.id,
          type: event.type,
          merchant_id: event.merchant_id,
          endpoints: tasks.length,
        });
      },
    ),
);

export type DeliveryOptions = AttemptOptions & {
  random?: () => number;
  /** Told each task's outcome (the local stack prints one line per attempt). */
  onOutcome?: (task: DeliveryTask, outcome: TaskOutcome) => void;
};

/**
 * The delivery consumer over a batch of delivery-queue messages. Every task of the batch is
 * attempted at once, each with its own full timeout: a slow endpoint neither waits behind its own
 * earlier tasks (whose timeouts would otherwise eat into the later ones') nor holds another's, and
 * the invocation lasts one attempt, not the sum of a batch's. A failed attempt with attempts left
 * is a reported failure whose message was postponed to the next attempt's time; the last failed
 * attempt parks the task and deletes the message.
 */
export const deliverRecords = asFunction(
  WORKER_FUNCTIONS.webhookDeliver,
  (records: SQSRecord[], queue: DeliveryQueue, opts: DeliveryOptions = {}): Promise<SQSBatchResponse> =>
    eachRecord(records, parseTask, undefined, async (r, task) => {
      const outcome = await deliverTask(task, opts);
      opts.onOutcome?.(task, outcome);
      const log = { event_id: task.event.id, type: task.event.type, endpoint_id: task.endpoint_id, merchant_id: task.merchant_id };
      if (outcome.action === 'done')
        return logger.info('webhook task done', { ...log, reason: outcome.reason, attempt: outcome.entry?.attempt });
      const { attempt, status, error } = outcome.entry;
      if (outcome.action === 'dead-letter') {
        await queue.deadLetter(task, `attempt ${attempt} failed: ${error ?? `HTTP ${status}`}`);
        return logger.warn('webhook task dead-lettered', { ...log, attempt, status, error });
      }
      await queue.postpone(r.receiptHandle, outcome.delaySeconds);
      logger.info('webhook attempt failed, retry scheduled', {
        ...log,
        attempt,
        status,
        error,
        retry_in_s: Math.round(outcome.delaySeconds),
      });
      throw new RetryLater(`attempt ${attempt} failed`);
    }),
);

/** A consumer as a Lambda handler for an SQS event source with ReportBatchItemFailures. */
export const sqsHandler =
  (consume: (records: SQSRecord[]) => Promise<SQSBatchResponse>) =>
  async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
    logger.addContext(context);
    return withDeadline(Date.now() + context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS, () => consume(event.Records ?? []));
  };
