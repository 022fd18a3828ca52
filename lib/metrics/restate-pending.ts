import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { retrying } from '#lib/db/retry';
import { TTL_ATTRIBUTE } from '#lib/db/table';
import { epochSeconds } from '#lib/db/ttl';

/**
 * Whether a pass after a zone or rate change still has customers to move in the background: a
 * restate job of the merchant is waiting or running (lib/metrics/restate-jobs.ts). Until it ends,
 * the customers it has not reached count in the old zone or at the old rates. One Query of the
 * merchant's job partition (a few items at most); a job past its TTL, not yet swept, is not one,
 * nor is a job retiring an older generation (it moves no figure).
 * Kept apart from the jobs' code, so the reads that answer it do not carry the pass.
 */
export const restatePending = async (merchantId: string): Promise<boolean> => {
  const { Items } = await retrying(() =>
    db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        FilterExpression: '#ttl > :now AND attribute_not_exists(#retire)',
        ProjectionExpression: 'pk',
        ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE, '#retire': 'retire' },
        ExpressionAttributeValues: { ':pk': keys.restateJob(merchantId, '').pk, ':now': epochSeconds() },
        ConsistentRead: true,
      }),
    ),
  );
  return (Items ?? []).length > 0;
};
