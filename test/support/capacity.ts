import { DynamoDBClient, GetItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { InitializeMiddleware, MetadataBearer } from '@smithy/types';
import { config } from '#lib/config';
import { db, tableName } from '#lib/db/client';
import { GSIS, TABLE_KEYS } from '#lib/db/table';
import { COUNTER_SHARDS } from '#lib/db/writes-constants';
import { CUSTOMER_SEARCH_SHARDS, METRIC_SHARDS } from '#lib/db/keys';
import { writtenKeys, type WrittenKey } from './faults.ts';
import { itemSize } from './write-limits.ts';

/**
 * The capacity model: what each partition key (of the table and of every index) is written at,
 * in write capacity units, for a given load. The recorder sees every write the API sends, reads
 * each written item's image before and after it (strongly consistent, through a client of its own,
 * so the API's request tally is unchanged), and prices it as DynamoDB does:
 *
 * - a table write costs ⌈max(old, new) / 1 KB⌉ WCU, twice that inside a transaction;
 * - an index entry costs ⌈its projected size / 1 KB⌉ where it is put, and again where it is removed
 *   when its key moved; an update that changes neither the index key nor a projected attribute
 *   writes nothing to that index. The transaction's doubling applies to the table's items only:
 *   an index entry costs what the same write costs outside a transaction (docs/scale.md, "How
 *   the model prices a write", has the evidence).
 *
 * Loads run one request at a time, so the images around each write are that write's own.
 */
export type CapacityRecord = { key: string; wcu: number; op: string };

type Image = Record<string, AttributeValue> | undefined;

const str = (v: unknown): string => {
  if (v && typeof v === 'object' && 'S' in (v as object)) return String((v as { S: string }).S);
  return String(v);
};

const units = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));

/** The attributes an index entry holds: its keys, the table's keys and what it projects. */
const entryOf = (g: (typeof GSIS)[number], image: Image): Image => {
  if (!image?.[g.partitionKey]) return undefined;
  if (!('nonKeyAttributes' in g)) return image;
  const kept: string[] = [g.partitionKey, g.sortKey, TABLE_KEYS.partitionKey, TABLE_KEYS.sortKey, ...g.nonKeyAttributes];
  return Object.fromEntries(Object.entries(image).filter(([name]) => kept.includes(name)));
};

/** What one write action costs, by partition key (`table <pk>` / `<index> <pk>`). */
export const price = (before: Image, after: Image, transactional: boolean, pk: string): Array<{ key: string; wcu: number }> => {
  const factor = transactional ? 2 : 1;
  const size = (i: Image) => (i ? itemSize(i as unknown as Record<string, Record<string, unknown>>) : 0);
  const out = [{ key: `table ${pk}`, wcu: units(Math.max(size(before), size(after))) * factor }];
  for (const g of GSIS) {
    const [o, n] = [entryOf(g, before), entryOf(g, after)];
    const keyOf = (e: Image) => (e ? `${str(e[g.partitionKey])}\u0000${str(e[g.sortKey])}` : '');
    if (o && n && keyOf(o) === keyOf(n)) {
      if (JSON.stringify(o) !== JSON.stringify(n))
        out.push({ key: `${g.indexName} ${str(n[g.partitionKey])}`, wcu: units(Math.max(size(o), size(n))) });
      continue;
    }
    if (o) out.push({ key: `${g.indexName} ${str(o[g.partitionKey])}`, wcu: units(size(o)) });
    if (n) out.push({ key: `${g.indexName} ${str(n[g.partitionKey])}`, wcu: units(size(n)) });
  }
  return out;
};

export type CapacityRecorder = { records: CapacityRecord[]; uninstall(): void };

/** Records the price of every write the shared client sends until uninstalled. */
export const recordCapacity = (): CapacityRecorder => {
  const endpoint = config.dynamoEndpoint();
  const peekClient = new DynamoDBClient({
    region: config.region(),
    ...(endpoint ? { endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
  const peek = async (a: WrittenKey): Promise<Image> =>
    (await peekClient.send(new GetItemCommand({ TableName: tableName(), Key: { pk: { S: a.pk }, sk: { S: a.sk } }, ConsistentRead: true })))
      .Item;
  const records: CapacityRecord[] = [];
  const name = `capacity-model#${Math.random().toString(36).slice(2, 8)}`;
  const middleware: InitializeMiddleware<Record<string, any>, MetadataBearer> = (next, context) => async (args) => {
    // The client command's name (PutItemCommand…), lib-dynamodb's commands included.
    const op = String(context.commandName ?? '').replace(/Command$/, '');
    const actions = writtenKeys(op, args.input);
    if (!actions.length) return next(args);
    const before = await Promise.all(actions.map(peek));
    try {
      return await next(args);
    } finally {
      const after = await Promise.all(actions.map(peek));
      actions.forEach((a, i) => {
        for (const r of price(before[i], after[i], a.transactional, a.pk)) records.push({ ...r, op });
      });
    }
  };
  db().middlewareStack.add(middleware, { step: 'initialize', priority: 'low', name });
  return {
    records,
    uninstall: () => {
      db().middlewareStack.remove(name);
      peekClient.destroy();
    },
  };
};

/** A counter shard's partition key: its family (the key without the shard) and how many shards it has. */
const counterFamily = (key: string): { family: string; shards: number } | undefined => {
  // The counters, the figures' versions and generation copies, and a generation's segment registry: one key a counter shard.
  const counter =
    /^(table M#[^#]+#(?:TOTALS|FIGURES|GENERATION|STATS#\d{4}-\d{2}))#\d{3}$/.exec(key)?.[1] ??
    /^(table M#[^#]+#G\d+#SEGMENTS)#\d{2}$/.exec(key)?.[1];
  if (counter) return { family: counter, shards: COUNTER_SHARDS };
  // The MRR, cohort and sales aggregates of the whole or a segment and the pending-moves backlog counts, one partition key per metric shard.
  const metric = /^(table M#[^#]+#(?:MRR|COHORT|SALES)(?:#.*)?|table M#[^#]+#PENDING)#\d{2}$/.exec(key)?.[1];
  if (metric) return { family: metric, shards: METRIC_SHARDS };
  // The customer search index, one partition key per shard of customer ids.
  const search = /^(gsi4 M#[^#]+#CUSTOMERS)#\d$/.exec(key)?.[1];
  return search ? { family: search, shards: CUSTOMER_SEARCH_SHARDS } : undefined;
};

/**
 * WCU per second on each partition key when the recorded load runs `scale` times a second.
 *
 * A load run here goes through one process, which keeps its counter shard from one transaction
 * to the next; at a merchant's full speed many writers run at once, each on a shard of its own
 * (one that meets another conflicts and draws again). So a counter family's writes are priced
 * spread evenly over its COUNTER_SHARDS keys, the MRR and cohort aggregates' (whose shard is
 * the transaction's counter shard modulo METRIC_SHARDS) over their METRIC_SHARDS keys (a generation's
 * copies and segment registry, one a counter shard, over COUNTER_SHARDS), and the
 * customer search index's (whose shard is the customer id modulo CUSTOMER_SEARCH_SHARDS: a
 * merchant's new customers take them in turn) over its CUSTOMER_SEARCH_SHARDS keys, each reported
 * as `<family>#<each>`.
 */
export const ratesAt = (records: CapacityRecord[], scale: number): Map<string, number> => {
  const out = new Map<string, number>();
  for (const r of records) {
    const family = counterFamily(r.key);
    const key = family ? `${family.family}#<each>` : r.key;
    out.set(key, (out.get(key) ?? 0) + (r.wcu * scale) / (family?.shards ?? 1));
  }
  return out;
};

/** A partition key with the merchant's id and the entity ids written as placeholders (for reports). */
export const keyShape = (key: string, merchantId: string): string =>
  key
    .split(`M#${merchantId}`)
    .join('M#<m>')
    .replace(/#\d{4}-\d{2}(?=#|$)/g, '#<yyyy-mm>')
    .replace(/#\d+(?=#|$)/g, '#<n>');
