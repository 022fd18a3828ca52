import { paginateScan, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys, merchantDirectoryIndex } from '#lib/db/keys';
import { retrying } from '#lib/db/retry';

/**
 * The merchant directory (gsi1 `MERCHANTS`) is written when a merchant is created; the outbox
 * sweeper lists merchants from it. Merchants created before it existed are added here, once,
 * when upgrading a table: by id, or all of them found by a Scan of merchant items (an operator's
 * one-off read of the whole table; no function may Scan).
 */
export const addToMerchantDirectory = async (merchantId: string): Promise<boolean> => {
  try {
    await retrying(() =>
      db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.merchant(merchantId),
          UpdateExpression: 'SET gsi1pk = :pk, gsi1sk = :sk',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(gsi1pk)',
          ExpressionAttributeValues: { ':pk': merchantDirectoryIndex(merchantId).gsi1pk, ':sk': merchantDirectoryIndex(merchantId).gsi1sk },
        }),
      ),
    );
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
};

/** Every merchant item without a directory entry gets one; returns how many were added. */
export const backfillMerchantDirectory = async (): Promise<{ added: number }> => {
  let added = 0;
  const pages = paginateScan(
    { client: db() },
    {
      TableName: tableName(),
      FilterExpression: 'sk = :merchant AND attribute_not_exists(gsi1pk)',
      ExpressionAttributeValues: { ':merchant': 'MERCHANT' },
      ProjectionExpression: 'merchant_id',
    },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? [])
      if (typeof item.merchant_id === 'string' && (await addToMerchantDirectory(item.merchant_id))) added++;
  }
  return { added };
};
