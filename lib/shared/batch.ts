import type { DynamoDBBatchResponse, DynamoDBRecord, SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { BatchProcessor, EventType, processPartialResponse } from '#lib/powertools';

/**
 * THE batch loop of the stream and queue consumers (the outbox relay, the pending-moves applier,
 * the webhook fan-out and delivery): Powertools' batch processing (`@aws-lambda-powertools/batch`,
 * in the observability layer like the rest of Powertools). A consumer gives its per-record logic as
 * a record handler; Powertools runs it on every record, takes a record whose handler throws as
 * failed, and answers the partial batch response (`batchItemFailures`: the failed records'
 * sequence numbers or message ids) that the event source mappings ask for
 * (`reportBatchItemFailures`: infra/constructs/stream-consumer.ts, webhook-delivery.ts).
 *
 * - Handlers run at once (`processInParallel`), each started in batch order before the next: a
 *   consumer that needs less (a concurrency limit, one key's records in turn) says so in its
 *   handler (lib/shared/in-turn.ts `limiter`, `inOrderPerKey`).
 * - A batch whose every record failed is answered like any other, every record reported
 *   (`throwOnFullBatchFailure: false`): the mapping retries the same records either way, and a
 *   function error would also bisect a stream's batch and count against the function's errors.
 * - A processor per batch: its state is the batch's, so batches handled at once in one process
 *   (the local pollers, the tests) never share it.
 */
const OPTIONS = { processInParallel: true, throwOnFullBatchFailure: false } as const;

/** Runs `handler` on each record of a DynamoDB stream batch; the failed records' sequence numbers. */
export const processStreamBatch = (
  records: DynamoDBRecord[],
  handler: (record: DynamoDBRecord) => Promise<unknown>,
): Promise<DynamoDBBatchResponse> =>
  processPartialResponse({ Records: records }, handler, new BatchProcessor(EventType.DynamoDBStreams), OPTIONS);

/** Runs `handler` on each message of an SQS batch; the failed messages' ids. */
export const processQueueBatch = (records: SQSRecord[], handler: (record: SQSRecord) => Promise<unknown>): Promise<SQSBatchResponse> =>
  processPartialResponse({ Records: records }, handler, new BatchProcessor(EventType.SQS), OPTIONS);

/**
 * A stream batch's failures as Lambda reads them: it checkpoints before the lowest reported sequence
 * number and delivers the shard again from it, so that record alone says it all. For a consumer
 * whose later records wait on the earlier ones (the outbox relay), it is also the one record its
 * answer names.
 */
export const firstFailedRecord = (records: DynamoDBRecord[], response: DynamoDBBatchResponse): DynamoDBBatchResponse => {
  const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
  const first = records.find((r) => failed.has(r.dynamodb?.SequenceNumber ?? ''));
  return { batchItemFailures: first ? [{ itemIdentifier: first.dynamodb!.SequenceNumber! }] : [] };
};
