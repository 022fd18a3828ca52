import Decimal from 'decimal.js';
import { DeleteCommand, GetCommand, NumberValue, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { batchGet, keyId } from '#lib/db/batch-get';
import { db, tableName } from '#lib/db/client';
import { cohortPartition, indexes, keys, metricsPartition } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { STORED_ATTR } from '#lib/metrics/rules';
import { addTimelineChange, aggregateKey, timelinesFrom } from '#lib/metrics/store';
import {
  addContribution,
  addContributions,
  contributions,
  difference,
  firstDifference,
  lineOf,
  orderLine,
  replaceLine,
  type Contributions,
  type OrderFacts,
  type Timeline,
} from '#lib/metrics/timeline';
import { retrying } from '#lib/db/retry';
import { applyPending, WriteSet } from '#lib/db/writes';
import { getMerchant } from '#lib/merchants/store';

/**
 * `ops metrics rebuild`: makes a merchant's stored aggregates equal the sum of its customers'
 * timelines (what every write keeps them equal to), for data written by an earlier version of the
 * item shapes (year items before the month roll-ups) or repaired by hand. It also gives live
 * customers written before the search index (gsi4) its keys. Everything is read by key or from the
 * table (strongly consistent); corrections are `ADD`s of the difference on shard 0, so running it
 * twice changes nothing the second time. Run it while the merchant's writes are paused: a write
 * between the timeline reads and the aggregate reads would be counted twice.
 */

const ATTR_OF_STORED = Object.fromEntries(Object.entries(STORED_ATTR).map(([logical, stored]) => [stored, logical]));
const CUSTOMERS_PER_READ = 50; // customer + timeline: 100 keys, one BatchGetItem

/** The aggregate id (`D#<day>`, `M#<month>`, `C#<cohort>#<month>`) of a stored item, or `Y#…` for a retired year item. */
const aggregateIdOf = (partition: 'metrics' | 'cohort', sk: string) => {
  const withoutShard = sk.slice(0, sk.lastIndexOf('#'));
  return partition === 'metrics' ? withoutShard : `C#${withoutShard}`;
};

export type RebuildReport = {
  customers_read: number;
  timelines: number;
  aggregates_corrected: number;
  year_items_removed: number;
  search_keys_added: number;
  pending_moves_applied: number;
  timelines_rederived: number;
};

/**
 * A customer's timeline with its order and subscription lines derived again from those records as
 * they now are (the rules of `orderLine` and `subscriptionTimeline`): an order that does not count
 * (or is now another customer's) has no line, nor has a deleted subscription or one in another
 * currency. Lines of records that still count are kept as they are.
 */
const rederiveLines = async (merchantId: string, reportingCurrency: string, customerId: number, tl: Timeline): Promise<Timeline> => {
  const orderNos = Object.keys(tl)
    .filter((l) => l.startsWith('O'))
    .map((l) => l.slice(1));
  const subIds = Object.keys(tl)
    .filter((l) => l.startsWith('S'))
    .map((l) => Number(l.slice(1)));
  const found = await batchGet<Record<string, unknown>>([
    ...orderNos.map((n) => keys.order(merchantId, n)),
    ...subIds.map((s) => keys.subscription(merchantId, s)),
  ]);
  let next = tl;
  for (const no of orderNos) {
    const order = found.get(keyId(keys.order(merchantId, no))) as (OrderFacts & { customer_id: number }) | undefined;
    const points = order && Number(order.customer_id) === customerId ? orderLine(order, reportingCurrency) : [];
    if (JSON.stringify(points) !== JSON.stringify(tl[lineOf.order(no)])) next = replaceLine(next, lineOf.order(no), points);
  }
  for (const id of subIds) {
    const sub = found.get(keyId(keys.subscription(merchantId, id)));
    const gone = !sub || sub.deleted_at || ((sub.currency as string | undefined) ?? reportingCurrency) !== reportingCurrency;
    if (gone) next = replaceLine(next, lineOf.subscription(id), []);
  }
  return next;
};

export const rebuildMerchantAggregates = async (merchantId: string): Promise<RebuildReport> => {
  const { Item: seq } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.sequences(merchantId), ConsistentRead: true }));
  const lastCustomerId = Number(seq?.customer ?? 0);

  const reportingCurrency = (await getMerchant(merchantId))?.reporting_currency ?? 'TWD';
  const target: Contributions = new Map();
  let linesRederived = 0;
  let timelines = 0;
  let searchKeysAdded = 0;
  for (let first = 1; first <= lastCustomerId; first += CUSTOMERS_PER_READ) {
    const ids = Array.from({ length: Math.min(CUSTOMERS_PER_READ, lastCustomerId - first + 1) }, (_, i) => first + i);
    const found = await batchGet<Record<string, unknown>>(
      ids.flatMap((id) => [keys.customer(merchantId, id), keys.customerTimeline(merchantId, id)]),
    );
    const read = await timelinesFrom(merchantId, found, ids);
    for (const id of ids) {
      if (found.has(keyId(keys.customerTimeline(merchantId, id)))) {
        timelines += 1;
        const state = read.get(id)!;
        // Lines written by earlier rules are derived again from their orders and subscriptions as they now are.
        const current = await rederiveLines(merchantId, reportingCurrency, id, state.timeline);
        if (firstDifference(state.timeline, current) !== null) {
          await retrying(async () => {
            const fresh = (await timelinesFrom(merchantId, await batchGet([keys.customerTimeline(merchantId, id)]), [id])).get(id)!;
            const ws = new WriteSet();
            addTimelineChange(ws, merchantId, id, fresh, await rederiveLines(merchantId, reportingCurrency, id, fresh.timeline));
            await ws.commit();
          });
          linesRederived += 1;
        }
        addContributions(target, contributions(current));
      }
      const customer = found.get(keyId(keys.customer(merchantId, id)));
      if (customer && !customer.deleted_at && !customer.gsi4pk) {
        const search = indexes.customerSearch(merchantId, String(customer.created_at), id);
        await db()
          .send(
            new UpdateCommand({
              TableName: tableName(),
              Key: keys.customer(merchantId, id),
              UpdateExpression: 'SET gsi4pk = :pk, gsi4sk = :sk',
              // Still live and still without the keys (a delete or a newer write decides otherwise).
              ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleted_at) AND attribute_not_exists(gsi4pk)',
              ExpressionAttributeValues: { ':pk': search.gsi4pk, ':sk': search.gsi4sk },
            }),
          )
          .then(
            () => (searchKeysAdded += 1),
            (err: Error) => {
              if (err.name !== 'ConditionalCheckFailedException') throw err;
            },
          );
      }
    }
  }

  // Pending moves are applied first (each exactly once), so the stored items below are whole.
  let pendingApplied = 0;
  for (const partition of [metricsPartition(merchantId), cohortPartition(merchantId)]) {
    for (const item of await queryAll<{ pk: string; sk: string; moves?: string }>({ partition }, ['pk', 'sk', 'moves'])) {
      if (item.moves !== undefined && (await applyPending({ pk: item.pk, sk: item.sk }))) pendingApplied += 1;
    }
  }

  const stored: Contributions = new Map();
  const yearItems: { pk: string; sk: string }[] = [];
  const attrs = ['pk', 'sk', ...Object.values(STORED_ATTR)];
  for (const partition of ['metrics', 'cohort'] as const) {
    const items = await queryAll<Record<string, unknown>>(
      { partition: partition === 'metrics' ? metricsPartition(merchantId) : cohortPartition(merchantId) },
      attrs,
    );
    for (const item of items) {
      const id = aggregateIdOf(partition, String(item.sk));
      if (id.startsWith('Y#')) {
        yearItems.push({ pk: String(item.pk), sk: String(item.sk) });
        continue;
      }
      for (const [storedAttr, logical] of Object.entries(ATTR_OF_STORED)) {
        if (item[storedAttr] !== undefined) addContribution(stored, id, logical, new Decimal(String(item[storedAttr])));
      }
    }
  }

  const corrections = difference(stored, target);
  for (const [id, moves] of corrections) {
    const names: Record<string, string> = {};
    const values: Record<string, NumberValue> = {};
    const adds = [...moves].map(([attr, delta], i) => {
      names[`#a${i}`] = STORED_ATTR[attr];
      values[`:d${i}`] = NumberValue.from(delta.toFixed()); // exact: a JS number could round it
      return `#a${i} :d${i}`;
    });
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: aggregateKey(merchantId, id, 0),
        UpdateExpression: `ADD ${adds.join(', ')}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
  }
  for (const key of yearItems) await db().send(new DeleteCommand({ TableName: tableName(), Key: key }));

  return {
    customers_read: lastCustomerId,
    timelines,
    aggregates_corrected: corrections.size,
    year_items_removed: yearItems.length,
    search_keys_added: searchKeysAdded,
    pending_moves_applied: pendingApplied,
    timelines_rederived: linesRederived,
  };
};
