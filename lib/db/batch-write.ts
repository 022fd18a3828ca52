import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import type { Key } from '#lib/db/keys';
import { pauseOrGiveUp, retrying } from '#lib/db/retry';

/** Items a BatchWriteItem takes. */
export const BATCH_WRITE_LIMIT = 25;

/** One write of a BatchWriteItem: an item put whole, or a key deleted (unconditional both). */
export type BatchWrite = { put: Key & Record<string, unknown> } | { delete: Key };
export const keyOf = (w: BatchWrite): Key => ('put' in w ? w.put : w.delete);
const requestOf = (w: BatchWrite) =>
  'put' in w ? { PutRequest: { Item: w.put } } : { DeleteRequest: { Key: { pk: w.delete.pk, sk: w.delete.sk } } };

/**
 * Up to 25 puts and deletes with one BatchWriteItem (for items no other writer names). Unprocessed
 * ones (DynamoDB's partial answer under throttling) go again with the retry policy's pause, within
 * the invocation's deadline; so does a request throttled as a whole.
 */
export const batchWrite = async (writes: BatchWrite[]): Promise<void> => {
  if (writes.length > BATCH_WRITE_LIMIT)
    throw new Error(`a BatchWriteItem takes at most ${BATCH_WRITE_LIMIT} writes, not ${writes.length}`);
  let pending = writes.map(requestOf);
  for (let attempt = 1; pending.length; attempt++) {
    // Throttled as a whole: sent again under the retry policy (the same puts and deletes again change nothing).
    const res = await retrying(() => db().send(new BatchWriteCommand({ RequestItems: { [tableName()]: pending } })));
    pending = (res.UnprocessedItems?.[tableName()] ?? []) as typeof pending;
    if (pending.length) await pauseOrGiveUp(attempt, 'throttle');
  }
};
