import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { EventSourceMapping, FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { OUTBOX_ENTITY } from '#lib/outbox';
import { ApiFunction, SERVICE_NAME } from './api-function.ts';

export const OUTBOX_RELAY_HANDLER = 'functions/events/relay.ts';

/** The stream actions the relay's event source mapping needs, on the table's stream only. */
export const STREAM_READ_ACTIONS = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'];

/**
 * How Lambda feeds the relay. Up to 100 records or 1 s per invocation; one batch in flight per
 * shard (ordered); a batch whose events still fail is retried from the first failed record
 * (ReportBatchItemFailures), bisected on a function error, at most 10 times, then its shard and
 * sequence range go to the dead-letter queue (the outbox items themselves stay 3 days, by TTL).
 */
export const OUTBOX_RELAY_MAPPING = {
  batchSize: 100,
  maxBatchingWindow: Duration.seconds(1),
  retryAttempts: 10,
  maxRecordAge: Duration.hours(24),
  parallelizationFactor: 1,
} as const;

/**
 * The mapping's filter: INSERTs of outbox items only (lib/events/relay.ts `isOutboxInsert` is the
 * same test, applied again by the function and by the local poller). Rate counters, data writes,
 * updates and TTL deletions never invoke the relay.
 */
export const outboxStreamFilter = () =>
  FilterCriteria.filter({ eventName: FilterRule.isEqual('INSERT'), dynamodb: { NewImage: { entity: { S: FilterRule.isEqual(OUTBOX_ENTITY) } } } });

export type OutboxRelayProps = {
  /** The table; its stream must be enabled (NEW_IMAGE). */
  table: ITable;
  eventBus: IEventBus;
  projectRoot: string;
  /** Configuration passed to the function (STAGE, LOG_LEVEL). */
  environment?: Record<string, string>;
};

/**
 * The publishing half of the transactional outbox: table stream → relay function → PutEvents on
 * the bus. The function may read the table's stream, put events on the bus and send to its
 * dead-letter queue, and nothing else: no action on the table or its items.
 */
export class OutboxRelay extends Construct {
  readonly function: ApiFunction;
  readonly mapping: EventSourceMapping;
  /** Its depth and the relay's iterator age are alarmed in infra/constructs/monitoring.ts. */
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: OutboxRelayProps) {
    super(scope, id);
    const streamArn = props.table.tableStreamArn;
    if (!streamArn) throw new Error('the outbox relay needs the table stream (NEW_IMAGE) enabled');

    this.function = new ApiFunction(this, 'Function', {
      projectRoot: props.projectRoot,
      handlerPath: OUTBOX_RELAY_HANDLER,
      description: `outbox relay: table stream → event bus (${OUTBOX_RELAY_HANDLER})`,
      environment: { ...props.environment, EVENT_BUS_NAME: props.eventBus.eventBusName, EVENT_SOURCE: SERVICE_NAME },
    });
    this.function.addToRolePolicy(new PolicyStatement({ actions: STREAM_READ_ACTIONS, resources: [streamArn] }));
    // Stream records are encrypted under the table's key.
    this.function.grantTableKey(props.table, false);
    props.eventBus.grantPutEventsTo(this.function);

    // Holds the shard and sequence range of batches given up on (Lambda's on-failure record), for replay.
    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });

    this.mapping = new EventSourceMapping(this, 'StreamMapping', {
      target: this.function,
      eventSourceArn: streamArn,
      startingPosition: StartingPosition.TRIM_HORIZON,
      ...OUTBOX_RELAY_MAPPING,
      bisectBatchOnError: true,
      reportBatchItemFailures: true,
      // Grants the function sqs:SendMessage (and GetQueueAttributes, GetQueueUrl) on this queue.
      onFailure: new SqsDlq(this.deadLetterQueue),
      filters: [outboxStreamFilter()],
    });
  }
}
