import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { db, tableName } from '#lib/db/client';
import { keys, totalsPartition, type Key, type TotalsResource } from '#lib/db/keys';
import { batchGet, keyId } from '#lib/db/batch-get';
import { COUNTER_SHARDS, type WriteSet } from '#lib/db/writes';

/**
 * Sharded counters. A write adds its deltas to the shard its transaction drew (`ws.shard`); a
 * read sums every shard in one request. The sums are exact: DynamoDB numbers are decimals.
 */

const shards = Array.from({ length: COUNTER_SHARDS }, (_, i) => i);

/** Adds `delta` to a list total (orders, orders_<status>, customers) in this transaction's shard. */
export const addTotal = (ws: WriteSet, merchantId: string, resource: TotalsResource, attr: string, delta: Decimal) =>
  ws.update('totals', keys.totals(merchantId, resource, ws.shard)).add(attr, delta);

/** Sums numeric attributes over items (shards of one counter). */
export const sumShards = (items: Record<string, unknown>[]): Record<string, Decimal> => {
  const out: Record<string, Decimal> = {};
  for (const item of items) {
    for (const [k, v] of Object.entries(item)) {
      if (k === 'pk' || k === 'sk') continue;
      if ((typeof v === 'number' || typeof v === 'string') && /^-?\d+(\.\d+)?$/.test(String(v))) {
        out[k] = (out[k] ?? new Decimal(0)).plus(String(v));
      }
    }
  }
  return out;
};

/** A merchant's list totals of one resource: one strongly consistent Query over its shards. */
export const readTotals = async (merchantId: string, resource: TotalsResource): Promise<Record<string, Decimal>> => {
  const { Items } = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :res)',
      ExpressionAttributeValues: { ':pk': totalsPartition(merchantId), ':res': `${resource}#` },
      ConsistentRead: true,
    }),
  );
  return sumShards(Items ?? []);
};

/** Every shard key of the counters named by `counterKey(shard)`. */
export const shardKeys = (counterKey: (shard: number) => Key): Key[] => shards.map(counterKey);

/** Several sharded counters in one BatchGetItem (≤ 100 keys), each summed. */
export const readShardedCounters = async (counters: ((shard: number) => Key)[]): Promise<Record<string, Decimal>[]> => {
  const lists = counters.map(shardKeys);
  const found = await batchGet<Record<string, unknown>>(lists.flat());
  return lists.map((list) => sumShards(list.flatMap((k) => { const item = found.get(keyId(k)); return item ? [item] : []; })));
};
