import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { churnReasonsPartition, cohortPartition, metricsPartition, salesPartition, salesPartitions, shardPartitions } from '#lib/db/keys';
import { PENDING_MOVES_ENTITY } from '#lib/db/writes';

type Segment = { dimension: string; value: string };
type PendingKey = { pk: string; sk: string; pending_shard?: number };

/**
 * Every pending-moves item of `merchantId` (generation 0) in the whole's, `segments`' and churn by
 * reason's partitions, with its metric shard: each partition Queried with a filter on the entity
 * (the applier gets them from the stream, a read from its range Queries). Never a Scan: the
 * suite's table holds every test's items.
 */
export const pendingItemsOf = async (merchantId: string, segments: Segment[] = []): Promise<PendingKey[]> => {
  const partitions = [
    ...[null, ...segments].flatMap((s) => [
      ...shardPartitions(metricsPartition(merchantId, s)),
      ...shardPartitions(cohortPartition(merchantId, s)),
      ...salesPartitions(salesPartition(merchantId, s)),
    ]),
    churnReasonsPartition(merchantId),
  ];
  const read = await Promise.all(
    partitions.map(async (partition) => {
      const out: PendingKey[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const page = await db().send(
          new QueryCommand({
            TableName: tableName(),
            KeyConditionExpression: 'pk = :pk',
            FilterExpression: 'entity = :e',
            ExpressionAttributeValues: { ':pk': partition, ':e': PENDING_MOVES_ENTITY },
            ProjectionExpression: 'pk, sk, pending_shard',
            ConsistentRead: true,
            ExclusiveStartKey: start,
          }),
        );
        out.push(...((page.Items ?? []) as PendingKey[]));
        start = page.LastEvaluatedKey;
      } while (start);
      return out;
    }),
  );
  return read.flat();
};
