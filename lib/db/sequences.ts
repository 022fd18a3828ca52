import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import type { WriteSet } from '#lib/db/writes';

export type Sequence = 'customer' | 'order' | 'subscription' | 'subscription_event' | 'webhook_endpoint' | 'activity';

/** The activity log's ids live in an item of their own (batches never meet other writers' sequences). */
const sequenceItem = (merchantId: string, seq: Sequence) => (seq === 'activity' ? keys.activitySequence(merchantId) : keys.sequences(merchantId));

/**
 * Allocates ids from the merchant's per-resource sequences in one atomic ADD (transactions return
 * no values, so ids are taken before the write; a gap after a failed write is harmless).
 * Returns the first id of each requested block.
 */
export const allocateIds = async (
  merchantId: string,
  counts: Partial<Record<Sequence, number>>,
): Promise<Partial<Record<Sequence, number>>> => {
  const wanted = Object.entries(counts).filter(([, n]) => (n ?? 0) > 0) as [Sequence, number][];
  if (!wanted.length) return {};
  const key = sequenceItem(merchantId, wanted[0][0]);
  if (wanted.some(([seq]) => sequenceItem(merchantId, seq).sk !== key.sk)) throw new Error('allocateIds: one sequence item per call');
  const names: Record<string, string> = {};
  const values: Record<string, number> = {};
  const adds = wanted.map(([seq, n], i) => {
    names[`#s${i}`] = seq;
    values[`:n${i}`] = n;
    return `#s${i} :n${i}`;
  });
  const { Attributes } = await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: key,
      UpdateExpression: `ADD ${adds.join(', ')}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  const out: Partial<Record<Sequence, number>> = {};
  for (const [seq, n] of wanted) out[seq] = Number(Attributes![seq]) - n + 1;
  return out;
};

/**
 * Ids claimed inside a transaction instead of before it: `read` is the sequence item as read in
 * the attempt (one BatchGetItem with the other items it needs, so no request of its own). The
 * transaction sets the sequence past the claimed block on condition that it still holds what was
 * read; a concurrent allocation fails the condition and the attempt runs again from fresh reads.
 */
export const claimIds = (ws: WriteSet, merchantId: string, read: Record<string, unknown> | undefined, seq: Sequence, n = 1): number => {
  const current = read?.[seq];
  const from = Number(current ?? 0);
  ws.update('sequence', keys.sequences(merchantId))
    .set(seq, from + n)
    .when(
      current === undefined
        ? { expression: 'attribute_not_exists(#s)', names: { '#s': seq } }
        : { expression: '#s = :n', names: { '#s': seq }, values: { ':n': from } },
    );
  return from + 1;
};
