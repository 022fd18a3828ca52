import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { PENDING_MOVES_ENTITY } from '#lib/db/writes';

/**
 * Every pending-moves item of `merchantId` still in the table, with its metric shard: a test's
 * Scan (the applier gets them from the stream, a read from its partitions' Queries).
 */
export const pendingItemsOf = async (merchantId: string): Promise<{ pk: string; sk: string; pending_shard?: number }[]> => {
  const out: { pk: string; sk: string; pending_shard?: number }[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(
      new ScanCommand({
        TableName: tableName(),
        FilterExpression: 'entity = :e AND begins_with(pk, :m)',
        ExpressionAttributeValues: { ':e': PENDING_MOVES_ENTITY, ':m': `M#${merchantId}#` },
        ProjectionExpression: 'pk, sk, pending_shard',
        ExclusiveStartKey: start,
      }),
    );
    out.push(...((page.Items ?? []) as typeof out));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
};
