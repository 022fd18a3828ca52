import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
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
  readonly deadLetterQueue: Queue;
  readonly deadLetterAlarm: Alarm;
  readonly iteratorAgeAlarm: Alarm;

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

    this.deadLetterAlarm = new Alarm(this, 'DeadLetterAlarm', {
      alarmDescription: 'Outbox events the relay gave up on (shard and sequence range in the queue): replay them',
      metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: 'Maximum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    this.iteratorAgeAlarm = new Alarm(this, 'IteratorAgeAlarm', {
      alarmDescription: 'The outbox relay is more than 5 minutes behind the table stream: events are late',
      metric: this.function.metric('IteratorAge', { period: Duration.minutes(1), statistic: 'Maximum' }),
      threshold: 5 * 60 * 1000,
      evaluationPeriods: 5,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
  }
}
