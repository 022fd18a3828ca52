import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { pauseOrGiveUp, retrying } from '#lib/db/retry';

/** Items a BatchWriteItem takes. */
export const BATCH_WRITE_LIMIT = 25;

/**
 * Puts up to 25 items with one BatchWriteItem (unconditional: for items no other writer names).
 * Unprocessed items (DynamoDB's partial answer under throttling) go again with the retry policy's
 * pause, within the invocation's deadline; so does a request throttled as a whole.
 */
export const batchPut = async (items: Record<string, unknown>[]): Promise<void> => {
  if (items.length > BATCH_WRITE_LIMIT) throw new Error(`a BatchWriteItem takes at most ${BATCH_WRITE_LIMIT} items, not ${items.length}`);
  let pending = items.map((Item) => ({ PutRequest: { Item } }));
  for (let attempt = 1; pending.length; attempt++) {
    // Throttled as a whole: sent again under the retry policy (puts of the same items are idempotent).
    const res = await retrying(() => db().send(new BatchWriteCommand({ RequestItems: { [tableName()]: pending } })));
    pending = (res.UnprocessedItems?.[tableName()] ?? []) as typeof pending;
    if (pending.length) await pauseOrGiveUp(attempt, 'throttle');
  }
};
