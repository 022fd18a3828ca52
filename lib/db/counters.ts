import { QueryCommand, TransactGetCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { batchGet, keyId } from '#lib/db/batch-get';
import { db, tableName } from '#lib/db/client';
import { keys, legacyCounterPartitions, type Key, type TotalsResource } from '#lib/db/keys';
import { COUNTER_SHARDS } from '#lib/db/writes-constants';
import { retrying, RetryableError } from '#lib/db/retry';
import { WriteConflict, WriteSet } from '#lib/db/writes';

/**
 * Sharded counters. A write adds its deltas to the shard its transaction drew (`ws.shard`); a
 * read sums every shard, fetched by their exact keys in one BatchGetItem. The sums are exact:
 * DynamoDB numbers are decimals.
 */

/** Shards a resource's totals are spread over: the endpoint count is one item (it enforces the cap). */
const shardsOf = (resource: TotalsResource): number => (resource === 'WEBHOOK_ENDPOINTS' ? 1 : COUNTER_SHARDS);
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** The keys of every shard of a resource's list totals (a list page may fetch them with its items). */
export const totalsKeys = (merchantId: string, resource: TotalsResource): Key[] =>
  range(shardsOf(resource)).map((shard) => keys.totals(merchantId, resource, shard));

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

/** A merchant's list totals of one resource: one strongly consistent BatchGetItem of its shards. */
export const readTotals = async (merchantId: string, resource: TotalsResource): Promise<Record<string, Decimal>> =>
  sumShards([...(await batchGet(totalsKeys(merchantId, resource))).values()]);

/**
 * A list's total kept by its totals shards (`attr` of `resource`, never below 0), as a list page
 * takes it: the shards' keys, which the page fetches with its items, and their sum.
 */
export const listTotal = (merchantId: string, resource: TotalsResource, attr: string) => ({
  keys: totalsKeys(merchantId, resource),
  sum: (shards: Record<string, unknown>[]): number => Math.max(0, sumShards(shards)[attr]?.toNumber() ?? 0),
});

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

/** Items one TransactGetItems may name. */
const TRANSACT_GET_MAX = 100;

/** The cancellation of a TransactGetItems as a retryable error: throttled, or a write in flight on an item. */
const cancelledRead = (err: unknown): RetryableError | null => {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] } | null;
  if (e?.name !== 'TransactionCanceledException') return null;
  const codes = (e.CancellationReasons ?? []).map((r) => r.Code);
  if (codes.some((c) => c === 'ThrottlingError' || c === 'ProvisionedThroughputExceeded'))
    return new RetryableError('throttle', 'read throttled');
  if (codes.includes('TransactionConflict')) return new RetryableError('contention', 'a write is in flight on an item read');
  return null;
};

/**
 * The items of some counter shards, each shard's keys read as of one instant: shards are packed
 * whole into TransactGetItems of at most 100 items, sent together. A transaction's answer is one
 * state of its items, and an order write adds to one shard only, so every write is in the answer
 * wholly or not at all. DynamoDB cancels a TransactGetItems while a write is in flight on one of its
 * items: the cancelled group is split in two and each half read again, down to one shard, which is
 * retried with the policy's pauses (`retrying`), so a busy merchant's read costs more requests,
 * never a torn answer. Missing items are absent from the map.
 */
export const readShardSnapshots = async (shards: Key[][]): Promise<Map<string, Record<string, unknown>>> => {
  const out = new Map<string, Record<string, unknown>>();
  const groups: Key[][][] = [];
  for (const shard of shards.filter((ks) => ks.length)) {
    const last = groups.at(-1);
    if (last && last.flat().length + shard.length <= TRANSACT_GET_MAX) last.push(shard);
    else groups.push([shard]);
  }
  const readGroup = async (group: Key[][]): Promise<void> => {
    const list = group.flat();
    try {
      const res = await retrying(async () => {
        try {
          return await db().send(new TransactGetCommand({ TransactItems: list.map((Key) => ({ Get: { TableName: tableName(), Key } })) }));
        } catch (err) {
          const cancelled = cancelledRead(err);
          // A group of several shards is split at once rather than retried whole.
          if (cancelled?.kind === 'contention' && group.length > 1) throw new SplitGroup();
          throw cancelled ?? err;
        }
      });
      (res.Responses ?? []).forEach((r, i) => {
        if (r?.Item) out.set(keyId(list[i]), r.Item as Record<string, unknown>);
      });
    } catch (err) {
      if (!(err instanceof SplitGroup)) throw err;
      const half = Math.ceil(group.length / 2);
      await Promise.all([readGroup(group.slice(0, half)), readGroup(group.slice(half))]);
    }
  };
  await Promise.all(groups.map(readGroup));
  return out;
};

class SplitGroup extends Error {}

/**
 * Counters written before each shard had a partition key of its own (`M#<m>#TOTALS`,
 * `M#<m>#STATS#<yyyy-mm>`, 256 shards in one partition) are folded into today's layout: each old item is deleted and its numbers added to
 * the matching new shard in one transaction, so a fold interrupted or run twice never counts twice.
 * Stats are folded for the months reads use (`months`: the current one and any later).
 */
export const foldLegacyCounters = async (merchantId: string, months: string[]): Promise<{ folded: number }> => {
  let folded = 0;
  const fold = async (item: Record<string, unknown>, target: Key) => {
    const ws = new WriteSet(0);
    ws.delete('legacy counter', { pk: String(item.pk), sk: String(item.sk) }, { expression: 'attribute_exists(pk)' });
    const update = ws.update('counter', target);
    for (const [attr, value] of Object.entries(sumShards([item]))) update.add(attr, value);
    try {
      await ws.commit();
      folded++;
    } catch (err) {
      if (!(err instanceof WriteConflict && err.tags.includes('legacy counter'))) throw err;
    }
  };
  const shardOf = (sk: string) => Number(sk.slice(sk.lastIndexOf('#') + 1)) % COUNTER_SHARDS;
  for (const item of await readCounterItems(legacyCounterPartitions.totals(merchantId), '#', '~')) {
    const sk = String(item.sk);
    const resource = sk.slice(0, sk.lastIndexOf('#')) as TotalsResource;
    await fold(item, keys.totals(merchantId, resource, resource === 'WEBHOOK_ENDPOINTS' ? 0 : shardOf(sk)));
  }
  for (const month of months) {
    for (const item of await readCounterItems(legacyCounterPartitions.stats(merchantId, month), '#', '~')) {
      const sk = String(item.sk);
      const target = sk.startsWith('D#')
        ? keys.statsDay(merchantId, `${month}-${sk.slice(2, 4)}`, shardOf(sk))
        : keys.statsMonth(merchantId, month, shardOf(sk));
      await fold(item, target);
    }
  }
  return { folded };
};
