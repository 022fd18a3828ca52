import { ChangeMessageVisibilityCommand, SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { config } from '#lib/config';
import { traced } from '#lib/observability';
import { resendingFailures } from '#lib/db/retry';
import { chunkBy } from '#lib/shared/chunks';
import { DELIVERY_FUNCTION_TIMEOUT_SECONDS } from '#lib/webhooks/schedule';
import type { DeliveryTask } from '#lib/webhooks/delivery';

/**
 * The delivery queue as the webhook consumers use it: SQS in AWS (and against moto), an in-memory
 * queue in the local stack (infra/local/local-queue.ts). Retries are the queue's: a failed attempt
 * makes its message visible again after the pause of the schedule (`postpone`, SQS
 * ChangeMessageVisibility, at most 12 hours), and a task out of attempts is parked (`deadLetter`).
 */
export type DeliveryQueue = {
  /** Queues tasks; resolves once every one is accepted, else throws. */
  send(tasks: DeliveryTask[]): Promise<void>;
  /** The received message reappears after `seconds` (instead of the queue's visibility timeout). */
  postpone(receiptHandle: string, seconds: number): Promise<void>;
  /** Parks a task that used its last attempt in the dead-letter queue, with why. */
  deadLetter(task: DeliveryTask, reason: string): Promise<void>;
};

/** SendMessageBatch takes 10 messages and 256 KiB a call; ChangeMessageVisibility at most 12 hours. */
export const SEND_BATCH_MAX_ENTRIES = 10;
export const SEND_BATCH_MAX_BYTES = 256 * 1024;
/** SQS caps a message's visibility at 12 hours counted from its receipt: keep 5 minutes for the attempt before the change. */
export const MAX_VISIBILITY_SECONDS = 12 * 3600 - 300;
/** The fan-out function's timeout: one Query and a few SendMessageBatch calls per event. */
export const FAN_OUT_FUNCTION_TIMEOUT_SECONDS = 10;

/**
 * The queue settings the deployed queues (infra/constructs/webhook-delivery.ts) and the local ones
 * (infra/local/webhooks.ts) share. A delivery message is received once per attempt (9) and its
 * visibility set by the consumer in between; the redrive after 20 receives only catches messages
 * that crash or time out their function again and again. An event message is fanned out once; 5
 * receives are plenty of retries for a throttled Query or SendMessageBatch. Visibility timeouts are
 * 6 × the consuming function's timeout (AWS's advice for Lambda event sources: room for retries of
 * a throttled invocation).
 */
export const WEBHOOK_QUEUES = {
  events: { maxReceiveCount: 5, visibilityTimeoutSeconds: 6 * FAN_OUT_FUNCTION_TIMEOUT_SECONDS },
  deliveries: { maxReceiveCount: 20, visibilityTimeoutSeconds: 6 * DELIVERY_FUNCTION_TIMEOUT_SECONDS },
} as const;

/** Calls per group of tasks before `send` gives up (the consumer then fails its message: SQS retries it). */
const SEND_ATTEMPTS = 3;

export const taskBody = (task: DeliveryTask): string => JSON.stringify(task);

/**
 * A task's message group: its endpoint. On a standard queue this makes it a fair queue: when one
 * endpoint's tasks pile up in flight (a slow receiver, a burst), SQS hands out other endpoints'
 * messages first, so they are not left waiting behind the backlog. Order and retries are unchanged.
 */
export const taskGroup = (task: DeliveryTask): string => `${task.merchant_id}#${task.endpoint_id}`;

/** A delivery task from a message body; throws on anything else. */
export const parseTask = (body: string): DeliveryTask => {
  const t = JSON.parse(body) as DeliveryTask;
  const e = t?.event;
  const valid =
    typeof t?.merchant_id === 'string' &&
    Number.isSafeInteger(t.endpoint_id) &&
    typeof e?.id === 'string' &&
    typeof e.type === 'string' &&
    typeof e.created_at === 'string' &&
    e.data !== null &&
    typeof e.data === 'object';
  if (!valid) throw new Error('not a webhook delivery task');
  return t;
};

export const sqsClient = (endpoint?: string): SQSClient =>
  traced(
    new SQSClient({
      region: config.region(),
      // The consumers retry (below, and through the queue itself), like every other retry here.
      maxAttempts: 1,
      ...(endpoint ? { endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    }),
  );

/**
 * The delivery queue on SQS: `queueUrl` for tasks, `deadLetterUrl` for tasks out of attempts (the
 * fan-out only sends, so it has none, and no permission on that queue).
 */
export const sqsDeliveryQueue = (opts: { queueUrl: string; deadLetterUrl?: string; client?: SQSClient }): DeliveryQueue => {
  let client = opts.client;
  const sqs = () => (client ??= sqsClient());
  return {
    async send(tasks) {
      const entries = tasks.map((task, i) => ({ Id: String(i), MessageBody: taskBody(task), MessageGroupId: taskGroup(task) }));
      for (const chunk of chunkBy(entries, SEND_BATCH_MAX_ENTRIES, SEND_BATCH_MAX_BYTES, (e) => Buffer.byteLength(e.MessageBody))) {
        const { failures } = await resendingFailures(
          chunk,
          async (pending) => {
            try {
              const out = await sqs().send(new SendMessageBatchCommand({ QueueUrl: opts.queueUrl, Entries: pending }));
              const failedIds = new Set((out.Failed ?? []).map((f) => f.Id!));
              return pending.filter((e) => failedIds.has(e.Id)).map((item) => ({ item }));
            } catch (err) {
              return pending.map((item) => ({ item, err }));
            }
          },
          { maxAttempts: SEND_ATTEMPTS },
        );
        if (failures.length) throw (failures[0] as { err?: unknown }).err ?? new Error(`${failures.length} delivery task(s) not queued`);
      }
    },
    async postpone(receiptHandle, seconds) {
      const VisibilityTimeout = Math.min(MAX_VISIBILITY_SECONDS, Math.max(0, Math.ceil(seconds)));
      await sqs().send(new ChangeMessageVisibilityCommand({ QueueUrl: opts.queueUrl, ReceiptHandle: receiptHandle, VisibilityTimeout }));
    },
    async deadLetter(task, reason) {
      if (!opts.deadLetterUrl) throw new Error('this delivery queue has no dead-letter queue');
      await sqs().send(
        new SendMessageCommand({
          QueueUrl: opts.deadLetterUrl,
          MessageBody: taskBody(task),
          MessageAttributes: { reason: { DataType: 'String', StringValue: reason } },
        }),
      );
    },
  };
};
