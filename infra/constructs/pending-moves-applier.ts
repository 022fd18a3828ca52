import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { EventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { churnReasonsPartition, cohortPartition, keys, metricsPartition, salesPartition } from '#lib/db/keys';
import { PENDING_MOVES_ENTITY } from '#lib/db/writes';
import { PENDING_MOVES_APPLIER_HANDLER } from '../paths.ts';
import { ApiFunction, MERCHANT_ID_IAM_PATTERN, type TableAction } from './api-function.ts';
import { consumeTableStream, type StreamMappingSettings } from './stream-consumer.ts';

/**
 * The partitions pending-moves items live in, and whose aggregate items they move (a move stays in
 * its item's partition: lib/db/writes.ts), as `LeadingKeys` patterns: a merchant's MRR movements and
 * cohorts and its sales figures, whole or of one segment (`…#MRR#SEG#…`), and its churn by reason
 * (lib/db/keys.ts).
 */
export const PENDING_MOVES_PK_PATTERNS = [
  `${metricsPartition(MERCHANT_ID_IAM_PATTERN)}*`,
  `${cohortPartition(MERCHANT_ID_IAM_PATTERN)}*`,
  `${salesPartition(MERCHANT_ID_IAM_PATTERN)}*`,
  `${churnReasonsPartition(MERCHANT_ID_IAM_PATTERN)}*`,
];

/**
 * What applying one item takes (lib/db/writes.ts `applyPending`): a strongly consistent GetItem of
 * the item, then one transaction of its ADDs (UpdateItem) and its conditional deletion (DeleteItem).
 * No ConditionCheckItem: a move carries no condition, so it is never rendered as a check.
 */
export const PENDING_MOVES_ACTIONS: TableAction[] = ['GetItem', 'UpdateItem', 'DeleteItem'];

/**
 * The applier's other updates: one off the item's shard backlog count (`M#<m>#PENDING#<ss>`) and
 * one onto its shard's figures version (`M#<m>#FIGURES#<nnn>`) in the apply, and its share of the
 * pace ledger (`M#<m>#PACE`, `A#<ss>#<second>`) before it.
 */
export const PENDING_MOVES_COUNTS_PK_PATTERNS = [
  `${keys.merchant(MERCHANT_ID_IAM_PATTERN).pk}#PENDING#*`,
  `${keys.merchant(MERCHANT_ID_IAM_PATTERN).pk}#FIGURES#*`,
  keys.applierPace(MERCHANT_ID_IAM_PATTERN, 0, 0).pk,
];

/**
 * How Lambda feeds the applier. Up to 50 records or 1 s per invocation (an invocation applies 4
 * items at once: lib/metrics/pending-applier.ts), one batch in flight per shard. Records are
 * independent, so a failed record is retried from (ReportBatchItemFailures; bisected on a function
 * error) a bounded number of times and for an hour at most, then its shard and sequence range go
 * to the dead-letter queue and the shard moves on.
 *
 * Nothing is lost by giving up: an item not applied stays in the table, every read of the
 * aggregates still adds it in (figures stay exact; reads cost more while items pile up), and
 * `ops metrics rebuild` applies whatever is left (docs/operations.md).
 */
export const PENDING_MOVES_MAPPING: StreamMappingSettings = {
  batchSize: 50,
  maxBatchingWindow: Duration.seconds(1),
  retryAttempts: 10,
  maxRecordAge: Duration.hours(1),
  parallelizationFactor: 1,
};

export type PendingMovesApplierProps = {
  /** The table; its stream must be enabled (NEW_IMAGE). */
  table: ITable;
  projectRoot: string;
  /** Configuration passed to the function (STAGE, LOG_LEVEL). */
  environment?: Record<string, string>;
};

/**
 * The pending-moves applier: table stream → function → each pending-moves item applied once. The
 * function may read the table's stream, send to its dead-letter queue, and get, update and delete
 * items of the metrics partitions (PENDING_MOVES_PK_PATTERNS), nothing else.
 */
export class PendingMovesApplier extends Construct {
  readonly function: ApiFunction;
  readonly mapping: EventSourceMapping;
  /** Its depth and the applier's iterator age are alarmed in infra/constructs/monitoring.ts. */
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: PendingMovesApplierProps) {
    super(scope, id);
    const streamArn = props.table.tableStreamArn;
    if (!streamArn) throw new Error('the pending-moves applier needs the table stream (NEW_IMAGE) enabled');

    this.function = new ApiFunction(this, 'Function', {
      projectRoot: props.projectRoot,
      handlerPath: PENDING_MOVES_APPLIER_HANDLER,
      description: `pending-moves applier: table stream → aggregate moves applied (${PENDING_MOVES_APPLIER_HANDLER})`,
      environment: props.environment,
    });
    // Its key grants also decrypt the stream's records.
    this.function.grantTableActions(props.table, {
      keyed: [
        ...PENDING_MOVES_ACTIONS.map((action) => ({ action, leadingKeys: PENDING_MOVES_PK_PATTERNS })),
        { action: 'UpdateItem', leadingKeys: PENDING_MOVES_COUNTS_PK_PATTERNS },
      ],
    });
    // Stream reads, the dead-letter queue (the shard and sequence range of batches given up on: their
    // items are still pending in the table, read in, and applied by `ops metrics rebuild`) and the
    // mapping. Its filter lets through pending-moves INSERTs only (lib/metrics/pending-applier.ts
    // `isPendingMovesInsert` is the same test, applied again by the function and by the local poller).
    const stream = consumeTableStream(this, {
      fn: this.function,
      streamArn,
      entity: PENDING_MOVES_ENTITY,
      settings: PENDING_MOVES_MAPPING,
    });
    this.deadLetterQueue = stream.deadLetterQueue;
    this.mapping = stream.mapping;
  }
}
