import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  type GetRecordsCommandOutput,
  GetShardIteratorCommand,
  type _Record,
  type AttributeValue,
  type Shard,
} from '@aws-sdk/client-dynamodb-streams';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { config } from '#lib/config';
import { backoffMs } from '#lib/db/retry';
import { handlePendingMoves, handleRecountJobs, isPendingMovesInsert, isRecountJobInsert } from '#lib/metrics';
import { createRelayHandler, isOutboxInsert } from '#lib/outbox/relay';
import { localClientConfig } from './dynamodb.ts';
import { LocalBus } from './local-bus.ts';
import { lambdaContext } from './server.ts';

/**
 * THE local stand-in for the deployed event source mappings on the table's stream, and the only
 * one: DynamoDB Local has no stream triggers. One poller stands for one mapping (the outbox relay's,
 * the pending-moves applier's): it reads the table's stream, keeps the records the mapping's filter
 * keeps (`filter`: outbox INSERTs, pending-moves INSERTs), and invokes the mapping's handler with a
 * Lambda DynamoDB stream event of the same shape, as the mapping would. Each poller reads the
 * stream on its own, from its own checkpoint, as each mapping does on AWS:
 *
 * - one batch (at most 100 records) at a time per shard, shards after their parents;
 * - `batchItemFailures` (or a handler error): checkpoint before the first failed record, read
 *   again from it (AT_SEQUENCE_NUMBER) after a pause. Locally nothing is given up on: there is
 *   no dead-letter queue, so a failing batch is retried until it succeeds;
 * - the checkpoint (last sequence number handled, per shard) is kept in `checkpointFile` for the
 *   stream it names. A shard without one is read from TRIM_HORIZON (the stream's start: DynamoDB
 *   Local keeps 24 h), so a relay stopped or killed between a commit and its publish delivers the
 *   event after a restart; already published events are not sent again.
 */
export type StreamHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse>;

export type StreamPollerOptions = {
  endpoint: string;
  tableName: string;
  /** The records the mapping's filter lets through (the handler's own predicate). */
  filter: (record: DynamoDBRecord) => boolean;
  handler: StreamHandler;
  /** The function's name: its Lambda context's, and the label of its error lines. */
  functionName: string;
  /** Where the checkpoint is kept across restarts; in memory when unset. */
  checkpointFile?: string;
  /** Pause between polls of an idle stream. */
  intervalMs?: number;
  /** Records per GetRecords and per invocation, as the mapping's batch size. */
  batchSize?: number;
  /** Failures of the stream API or of the handler (each retried). */
  onError?: (err: unknown) => void;
};

export type StreamPoller = { streamArn: string; stop(): Promise<void> };
/** The outbox relay's poller (its filter and name given). */
export type OutboxPollerOptions = Omit<StreamPollerOptions, 'filter' | 'functionName'>;
export type OutboxPoller = StreamPoller;

type Checkpoint = { streamArn: string; shards: Record<string, string> };
type ShardState = { id: string; parentId?: string; iterator?: string; done: boolean; retryAt: number; failures: number };

const DISCOVERY_INTERVAL_MS = 10_000;
const RETRY_BACKOFF = { baseMs: 250, capMs: 5_000 };

/** A stream attribute value as Lambda delivers it: binary values in base64. */
// biome-ignore lint/suspicious/noExplicitAny: Lambda's stream image (binary as base64 text) has no SDK type
const lambdaValue = (v: AttributeValue): any => {
  if (v.B) return { B: Buffer.from(v.B).toString('base64') };
  if (v.BS) return { BS: v.BS.map((b) => Buffer.from(b).toString('base64')) };
  if (v.M) return { M: lambdaImage(v.M) };
  if (v.L) return { L: v.L.map(lambdaValue) };
  return v;
};
const lambdaImage = (image: Record<string, AttributeValue>) =>
  Object.fromEntries(Object.entries(image).map(([k, v]) => [k, lambdaValue(v)]));

/** A GetRecords record in the shape Lambda passes to a stream-triggered function. */
export const toLambdaRecord = (r: _Record, streamArn: string): DynamoDBRecord => {
  const d = r.dynamodb ?? {};
  return {
    eventID: r.eventID,
    eventName: r.eventName,
    eventVersion: r.eventVersion,
    eventSource: r.eventSource,
    awsRegion: r.awsRegion,
    eventSourceARN: streamArn,
    dynamodb: {
      ...(d.ApproximateCreationDateTime ? { ApproximateCreationDateTime: Math.floor(d.ApproximateCreationDateTime.getTime() / 1000) } : {}),
      ...(d.Keys ? { Keys: lambdaImage(d.Keys) } : {}),
      ...(d.NewImage ? { NewImage: lambdaImage(d.NewImage) } : {}),
      ...(d.OldImage ? { OldImage: lambdaImage(d.OldImage) } : {}),
      SequenceNumber: d.SequenceNumber,
      SizeBytes: d.SizeBytes,
      StreamViewType: d.StreamViewType,
    },
  };
};

const readCheckpoint = (file: string | undefined, streamArn: string): Checkpoint => {
  if (file) {
    try {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as Checkpoint;
      if (saved.streamArn === streamArn && saved.shards && typeof saved.shards === 'object') return saved;
    } catch {
      /* none yet, or unreadable: start over */
    }
  }
  return { streamArn, shards: {} };
};

/** Written whole and renamed into place, so a kill never leaves half a file. */
const writeCheckpoint = (file: string | undefined, checkpoint: Checkpoint) => {
  if (!file) return;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(`${file}.tmp`, JSON.stringify(checkpoint));
  renameSync(`${file}.tmp`, file);
};

const errorName = (err: unknown) => (err as { name?: string } | null)?.name ?? '';

export const startStreamPoller = async (opts: StreamPollerOptions): Promise<StreamPoller> => {
  const streams = new DynamoDBStreamsClient(localClientConfig(opts.endpoint));
  const dynamo = new DynamoDBClient(localClientConfig(opts.endpoint));
  const streamArn = (await dynamo.send(new DescribeTableCommand({ TableName: opts.tableName }))).Table?.LatestStreamArn;
  dynamo.destroy();
  if (!streamArn) throw new Error(`table ${opts.tableName} has no stream: ${opts.functionName} needs one (lib/db/table.ts enables it)`);

  const intervalMs = opts.intervalMs ?? 250;
  const batchSize = opts.batchSize ?? 100;
  const onError = opts.onError ?? ((err: unknown) => console.error(`${opts.functionName}:`, err instanceof Error ? err.message : err));
  const checkpoint = readCheckpoint(opts.checkpointFile, streamArn);
  const shards = new Map<string, ShardState>();
  let nextDiscovery = 0;
  let stopped = false;
  let wake: (() => void) | undefined;

  const discover = async () => {
    const seen = new Set<string>();
    let start: string | undefined;
    do {
      const { StreamDescription: d } = await streams.send(
        new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId: start }),
      );
      for (const shard of (d?.Shards ?? []) as Shard[]) {
        seen.add(shard.ShardId!);
        if (!shards.has(shard.ShardId!))
          shards.set(shard.ShardId!, { id: shard.ShardId!, parentId: shard.ParentShardId, done: false, retryAt: 0, failures: 0 });
      }
      start = d?.LastEvaluatedShardId;
    } while (start);
    // Shards gone from the stream (trimmed after 24 h) leave the checkpoint.
    for (const id of Object.keys(checkpoint.shards)) if (!seen.has(id)) delete checkpoint.shards[id];
    nextDiscovery = Date.now() + DISCOVERY_INTERVAL_MS;
  };

  const iterator = async (
    shard: ShardState,
    type: 'TRIM_HORIZON' | 'AFTER_SEQUENCE_NUMBER' | 'AT_SEQUENCE_NUMBER',
    sequenceNumber?: string,
  ) =>
    (
      await streams.send(
        new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard.id, ShardIteratorType: type, SequenceNumber: sequenceNumber }),
      )
    ).ShardIterator;

  /** Resumes after the checkpoint, or from the stream's start (also when the checkpoint was trimmed away). */
  const resume = async (shard: ShardState) => {
    const after = checkpoint.shards[shard.id];
    if (after) {
      try {
        return await iterator(shard, 'AFTER_SEQUENCE_NUMBER', after);
      } catch (err) {
        if (errorName(err) !== 'TrimmedDataAccessException') throw err;
      }
    }
    return iterator(shard, 'TRIM_HORIZON');
  };

  const advance = (shard: ShardState, sequenceNumber: string | undefined) => {
    if (!sequenceNumber) return;
    checkpoint.shards[shard.id] = sequenceNumber;
    writeCheckpoint(opts.checkpointFile, checkpoint);
  };

  /** Invokes the handler with the records the filter keeps; false (and positioned to retry) when some failed. */
  const deliver = async (shard: ShardState, records: DynamoDBRecord[]): Promise<boolean> => {
    const batch = records.filter(opts.filter);
    let failed: string | undefined;
    if (batch.length) {
      try {
        const { batchItemFailures } = await opts.handler({ Records: batch }, lambdaContext(opts.functionName, randomUUID()));
        // Lambda resumes at the lowest sequence number reported; an empty identifier means the whole batch.
        const reported = (batchItemFailures ?? []).map((f) => batch.findIndex((r) => r.dynamodb?.SequenceNumber === f.itemIdentifier));
        if (reported.length) failed = batch[reported.some((i) => i < 0) ? 0 : Math.min(...reported)].dynamodb!.SequenceNumber;
      } catch (err) {
        onError(err);
        failed = batch[0].dynamodb!.SequenceNumber;
      }
    }
    if (failed === undefined) {
      advance(shard, records[records.length - 1].dynamodb?.SequenceNumber);
      shard.failures = 0;
      return true;
    }
    const at = records.findIndex((r) => r.dynamodb?.SequenceNumber === failed);
    if (at > 0) advance(shard, records[at - 1].dynamodb?.SequenceNumber);
    shard.iterator = await iterator(shard, 'AT_SEQUENCE_NUMBER', failed);
    shard.failures++;
    shard.retryAt = Date.now() + backoffMs(shard.failures, RETRY_BACKOFF.baseMs, RETRY_BACKOFF.capMs) + RETRY_BACKOFF.baseMs;
    return false;
  };

  /** Reads a shard until it has nothing more for now (or a batch must wait for its retry). */
  const drain = async (shard: ShardState) => {
    while (!stopped) {
      shard.iterator ??= await resume(shard);
      let page: GetRecordsCommandOutput;
      try {
        page = await streams.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: batchSize }));
      } catch (err) {
        if (errorName(err) === 'ExpiredIteratorException' || errorName(err) === 'TrimmedDataAccessException') {
          shard.iterator = undefined; // resume from the checkpoint
          continue;
        }
        if (errorName(err) === 'ResourceNotFoundException') shard.done = true;
        throw err;
      }
      const records = (page.Records ?? []).map((r) => toLambdaRecord(r, streamArn));
      if (records.length && !(await deliver(shard, records))) return;
      shard.iterator = page.NextShardIterator;
      if (!shard.iterator) {
        // A closed shard, read to its end: its children may start.
        shard.done = true;
        nextDiscovery = 0;
        return;
      }
      if (!records.length) return;
    }
  };

  const pollOnce = async () => {
    if (Date.now() >= nextDiscovery) await discover();
    for (const shard of shards.values()) {
      const parent = shard.parentId ? shards.get(shard.parentId) : undefined;
      if (stopped || shard.done || Date.now() < shard.retryAt || (parent && !parent.done)) continue;
      await drain(shard);
    }
  };

  await discover();
  const loop = (async () => {
    while (!stopped) {
      try {
        await pollOnce();
      } catch (err) {
        onError(err);
      }
      if (!stopped) await new Promise<void>((r) => setTimeout((wake = r), intervalMs));
    }
  })();

  return {
    streamArn,
    /** Stops polling; resolves once the batch in hand (if any) is handled. */
    stop: async () => {
      stopped = true;
      wake?.();
      await loop;
      streams.destroy();
    },
  };
};

/** The outbox relay's poller: outbox INSERTs → `handler`. */
export const startOutboxPoller = (opts: OutboxPollerOptions): Promise<OutboxPoller> =>
  startStreamPoller({ ...opts, filter: isOutboxInsert, functionName: 'outboxRelay' });

/**
 * `npm start`'s pending-moves applier: a poller of its own (its own checkpoint) invoking the
 * deployed function's handler with the pending-moves INSERTs. Locally nothing is given up on, so
 * a failing item is retried until it is applied.
 */
/** Where a local stream consumer reads: the table, its checkpoint file, how often an idle stream is polled. */
export type StreamConsumerOptions = { endpoint: string; tableName: string; checkpointFile?: string; intervalMs?: number };

export const startLocalPendingApplier = (opts: StreamConsumerOptions) =>
  startStreamPoller({ ...opts, filter: isPendingMovesInsert, handler: handlePendingMoves, functionName: 'pendingMovesApplier' });

/**
 * `npm start`'s recount worker: a poller of its own invoking the deployed function's handler with
 * the recount jobs' INSERTs, so a zone or rate change is recounted and switched here as it is on AWS.
 */
export const startLocalRecountWorker = (opts: StreamConsumerOptions) =>
  startStreamPoller({ ...opts, filter: isRecountJobInsert, handler: handleRecountJobs, functionName: 'recountWorker' });

/**
 * `npm start`'s relay: the poller invoking the relay handler, publishing to the local bus (its
 * subscribers are the local consumers; `log` gets one line per event), or, when EVENTBRIDGE_ENDPOINT
 * names an emulator, the deployed function's own handler publishing there (bus EVENT_BUS_NAME).
 * With it, the outbox sweeper on a timer every SWEEP_INTERVAL_MINUTES, as its schedule runs it on
 * AWS, publishing to the same place.
 */
export const startLocalRelay = async (opts: {
  endpoint: string;
  tableName: string;
  checkpointFile?: string;
  log?: (line: string) => void;
}) => {
  const bus = new LocalBus({ log: opts.log });
  const eventBridge = config.eventBridgeEndpoint();
  const handler: StreamHandler = eventBridge ? (await import('../../functions/outbox/relay.ts')).handler : createRelayHandler(bus.publish);
  const poller = await startOutboxPoller({
    endpoint: opts.endpoint,
    tableName: opts.tableName,
    handler,
    checkpointFile: opts.checkpointFile,
  });
  const { sweepOutbox, SWEEP_INTERVAL_MINUTES } = await import('#lib/outbox/sweeper');
  const publish = eventBridge ? (await import('#lib/outbox/eventbridge')).eventBridgePublisher() : bus.publish;
  let sweeping: Promise<unknown> = Promise.resolve();
  const sweep = () =>
    (sweeping = sweepOutbox({ publish })
      .then((stats) => stats.confirmed && opts.log?.(`outbox sweeper: ${stats.published} pending event(s) published again`))
      .catch((err) => console.error('outbox sweeper:', err instanceof Error ? err.message : err)));
  const timer = setInterval(() => void sweep(), SWEEP_INTERVAL_MINUTES * 60_000);
  timer.unref();
  const target = eventBridge
    ? `EventBridge at ${eventBridge} (bus ${config.eventBusName() ?? 'default'})`
    : 'local bus (one line per event)';
  return {
    bus,
    /** Where the relay and the sweeper publish (`ops events replay` against npm start too). */
    publish,
    poller: {
      streamArn: poller.streamArn,
      stop: async () => {
        clearInterval(timer);
        await Promise.all([poller.stop(), sweeping]);
      },
    },
    target,
  };
};
