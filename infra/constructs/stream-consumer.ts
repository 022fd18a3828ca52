import { Duration } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { EventSourceMapping, FilterCriteria, FilterRule, StartingPosition, type IFunction } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

/** The stream actions a stream consumer's event source mapping needs, on the table's stream only. */
export const STREAM_READ_ACTIONS = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'];

/** A stream mapping's filter: INSERTs of items whose `entity` attribute is `entity` (the stream carries new images). */
export const insertsOfEntity = (entity: string) =>
  FilterCriteria.filter({
    eventName: FilterRule.isEqual('INSERT'),
    dynamodb: { NewImage: { entity: { S: FilterRule.isEqual(entity) } } },
  });

/** How Lambda feeds one consumer (batch size and window, retries, record age, parallelization). */
export type StreamMappingSettings = {
  batchSize: number;
  maxBatchingWindow: Duration;
  retryAttempts: number;
  maxRecordAge?: Duration;
  parallelizationFactor: number;
};

/**
 * What every consumer of the table's stream has (the outbox relay, the pending-moves applier, the
 * recount worker): the stream reads granted on the stream alone (CDK's `DynamoEventSource` would
 * also grant `ListStreams` on `*`), a dead-letter queue for the shard and sequence range of batches
 * given up on (Lambda's on-failure record; encrypted, TLS-only, 14 days), and an event source
 * mapping from TRIM_HORIZON of the INSERTs of `entity` items, with partial batch failures and
 * bisection on a function error. `DeadLetterQueue` and `StreamMapping` are created in `scope`.
 */
export const consumeTableStream = (
  scope: Construct,
  props: { fn: IFunction; streamArn: string; entity: string; settings: StreamMappingSettings },
): { deadLetterQueue: Queue; mapping: EventSourceMapping } => {
  props.fn.addToRolePolicy(new PolicyStatement({ actions: STREAM_READ_ACTIONS, resources: [props.streamArn] }));
  const deadLetterQueue = new Queue(scope, 'DeadLetterQueue', {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  const mapping = new EventSourceMapping(scope, 'StreamMapping', {
    target: props.fn,
    eventSourceArn: props.streamArn,
    startingPosition: StartingPosition.TRIM_HORIZON,
    ...props.settings,
    bisectBatchOnError: true,
    reportBatchItemFailures: true,
    // Grants the function sqs:SendMessage (and GetQueueAttributes, GetQueueUrl) on this queue.
    onFailure: new SqsDlq(deadLetterQueue),
    filters: [insertsOfEntity(props.entity)],
  });
  return { deadLetterQueue, mapping };
};
