import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule, type IEventBus } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { EventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { SWEEP_FUNCTION_TIMEOUT_SECONDS, SWEEP_INTERVAL_MINUTES } from '#lib/outbox/sweeper';
import { OUTBOX_EVENT_PREFIX, OUTBOX_PREFIX } from '#lib/db/keys';
import { OUTBOX_ENTITY } from '#lib/outbox/store';
import { OUTBOX_RELAY_HANDLER, OUTBOX_SWEEPER_HANDLER } from '../paths.ts';
import { ApiFunction, SERVICE_NAME } from './api-function.ts';
import { consumeTableStream, type StreamMappingSettings } from './stream-consumer.ts';

/**
 * How Lambda feeds the relay. Up to 100 records or 1 s per invocation; one batch in flight per
 * shard (ordered); a batch whose events still fail is retried from the first failed record
 * (ReportBatchItemFailures), bisected on a function error, without limit (-1) and with no maximum
 * record age: the shard waits, in order, for as long as EventBridge is down, until its records
 * leave the stream (24 h). Only then does a batch's shard and sequence range reach the dead-letter
 * queue; its events are still in the table, pending, and the sweeper publishes them.
 */
export const OUTBOX_RELAY_MAPPING: StreamMappingSettings = {
  batchSize: 100,
  maxBatchingWindow: Duration.seconds(1),
  retryAttempts: -1,
  parallelizationFactor: 1,
};

/** The items the relay and the sweeper stamp (marks), and the event items the sweeper reads: `LeadingKeys` patterns. */
export const OUTBOX_MARK_PK_PATTERNS = [`${OUTBOX_PREFIX}*`];
export const OUTBOX_EVENT_PK_PATTERNS = [`${OUTBOX_EVENT_PREFIX}*`];

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
 * the bus, then the events' marks stamped published. The function may read the table's stream,
 * put events on the bus, send to its dead-letter queue and update outbox marks, nothing else.
 *
 * With it, the sweeper: a function run every SWEEP_INTERVAL_MINUTES by a schedule rule, which
 * publishes events still pending past the grace period. It may list merchants (gsi1) and pending
 * marks (gsi4), read marks and event items, stamp marks and put events on the bus.
 */
export class OutboxRelay extends Construct {
  readonly function: ApiFunction;
  readonly sweeper: ApiFunction;
  readonly sweepSchedule: Rule;
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
    // The stamp is an UpdateItem of marks only; its key grants also decrypt the stream's records.
    this.function.grantTableActions(props.table, { keyed: [{ action: 'UpdateItem', leadingKeys: OUTBOX_MARK_PK_PATTERNS }] });
    props.eventBus.grantPutEventsTo(this.function);

    this.sweeper = new ApiFunction(this, 'SweeperFunction', {
      projectRoot: props.projectRoot,
      handlerPath: OUTBOX_SWEEPER_HANDLER,
      description: `outbox sweeper: pending events → event bus (${OUTBOX_SWEEPER_HANDLER})`,
      timeout: Duration.seconds(SWEEP_FUNCTION_TIMEOUT_SECONDS),
      // A failed run is not retried: the next scheduled run finds the same pending marks.
      retryAttempts: 0,
      environment: { ...props.environment, EVENT_BUS_NAME: props.eventBus.eventBusName, EVENT_SOURCE: SERVICE_NAME },
    }).grantTableActions(props.table, {
      keyed: [
        { action: 'BatchGetItem', leadingKeys: [...OUTBOX_MARK_PK_PATTERNS, ...OUTBOX_EVENT_PK_PATTERNS] },
        { action: 'UpdateItem', leadingKeys: OUTBOX_MARK_PK_PATTERNS },
      ],
      indexes: { gsi1: ['Query'], gsi4: ['Query'] },
    });
    props.eventBus.grantPutEventsTo(this.sweeper);
    this.sweepSchedule = new Rule(this, 'SweepSchedule', {
      description: 'Runs the outbox sweeper: events recorded but not published past the grace period',
      schedule: Schedule.rate(Duration.minutes(SWEEP_INTERVAL_MINUTES)),
      targets: [new LambdaFunction(this.sweeper, { retryAttempts: 0 })],
    });

    // Stream reads, the dead-letter queue (the shard and sequence range of batches given up on, for
    // replay) and the mapping. Its filter lets through outbox INSERTs only (lib/outbox/relay.ts
    // `isOutboxInsert` is the same test, applied again by the function and by the local poller):
    // rate counters, data writes, updates and TTL deletions never invoke the relay.
    const stream = consumeTableStream(this, { fn: this.function, streamArn, entity: OUTBOX_ENTITY, settings: OUTBOX_RELAY_MAPPING });
    this.deadLetterQueue = stream.deadLetterQueue;
    this.mapping = stream.mapping;
  }
}
