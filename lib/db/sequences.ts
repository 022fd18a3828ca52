import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';

export type Sequence = 'customer' | 'order' | 'subscription' | 'subscription_event' | 'webhook_endpoint' | 'activity';

/** The activity log's ids live in an item of their own (batches never meet other writers' sequences). */
const sequenceItem = (merchantId: string, seq: Sequence) =>
  seq === 'activity' ? keys.activitySequence(merchantId) : keys.sequences(merchantId);

/**
 * Allocates ids from the merchant's per-resource sequences in one atomic ADD (transactions return
 * no values, so ids are taken before the write; a gap after a failed write is harmless). No
 * transaction ever names a sequence item, so an allocation never waits on, or fails, another
 * write of the merchant. The ADD is sent once (lib/db/client.ts): a lost answer leaves a gap, never
 * an id given twice. Returns the first id of each requested block.
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
