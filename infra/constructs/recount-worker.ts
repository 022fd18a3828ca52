import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { EventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { figuresVersionPartition, generationPartition, keys } from '#lib/db/keys';
import { RECOUNT_JOB_ENTITY } from '#lib/metrics';
import { RECOUNT_WORKER_HANDLER } from '../paths.ts';
import { ApiFunction, CUSTOMER_PK_PATTERN, type KeyedGrant, MERCHANT_ID_IAM_PATTERN, TOKEN_SETTINGS_UPDATE } from './api-function.ts';
import { PENDING_MOVES_PK_PATTERNS } from './pending-moves-applier.ts';
import { consumeTableStream, type StreamMappingSettings } from './stream-consumer.ts';

/** `pk` with its last part (`tail`: an id, a shard, a plan) as `*`: every partition of that kind. */
const anyEnding = (pk: string, tail: string) => {
  if (!pk.endsWith(tail)) throw new Error(`${pk} does not end with ${tail}`);
  return `${pk.slice(0, -tail.length)}*`;
};

/**
 * The merchant partitions the worker reaches, as `LeadingKeys` patterns built from the key module
 * (the merchant id written exactly, so no `*` stretches over a `#` into another kind of partition).
 */
const M = MERCHANT_ID_IAM_PATTERN;
export const RECOUNT_WORKER_PARTITIONS = {
  /** `M#<m>`: the merchant (its recount, its generation), its token pointer and its id sequences. */
  merchant: keys.merchant(M).pk,
  /** `M#<m>#RECOUNT`: the jobs. */
  jobs: keys.recountJob(M, '').pk,
  /** `M#<m>#PENDING#<ss>`: the pending-moves backlog counts a spilled transaction adds to and an apply takes from. */
  pendingBacklog: anyEnding(keys.pendingBacklog(M, 0).pk, '00'),
  /** `M#<m>#FIGURES#<nnn>`: the figures' versions every transaction writing the aggregates adds to. */
  figuresVersions: anyEnding(figuresVersionPartition(M, 0), '000'),
  /** `M#<m>#CUSTOMER#<id>`: a customer's timeline head (marked counted) and chunks. */
  customers: CUSTOMER_PK_PATTERN,
  /** The aggregates of every generation and their pending moves (the applier's partitions). */
  metrics: PENDING_MOVES_PK_PATTERNS,
  /** `M#<m>#GENERATION#<nnn>`: the copies of the figures generation every write checks. */
  generations: anyEnding(generationPartition(M, 0), '000'),
  /** `M#<m>#G<n>#SETTINGS`: a generation's zone and rates. */
  generationSettings: `${keys.merchant(M).pk}#G*#SETTINGS`,
  /** `M#<m>#G<n>#SEGMENTS#<ss>`: a generation's segment registry (48 shards). */
  generationSegments: `${keys.merchant(M).pk}#G*#SEGMENTS#*`,
};

/** A generation's items: deleted when it is retired (Queried for their keys, deleted 25 to a BatchWriteItem). */
const RETIRED = [
  ...RECOUNT_WORKER_PARTITIONS.metrics,
  RECOUNT_WORKER_PARTITIONS.generationSettings,
  RECOUNT_WORKER_PARTITIONS.generationSegments,
];

/**
 * What one job takes (lib/metrics/recount.ts `runRecountJob`), each action on the partitions it is
 * used on only: the worker never reaches orders, subscriptions, webhooks or idempotency records.
 * Reads: the job, the merchant, its pointer and sequences (GetItem), timeline heads (BatchGetItem),
 * a timeline's chunks, a generation's settings and a retired generation's partitions (Query), a
 * pending-moves item (GetItem). Counting: one transaction per group of customers, their heads
 * marked (Update), the aggregates (Update) or their pending moves (Put), the backlog and figures
 * versions (Update), the copy's check (ConditionCheckItem); the segment registry (BatchWriteItem).
 * The switch: the merchant, the pointer and the copies (Update), the token's copy of the figures'
 * state (UpdateItem on `TOKEN#…`, those attributes only). Retiring: pending moves applied (Update,
 * Delete), the rest deleted (BatchWriteItem). Each job ends with its delete and the next one (Put).
 * test/infra/recount-worker-iam.test.ts runs jobs against DynamoDB Local and checks every request
 * against these grants.
 */
const P = RECOUNT_WORKER_PARTITIONS;
export const RECOUNT_WORKER_GRANTS: KeyedGrant[] = [
  { action: 'GetItem', leadingKeys: [P.merchant, P.jobs, ...P.metrics] },
  { action: 'BatchGetItem', leadingKeys: [P.customers] },
  { action: 'Query', leadingKeys: [P.customers, ...RETIRED] },
  { action: 'PutItem', leadingKeys: [P.jobs, ...P.metrics] },
  { action: 'UpdateItem', leadingKeys: [P.merchant, P.customers, ...P.metrics, P.pendingBacklog, P.figuresVersions, P.generations] },
  TOKEN_SETTINGS_UPDATE,
  { action: 'DeleteItem', leadingKeys: [P.jobs, ...P.metrics] },
  { action: 'ConditionCheckItem', leadingKeys: [P.generations] },
  { action: 'BatchWriteItem', leadingKeys: RETIRED },
];

/**
 * A job runs for its invocation's time (the handler stops with a margin and leaves the next
 * round, a new item), so a longer timeout is fewer rounds: 5 minutes.
 */
export const RECOUNT_WORKER_TIMEOUT = Duration.minutes(5);

/**
 * How Lambda feeds the worker. One record per invocation, at once (no batching window): a job
 * takes up to the whole invocation's time. Ten batches in flight per stream shard (records of one
 * merchant's jobs stay in order, other merchants' recounts do not wait behind them). A failed job
 * is retried a few times (it resumes where it stopped: what it counted is marked), then its shard
 * and sequence range go to the dead-letter queue, whose depth is alarmed.
 *
 * Giving up loses nothing: the figures of the settings before the change keep answering (with
 * `Recount-Pending: true`), and `ops metrics resume-recount` puts the job again (docs/operations.md).
 */
export const RECOUNT_WORKER_MAPPING: StreamMappingSettings = {
  batchSize: 1,
  maxBatchingWindow: Duration.seconds(0),
  retryAttempts: 5,
  maxRecordAge: Duration.hours(1),
  parallelizationFactor: 10,
};

export type RecountWorkerProps = {
  /** The table; its stream must be enabled (NEW_IMAGE). */
  table: ITable;
  projectRoot: string;
  /** Configuration passed to the function (STAGE, LOG_LEVEL). */
  environment?: Record<string, string>;
};

/**
 * The recount worker: table stream → function → the next generation of a merchant's figures
 * counted after a settings change, switched to, and the one before deleted (lib/metrics/recount.ts). The function may read the
 * table's stream, send to its dead-letter queue, and use the table as `RECOUNT_WORKER_GRANTS` says,
 * nothing else.
 */
export class RecountWorker extends Construct {
  readonly function: ApiFunction;
  readonly mapping: EventSourceMapping;
  /** Its depth is alarmed in infra/constructs/monitoring.ts. */
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: RecountWorkerProps) {
    super(scope, id);
    const streamArn = props.table.tableStreamArn;
    if (!streamArn) throw new Error('the recount worker needs the table stream (NEW_IMAGE) enabled');

    this.function = new ApiFunction(this, 'Function', {
      projectRoot: props.projectRoot,
      handlerPath: RECOUNT_WORKER_HANDLER,
      description: `recount worker: table stream → the figures recounted after a settings change (${RECOUNT_WORKER_HANDLER})`,
      timeout: RECOUNT_WORKER_TIMEOUT,
      environment: props.environment,
    });
    // Its key grants also decrypt the stream's records.
    this.function.grantTableActions(props.table, { keyed: RECOUNT_WORKER_GRANTS });
    // Stream reads, the dead-letter queue (the shard and sequence range of a job given up on: its
    // item stays in the table) and the mapping. Its filter lets through recount-job INSERTs only
    // (lib/metrics/recount.ts `isRecountJobInsert` is the same test, applied again by the function).
    const stream = consumeTableStream(this, {
      fn: this.function,
      streamArn,
      entity: RECOUNT_JOB_ENTITY,
      settings: RECOUNT_WORKER_MAPPING,
    });
    this.deadLetterQueue = stream.deadLetterQueue;
    this.mapping = stream.mapping;
  }
}
