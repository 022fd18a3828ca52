import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, type IEventBus } from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption, type QueueProps } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { EVENT_TYPES } from '#lib/outbox/store';
import { DELIVERY_FUNCTION_TIMEOUT_SECONDS } from '#lib/webhooks/schedule';
import { FAN_OUT_FUNCTION_TIMEOUT_SECONDS, WEBHOOK_QUEUES } from '#lib/webhooks/queue';
import { WEBHOOK_DELIVER_HANDLER, WEBHOOK_FAN_OUT_HANDLER } from '../paths.ts';
import { webhookEndpointListPartition, keys } from '#lib/db/keys';
import { ApiFunction, type KeyedGrant, MERCHANT_ID_IAM_PATTERN, SERVICE_NAME, WEBHOOK_WRITES } from './api-function.ts';

/**
 * What the fan-out reads (lib/webhooks/store.ts `endpointsReceiving`): the endpoint list's
 * partition (`M#<m>#WEBHOOK_LIST`, Query) and the endpoint count's (`M#<m>#TOTALS#000`,
 * BatchGetItem; the partition also holds shard 0 of the other lists' totals, which IAM cannot tell
 * apart by sort key).
 */
/** The delivery worker's auto-disable also rewrites the endpoint's list entry (`M#<m>#WEBHOOK_LIST`). */
export const DISABLED_LIST_ENTRY: KeyedGrant = { action: 'PutItem', leadingKeys: [webhookEndpointListPartition(MERCHANT_ID_IAM_PATTERN)] };

export const FAN_OUT_READS: KeyedGrant[] = [
  { action: 'Query', leadingKeys: [webhookEndpointListPartition(MERCHANT_ID_IAM_PATTERN)] },
  { action: 'BatchGetItem', leadingKeys: [keys.totals(MERCHANT_ID_IAM_PATTERN, 'WEBHOOK_ENDPOINTS', 0).pk] },
];

/** The rule's name (unique per bus; the bus is per stage). Fixed, so its metrics can name it. */
export const WEBHOOK_RULE_NAME = 'webhook-delivery';

/**
 * THE pattern of the events webhooks deliver, as EventBridge reads it: the service's events of the
 * known types. The rule below and test/outbox/webhook-queues.test.ts (against moto)
 * both use this object.
 */
export const WEBHOOK_EVENT_PATTERN = { source: [SERVICE_NAME], 'detail-type': [...EVENT_TYPES] };

/** Both consumers: batches of up to 10 messages, answered with partial batch failures. */
export const WEBHOOK_CONSUMER_SOURCE = { batchSize: 10, reportBatchItemFailures: true } as const;

/**
 * The most invocations each SQS mapping runs at once (docs/operations.md: Concurrency and throttling). A backlog (a
 * receiver down for hours, then back) must not take the account's Lambda concurrency from the API:
 * the mapping stops polling at this cap, and messages wait in the queue (retention 4 / 14 days)
 * instead of being throttled back into it, which reserved concurrency would do (each throttle
 * counting a receive towards the dead-letter queue). Delivery: 20 invocations × a batch of 10
 * attempted at once = 200 attempts in flight, so at least 20 deliveries a second even when every
 * receiver takes its whole 10 s; this is the knob that scales it (docs/webhooks.md, *Capacity*).
 */
export const WEBHOOK_CONSUMER_MAX_CONCURRENCY = { fanOut: 5, delivery: 20 } as const;

/**
 * How long each queue keeps a message (SQS counts from the first send; changing the visibility
 * does not renew it):
 * - deliveries, 4 days: a task lives through the retry schedule, 27.6 h nominal and 30.4 h with
 *   every pause at +10 % jitter, plus its attempts; 4 days leave a day or more for a consumer
 *   outage or a backlog. A task the schedule has not finished must never expire silently.
 * - events, 14 days (the maximum): an event is fanned out within seconds; if the fan-out is broken,
 *   the age alarm fires after 5 minutes and nothing expires while it is fixed.
 * - dead-letter queues, 14 days (the maximum): time to look at and redrive what they hold.
 */
export const WEBHOOK_RETENTION = {
  events: Duration.days(14),
  deliveries: Duration.days(4),
  deadLetters: Duration.days(14),
} as const;

export type WebhookDeliveryProps = {
  eventBus: IEventBus;
  table: ITable;
  /** The key webhook signing secrets are encrypted with (the stack's WebhookSecretsKey). */
  secretsKey: IKey;
  projectRoot: string;
  /** Configuration passed to both functions (STAGE, LOG_LEVEL). */
  environment?: Record<string, string>;
};

/**
 * Webhook delivery on AWS (docs/webhooks.md; lib/webhooks/consumers.ts is the code):
 *
 *   bus ─rule─▶ events queue ─▶ fan-out function ─▶ deliveries queue (one task per endpoint) ─▶ delivery function
 *
 * The retry schedule lives in the deliveries queue: a failed attempt sets its message's visibility
 * to the next pause (ChangeMessageVisibility, at most 12 h) and reports it failed; after the last
 * attempt the consumer sends the task to the delivery dead-letter queue itself. Every queue is
 * encrypted (SQS-managed keys: EventBridge can send to them without a KMS grant), TLS-only, and
 * backed by a dead-letter queue; their alarms are in infra/constructs/monitoring.ts.
 */
export class WebhookDelivery extends Construct {
  readonly rule: Rule;
  readonly eventsQueue: Queue;
  readonly eventsDeadLetterQueue: Queue;
  /** Where EventBridge puts events it could not send to the events queue (after its own retries). */
  readonly ruleDeadLetterQueue: Queue;
  readonly deliveryQueue: Queue;
  readonly deliveryDeadLetterQueue: Queue;
  readonly fanOutFunction: ApiFunction;
  readonly deliveryFunction: ApiFunction;

  constructor(scope: Construct, id: string, props: WebhookDeliveryProps) {
    super(scope, id);
    const queue = (queueId: string, extra: QueueProps) =>
      new Queue(this, queueId, { encryption: QueueEncryption.SQS_MANAGED, enforceSSL: true, ...extra });

    this.eventsDeadLetterQueue = queue('EventsDeadLetterQueue', { retentionPeriod: WEBHOOK_RETENTION.deadLetters });
    this.eventsQueue = queue('EventsQueue', {
      retentionPeriod: WEBHOOK_RETENTION.events,
      visibilityTimeout: Duration.seconds(WEBHOOK_QUEUES.events.visibilityTimeoutSeconds),
      deadLetterQueue: { queue: this.eventsDeadLetterQueue, maxReceiveCount: WEBHOOK_QUEUES.events.maxReceiveCount },
    });
    this.ruleDeadLetterQueue = queue('RuleDeadLetterQueue', { retentionPeriod: WEBHOOK_RETENTION.deadLetters });
    this.deliveryDeadLetterQueue = queue('DeliveryDeadLetterQueue', { retentionPeriod: WEBHOOK_RETENTION.deadLetters });
    this.deliveryQueue = queue('DeliveryQueue', {
      retentionPeriod: WEBHOOK_RETENTION.deliveries,
      visibilityTimeout: Duration.seconds(WEBHOOK_QUEUES.deliveries.visibilityTimeoutSeconds),
      deadLetterQueue: { queue: this.deliveryDeadLetterQueue, maxReceiveCount: WEBHOOK_QUEUES.deliveries.maxReceiveCount },
    });

    this.rule = new Rule(this, 'Rule', {
      ruleName: WEBHOOK_RULE_NAME,
      description: 'Webhook events → the webhook events queue',
      eventBus: props.eventBus,
      eventPattern: { source: WEBHOOK_EVENT_PATTERN.source, detailType: WEBHOOK_EVENT_PATTERN['detail-type'] },
    });
    // EventBridge's defaults, written out: retried for 24 hours, then parked in the rule's DLQ.
    // The target adds the queue policies that let this rule (aws:SourceArn) send to both queues.
    this.rule.addTarget(
      new SqsQueue(this.eventsQueue, { deadLetterQueue: this.ruleDeadLetterQueue, retryAttempts: 185, maxEventAge: Duration.hours(24) }),
    );

    const fn = (fnId: string, handlerPath: string, description: string, timeoutSeconds: number, environment: Record<string, string>) =>
      new ApiFunction(this, fnId, {
        projectRoot: props.projectRoot,
        handlerPath,
        description: `${description} (${handlerPath})`,
        timeout: Duration.seconds(timeoutSeconds),
        environment: { ...props.environment, ...environment },
      });

    // Fan-out (store.ts endpointsReceiving): a strongly consistent Query of the merchant's endpoint
    // list, the endpoint count (BatchGetItem of its one item), gsi1 for endpoints from before list
    // entries; queues tasks. No write. Keyed to those two partitions (`FAN_OUT_READS`).
    this.fanOutFunction = fn(
      'FanOutFunction',
      WEBHOOK_FAN_OUT_HANDLER,
      'webhook fan-out: events queue → one task per endpoint',
      FAN_OUT_FUNCTION_TIMEOUT_SECONDS,
      {
        WEBHOOK_DELIVERY_QUEUE_URL: this.deliveryQueue.queueUrl,
      },
    ).grantTableActions(props.table, { keyed: FAN_OUT_READS, indexes: { gsi1: ['Query'] } });
    this.fanOutFunction.addToRolePolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.deliveryQueue.queueArn] }));
    // Grants Receive/Delete/ChangeMessageVisibility/GetQueueAttributes/GetQueueUrl on the events queue.
    this.fanOutFunction.addEventSource(
      new SqsEventSource(this.eventsQueue, { ...WEBHOOK_CONSUMER_SOURCE, maxConcurrency: WEBHOOK_CONSUMER_MAX_CONCURRENCY.fanOut }),
    );

    // Delivery (delivery.ts deliverTask): one BatchGetItem (endpoint, state, health), one
    // TransactWriteItems (Put log entry, Update state and health, or Delete health), an UpdateItem
    // of the endpoint and a Put of its list entry when it auto-disables it: writes on webhook items only (it calls
    // merchant-chosen URLs). No Query, no index. kms:Decrypt for the secrets.
    this.deliveryFunction = fn(
      'DeliveryFunction',
      WEBHOOK_DELIVER_HANDLER,
      'webhook delivery: one signed attempt per task',
      DELIVERY_FUNCTION_TIMEOUT_SECONDS,
      {
        WEBHOOK_DELIVERY_QUEUE_URL: this.deliveryQueue.queueUrl,
        WEBHOOK_DELIVERY_DLQ_URL: this.deliveryDeadLetterQueue.queueUrl,
        WEBHOOK_KMS_KEY_ID: props.secretsKey.keyArn,
      },
    ).grantTableActions(props.table, { table: ['BatchGetItem'], keyed: [...WEBHOOK_WRITES, DISABLED_LIST_ENTRY] });
    this.deliveryFunction.addToRolePolicy(new PolicyStatement({ actions: ['kms:Decrypt'], resources: [props.secretsKey.keyArn] }));
    this.deliveryFunction.addToRolePolicy(
      new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.deliveryDeadLetterQueue.queueArn] }),
    );
    // Includes sqs:ChangeMessageVisibility on the deliveries queue: how a failed attempt is postponed.
    this.deliveryFunction.addEventSource(
      new SqsEventSource(this.deliveryQueue, { ...WEBHOOK_CONSUMER_SOURCE, maxConcurrency: WEBHOOK_CONSUMER_MAX_CONCURRENCY.delivery }),
    );
  }
}
