import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { now } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { keys, type Key } from '#lib/db/keys';
import { expiresIn } from '#lib/db/ttl';
import { DEADLINE_MARGIN_MS, deadline, withDeadline } from '#lib/db/retry';
import { WriteConflict, WriteSet } from '#lib/db/writes';
import { logger } from '#lib/logger';
import { generationOf, zoneOf } from '#lib/merchants/rules';
import { getMerchant } from '#lib/merchants/store';
import { restateCustomers, type RestateReport } from '#lib/metrics/restate';
import { RESTATE_MARKER_ENTITY } from '#lib/metrics/store';
import { retireGeneration } from '#lib/metrics/generation';
import { formatTimestamp } from '#lib/shared/time';
import { asFunction, WORKER_FUNCTIONS } from '#lib/shared/invocation';

/**
 * A pass after a time zone or rate change that one request could not finish goes on by itself
 * (docs/exchange-rates.md, "After a rate change"): the request leaves a **restate job** item
 * saying where it stopped; the table's stream hands each job's INSERT to the restate worker
 * (functions/metrics/restate-worker.ts; locally, `npm start`'s poller), which goes on with the pass
 * in the merchant's zone and at the rates as they are then, for its invocation's time, and ends
 * the job or leaves the next one (a new item, so a new INSERT) in one transaction. The pass is
 * idempotent: a customer already moved is no longer concerned, so a job run twice costs reads only.
 */

export const RESTATE_JOB_ENTITY = 'restate-job';
export { RESTATE_MARKER_ENTITY };

/**
 * A pass to go on with: the merchant's customers from `from_id` on, and those with points in
 * `currency` (none: the zone only). `chain` names the rounds of one pass and its marker (jobs left
 * before markers existed have none). `generation`: the generation of the aggregates the pass moves
 * customers in (absent: 0); a build of a later one (lib/metrics/generation.ts) counted them all
 * afresh, so the job ends. `retire`: instead of a pass, an older generation's items to delete
 * (lib/metrics/generation.ts `retireGeneration`), not before `after` (epoch ms), from partition
 * `from_id` on.
 */
export type RestateJob = {
  merchant_id: string;
  currency?: string;
  from_id: number;
  round: number;
  chain?: string;
  generation?: number;
  retire?: { generation: number; partitions: string[]; after: number };
};

/** How long a job item stays at most: a job runs within the hour its record may wait, or goes to the dead-letter queue. */
const JOB_TTL_SECONDS = 7 * 86_400;
/** Time a job keeps for its own transaction and the stream's answer. */
const JOB_MARGIN_MS = 3_000;

/** Adds a job to `ws`: a new item every time (never rewritten, so the stream always sees an INSERT). */
export const addRestateJob = (ws: WriteSet, job: RestateJob) => {
  const id = `${String(job.round).padStart(6, '0')}#${randomUUID()}`;
  ws.put('restate-job', {
    ...keys.restateJob(job.merchant_id, id),
    entity: RESTATE_JOB_ENTITY,
    merchant_id: job.merchant_id,
    ...(job.currency ? { currency: job.currency } : {}),
    ...(job.chain ? { chain: job.chain } : {}),
    ...(job.generation ? { generation: job.generation } : {}),
    ...(job.retire ? { retire: job.retire } : {}),
    from_id: job.from_id,
    round: job.round,
    created_at: formatTimestamp(now()),
    // A job whose record was given up on (its dead-letter queue) does not stay for ever.
    ...expiresIn(JOB_TTL_SECONDS),
  });
};

/**
 * After a request's pass: nothing when it finished, else the job that goes on from where it stopped,
 * and the marker that makes the whole's MRR reads say so until the last round ends (same TTL).
 */
export const continueRestate = async (merchantId: string, report: RestateReport, generation: number, currency?: string) => {
  if (report.done) return;
  const ws = new WriteSet();
  const chain = randomUUID();
  addRestateJob(ws, {
    merchant_id: merchantId,
    ...(currency ? { currency } : {}),
    from_id: report.next ?? 1,
    round: 1,
    chain,
    ...(generation ? { generation } : {}),
  });
  ws.put('restate-marker', {
    ...keys.restateMarker(merchantId, chain, generation),
    entity: RESTATE_MARKER_ENTITY,
    ...expiresIn(JOB_TTL_SECONDS),
  });
  await ws.commit();
  logger.info('restate: the pass goes on in the background', { merchant_id: merchantId, currency, ...report });
};

export type JobOutcome = 'gone' | 'done' | 'continued' | 'deferred';

/**
 * Runs one job (by its key) until `until`: gone already (another delivery ran it), done (the job
 * deleted), or continued (deleted, and the next round put, in one transaction). Without time to
 * do anything, deferred: the same job put again as a new item.
 */
export const runRestateJob = async (key: Key, until: number): Promise<JobOutcome> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }));
  if (!Item) return 'gone';
  const job = Item as RestateJob;
  const merchant = await getMerchant(job.merchant_id);
  const ws = new WriteSet();
  // Another delivery of the same record may have ended it meanwhile: then this one adds nothing.
  ws.delete('restate-job', key, { expression: 'attribute_exists(pk)' });
  let outcome: JobOutcome = 'done';
  // The last round (or a merchant gone) takes the chain's marker with it.
  const ending = () => {
    if (job.chain) ws.delete('restate-marker', keys.restateMarker(job.merchant_id, job.chain, job.generation ?? 0));
  };
  // A merchant gone, or a later generation built (every customer counted afresh): nothing left to move.
  if (job.retire && merchant && generationOf(merchant) === job.retire.generation) {
    // The generation counts after all (a switch whose answer was lost, its build taken for abandoned): nothing is deleted.
    logger.warn('retire job names the current generation: nothing deleted', {
      merchant_id: job.merchant_id,
      generation: job.retire.generation,
    });
  } else if (job.retire) {
    // An older generation's items: deleted whatever happened to the merchant since.
    const retired = await retireGeneration(job.retire, job.from_id, until);
    if (!retired.done) {
      addRestateJob(ws, { ...job, from_id: retired.next, round: job.round + 1 });
      outcome = 'continued';
    }
    logger.info('generation retired', { merchant_id: job.merchant_id, generation: job.retire.generation, ...retired });
  } else if (!merchant || generationOf(merchant) !== (job.generation ?? 0)) ending();
  else {
    if (Date.now() >= until) {
      addRestateJob(ws, job);
      outcome = 'deferred';
    } else {
      const report = await restateCustomers(job.merchant_id, merchant.reporting_currency, zoneOf(merchant), {
        currency: job.currency,
        fromId: job.from_id,
        until,
        generation: job.generation ?? 0,
      });
      if (!report.done) {
        addRestateJob(ws, { ...job, from_id: report.next ?? job.from_id, round: job.round + 1 });
        outcome = 'continued';
      } else ending();
      logger.info('restate job', { merchant_id: job.merchant_id, currency: job.currency, round: job.round, ...report });
    }
  }
  try {
    await ws.commit();
  } catch (err) {
    if (err instanceof WriteConflict && err.tags.includes('restate-job')) return 'gone';
    throw err;
  }
  return outcome;
};

/** What the worker's stream mapping lets through, tested again here and by the local poller: INSERTs of restate jobs. */
export const isRestateJobInsert = (record: DynamoDBRecord): boolean =>
  record.eventName === 'INSERT' && record.dynamodb?.NewImage?.entity?.S === RESTATE_JOB_ENTITY;

/**
 * The restate worker as a Lambda handler (DynamoDB stream event → partial batch response): each
 * job in turn within the invocation's time; a job that fails is reported, so the mapping retries it.
 */
export const handleRestateJobs = asFunction(
  WORKER_FUNCTIONS.restateWorker,
  async (event: DynamoDBStreamEvent, context: Context): Promise<DynamoDBBatchResponse> => {
    logger.addContext(context);
    const end = Date.now() + context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS;
    const failed: string[] = [];
    await withDeadline(end, async () => {
      for (const record of (event.Records ?? []).filter(isRestateJobInsert)) {
        const pk = record.dynamodb?.Keys?.pk?.S;
        const sk = record.dynamodb?.Keys?.sk?.S;
        try {
          if (!pk || !sk) throw new Error('stream record without its pk and sk');
          const outcome = await runRestateJob({ pk, sk }, deadline() - JOB_MARGIN_MS);
          logger.info('restate job run', { pk, sk, outcome });
        } catch (err) {
          failed.push(record.dynamodb?.SequenceNumber ?? '');
          logger.warn('restate job failed', { pk, sk, error: (err as Error).name, error_message: (err as Error).message });
        }
      }
    });
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  },
);
