import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { EventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  figuresVersionPartition,
  exchangeRatesPartition,
  exchangeRatesVersionPartition,
  generationPartition,
  keys,
  planCustomersPartition,
  plansPartition,
} from '#lib/db/keys';
import { RESTATE_JOB_ENTITY } from '#lib/metrics/restate-jobs';
import { RESTATE_WORKER_HANDLER } from '../paths.ts';
import { ApiFunction, CUSTOMER_PK_PATTERN, type KeyedGrant, MERCHANT_ID_IAM_PATTERN } from './api-function.ts';
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
export const RESTATE_WORKER_PARTITIONS = {
  /** `M#<m>`: the merchant (its zone, its reporting currency) and its id sequences. */
  merchant: keys.merchant(M).pk,
  /** `M#<m>#RESTATE`: the jobs. */
  jobs: keys.restateJob(M, '').pk,
  /** `M#<m>#PACE`: the ledger of write units the merchant's passes share, a second an item. */
  pace: keys.restatePace(M, 0).pk,
  /** `M#<m>#PENDING#<ss>`: the pending-moves backlog counts a spilled transaction adds to and an apply takes from. */
  pendingBacklog: anyEnding(keys.pendingBacklog(M, 0).pk, '00'),
  /** `M#<m>#FIGURES#<nnn>`: the figures' versions every transaction writing the aggregates adds to. */
  figuresVersions: anyEnding(figuresVersionPartition(M, 0), '000'),
  /** `M#<m>#CUSTOMER#<id>`: a customer's timeline head and chunks. */
  customers: CUSTOMER_PK_PATTERN,
  /** The aggregates and their pending moves (the applier's partitions). */
  metrics: PENDING_MOVES_PK_PATTERNS,
  /** `M#<m>#PLANS` and `M#<m>#PLAN_CUSTOMERS#…`: a plan new to the figures, a customer new to a plan. */
  plans: plansPartition(M),
  planCustomers: anyEnding(planCustomersPartition(M, 0, 'p'), '0#p'),
  /** `M#<m>#RATES`: the rate tables; `M#<m>#RATES_VERSION#<nnn>`: the copies of their versions a write checks. */
  rates: exchangeRatesPartition(M),
  rateVersions: anyEnding(exchangeRatesVersionPartition(M, 0), '000'),
  /** `M#<m>#GENERATION#<nnn>`: the copies of the figures generation every MRR write checks. */
  generations: anyEnding(generationPartition(M, 0), '000'),
  /** `M#<m>#G<n>#SETTINGS`: the zone and rates a generation was built in (a customer last counted in an older one starts from them). */
  generationSettings: `${keys.merchant(M).pk}#G*#SETTINGS`,
};

/**
 * The retirement of an older generation (lib/metrics/generation.ts `retireGeneration`): its
 * partitions Queried for their keys, the items deleted 25 to a BatchWriteItem.
 */
const RETIRED = [...RESTATE_WORKER_PARTITIONS.metrics, RESTATE_WORKER_PARTITIONS.generationSettings];

/**
 * What one job takes (lib/metrics/restate-jobs.ts `runRestateJob`, lib/metrics/restate.ts,
 * lib/metrics/store.ts `addTimelineChange`), each action on the partitions it is used on only,
 * rather than one `M#<m>*` for all: the worker never reaches orders, subscriptions, tokens,
 * webhooks or idempotency records. Reads: the job, the merchant and its sequences (GetItem),
 * timeline heads and rate tables (BatchGetItem), a timeline's chunks (Query), a pending-moves item
 * (GetItem, when a transaction spilled). One transaction per customer: its timeline (Put, Delete
 * of chunks), the aggregates (Update) or their pending moves (Put), plans and plan customers (a
 * pass keeps a customer's lines, so it adds none today, but `addTimelineChange` may write them), a
 * check of each rate table's version copy and of the generation copy (ConditionCheckItem), and the job's delete and next
 * round (Put); a share of the pace ledger before a transaction (Update); then each spilled pending-moves item applied (Update, Delete). The customer
 * partitions also hold its other items (IAM keys on partitions only).
 * test/infra/restate-worker-iam.test.ts runs jobs against DynamoDB Local and checks every
 * request against these grants.
 */
const P = RESTATE_WORKER_PARTITIONS;
export const RESTATE_WORKER_GRANTS: KeyedGrant[] = [
  // The generation copy: a pass refused by a build's pause reads it until the switch (lib/metrics/store.ts).
  { action: 'GetItem', leadingKeys: [P.merchant, P.jobs, P.customers, ...P.metrics, P.generations] },
  { action: 'BatchGetItem', leadingKeys: [P.customers, P.rates, P.generationSettings] },
  { action: 'Query', leadingKeys: [P.customers, ...RETIRED] },
  { action: 'PutItem', leadingKeys: [P.jobs, P.customers, ...P.metrics, P.planCustomers] },
  { action: 'UpdateItem', leadingKeys: [...P.metrics, P.plans, P.pace, P.pendingBacklog, P.figuresVersions] },
  { action: 'DeleteItem', leadingKeys: [P.jobs, P.customers, ...P.metrics] },
  { action: 'ConditionCheckItem', leadingKeys: [P.rateVersions, P.generations] },
  { action: 'BatchWriteItem', leadingKeys: RETIRED },
];

/**
 * A job runs for its invocation's time (the handler stops with a margin and leaves the next
 * round), so a longer timeout is fewer rounds: 5 minutes, as long as one pass of a big merchant
 * may usefully take before it hands over.
 */
export const RESTATE_WORKER_TIMEOUT = Duration.minutes(5);

/**
 * How Lambda feeds the worker. One record per invocation, at once (no batching window): a job
 * takes the whole invocation's time. Jobs are few (one per cut-short pass) and one batch in flight
 * per shard is enough. A failed job is retried a few times, for an hour at most (each try may take
 * the whole timeout), then its shard and sequence range go to the dead-letter queue.
 *
 * Nothing is lost by giving up: the figures stay right for every customer already moved, the rest
 * move with their next write, and the pass is run again by repeating the change or by
 * `ops metrics rebuild` (docs/operations.md).
 */
export const RESTATE_WORKER_MAPPING: StreamMappingSettings = {
  batchSize: 1,
  maxBatchingWindow: Duration.seconds(0),
  retryAttempts: 5,
  maxRecordAge: Duration.hours(1),
  parallelizationFactor: 1,
};

export type RestateWorkerProps = {
  /** The table; its stream must be enabled (NEW_IMAGE). */
  table: ITable;
  projectRoot: string;
  /** Configuration passed to the function (STAGE, LOG_LEVEL). */
  environment?: Record<string, string>;
};

/**
 * The restate worker: table stream → function → a pass after a time zone or rate change that a
 * request could not finish goes on (lib/metrics/restate-jobs.ts). The function may read the
 * table's stream, send to its dead-letter queue, and use the table as `RESTATE_WORKER_GRANTS` says,
 * nothing else.
 */
export class RestateWorker extends Construct {
  readonly function: ApiFunction;
  readonly mapping: EventSourceMapping;
  /** Its depth is alarmed in infra/constructs/monitoring.ts. */
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: RestateWorkerProps) {
    super(scope, id);
    const streamArn = props.table.tableStreamArn;
    if (!streamArn) throw new Error('the restate worker needs the table stream (NEW_IMAGE) enabled');

    this.function = new ApiFunction(this, 'Function', {
      projectRoot: props.projectRoot,
      handlerPath: RESTATE_WORKER_HANDLER,
      description: `restate worker: table stream → a cut-short pass after a zone or rate change goes on (${RESTATE_WORKER_HANDLER})`,
      timeout: RESTATE_WORKER_TIMEOUT,
      environment: props.environment,
    });
    // Its key grants also decrypt the stream's records.
    this.function.grantTableActions(props.table, { keyed: RESTATE_WORKER_GRANTS });
    // Stream reads, the dead-letter queue (the shard and sequence range of a job given up on: its
    // item stays in the table) and the mapping. Its filter lets through restate-job INSERTs only
    // (lib/metrics/restate-jobs.ts `isRestateJobInsert` is the same test, applied again by the function).
    const stream = consumeTableStream(this, {
      fn: this.function,
      streamArn,
      entity: RESTATE_JOB_ENTITY,
      settings: RESTATE_WORKER_MAPPING,
    });
    this.deadLetterQueue = stream.deadLetterQueue;
    this.mapping = stream.mapping;
  }
}
