import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { db, tableName } from '#lib/db/client';
import { keys, statsPartition, totalsPartition, type TotalsResource } from '#lib/db/keys';
import type { WriteSet } from '#lib/db/writes';

/**
 * Sharded counters. A write adds its deltas to the shard its transaction drew (`ws.shard`); a
 * read sums every shard in one request. The sums are exact: DynamoDB numbers are decimals.
 */

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

/** The counter items of a partition between two sort keys, inclusive: strongly consistent, every page. */
export const readCounterItems = async (pk: string, from: string, to: string): Promise<Record<string, unknown>[]> => {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const res = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': pk, ':from': from, ':to': to },
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...((res.Items ?? []) as Record<string, unknown>[]));
    startKey = res.LastEvaluatedKey;
  } while (startKey);
  return items;
};

/**
 * A day's and its month's stats, summed over their shards: one strongly consistent Query over the
 * month's partition from that day on (later days of the month only exist for future-dated writes).
 */
export const readDayAndMonth = async (merchantId: string, day: string) => {
  const items = await readCounterItems(statsPartition(merchantId, day.slice(0, 7)), `D#${day.slice(8, 10)}#`, 'M#~');
  const dayKey = keys.statsDay(merchantId, day, 0).sk.slice(0, 5);
  return {
    day: sumShards(items.filter((i) => String(i.sk).startsWith(dayKey))),
    month: sumShards(items.filter((i) => String(i.sk).startsWith('M#'))),
  };
};
