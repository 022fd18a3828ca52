import { createHash } from 'node:crypto';
import { QueryCommand, type QueryCommandInput, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import { InvalidError } from '#lib/errors';
import { CURSOR_INVALID, checkPageOffset, cursorMeta, decodeCursor, encodeCursor, type PageMeta } from '#lib/shared/pagination';
import { batchGet, keyId } from '#lib/db/batch-get';
import { db, tableName } from '#lib/db/client';
import { ENTRY_OF, type Key } from '#lib/db/keys';
import { GSIS, type IndexName } from '#lib/db/table';
import type { Condition } from '#lib/db/writes';

export type IndexQuery = {
  /** A global secondary index, or the table itself (strongly consistent) when absent. */
  index?: IndexName;
  partition: string;
  /** Inclusive sort-key bounds. */
  from?: string;
  to?: string;
  filter?: Condition;
  /** Newest first unless false. */
  descending?: boolean;
  /** Whether a listed item is still in the list (one that left it after the index was read, e.g. a soft delete, is skipped). */
  live?: (item: Record<string, unknown>) => boolean;
  /**
   * An item read beside each listed row, in the same BatchGetItem as the listed items (e.g. the
   * customer's timeline head for its figures): one request fewer than reading them after the page.
   */
  companion?: (row: Record<string, unknown>) => Key | null;
};

/** One row of an index or of the table, as the Query returns it: an item, or a list entry naming one. */
type Row = Record<string, unknown>;

const TABLE_KEY = { partitionKey: 'pk', sortKey: 'sk' } as const;
const indexDef = (name: IndexName | undefined) => (name ? GSIS.find((g) => g.indexName === name)! : TABLE_KEY);

const baseInput = (q: IndexQuery): QueryCommandInput => {
  const g = indexDef(q.index);
  const names: Record<string, string> = { '#ipk': g.partitionKey, ...(q.filter?.names ?? {}) };
  const values: Record<string, unknown> = { ':ipk': q.partition, ...(q.filter?.values ?? {}) };
  let keyCond = '#ipk = :ipk';
  if (q.from !== undefined || q.to !== undefined) {
    names['#isk'] = g.sortKey;
    if (q.from !== undefined && q.to !== undefined) {
      keyCond += ' AND #isk BETWEEN :ifrom AND :ito';
      values[':ifrom'] = q.from;
      values[':ito'] = q.to;
    } else if (q.from !== undefined) {
      keyCond += ' AND #isk >= :ifrom';
      values[':ifrom'] = q.from;
    } else {
      keyCond += ' AND #isk <= :ito';
      values[':ito'] = q.to;
    }
  }
  return {
    TableName: tableName(),
    ...(q.index ? { IndexName: q.index } : { ConsistentRead: true }),
    KeyConditionExpression: keyCond,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ...(q.filter ? { FilterExpression: q.filter.expression } : {}),
    ScanIndexForward: q.descending === false,
  };
};

/** The attributes of an item's key in the table and in the queried index (each once). */
const keyAttributes = (q: IndexQuery): string[] => {
  const g = indexDef(q.index);
  return [...new Set(['pk', 'sk', g.partitionKey, g.sortKey])];
};

const keyOf = (q: IndexQuery, item: Record<string, unknown>) => Object.fromEntries(keyAttributes(q).map((attr) => [attr, item[attr]]));

/**
 * The largest `Limit` a skip Query sends. DynamoDB refuses a Limit of 2^31 or more; a 1 MB Query
 * page of our items holds far fewer than this, so the cap never costs an extra request.
 */
export const MAX_QUERY_LIMIT = 10_000;

/**
 * The rows of an offset page of an index: skipped rows are read as keys only (deep pages stay
 * cheap in bytes, but cost O(offset) reads: callers that know the total skip pages past the end);
 * page 1 of an unfiltered index is a single Query.
 */
const rowsAtOffset = async (q: IndexQuery, offset: number, limit: number): Promise<Row[]> => {
  const keyNames = Object.fromEntries(keyAttributes(q).map((attr, i) => [`#k${i}`, attr]));
  const input = baseInput(q);
  let startKey: Record<string, unknown> | undefined;
  let skipped = 0;
  while (skipped < offset) {
    const res = await db().send(
      new QueryCommand({
        ...input,
        ExpressionAttributeNames: { ...input.ExpressionAttributeNames, ...keyNames },
        ProjectionExpression: Object.keys(keyNames).join(', '),
        ...(q.filter ? {} : { Limit: Math.min(offset - skipped, MAX_QUERY_LIMIT) }),
        ExclusiveStartKey: startKey,
      }),
    );
    const items = res.Items ?? [];
    const need = offset - skipped;
    if (items.length >= need) {
      if (need > 0) startKey = keyOf(q, items[need - 1]);
      skipped = offset;
      if (items.length === need && !res.LastEvaluatedKey) return [];
      break;
    }
    skipped += items.length;
    if (!res.LastEvaluatedKey) return [];
    startKey = res.LastEvaluatedKey;
  }
  return rowsAfter(q, startKey, limit);
};

/** One offset page of an index, as items (list entries replaced by the items they name). */
export const queryPage = async <T>(q: IndexQuery, offset: number, limit: number): Promise<T[]> =>
  (await itemsOf<T>(q, await rowsAtOffset(q, offset, limit))).items;

/** Number of matching items (reads the range; used only where no counter keeps the total). */
export const countQuery = async (q: IndexQuery): Promise<number> => {
  const input = baseInput(q);
  let total = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const res = await db().send(new QueryCommand({ ...input, Select: 'COUNT', ExclusiveStartKey: startKey }));
    total += res.Count ?? 0;
    startKey = res.LastEvaluatedKey;
  } while (startKey);
  return total;
};

/** Every matching item with a projection (for in-memory search over a merchant's list). */
export const queryAll = async <T>(q: IndexQuery, projection: string[]): Promise<T[]> => {
  const input = baseInput(q);
  const names = { ...input.ExpressionAttributeNames };
  const proj = projection.map((attr, i) => {
    names[`#p${i}`] = attr;
    return `#p${i}`;
  });
  const out: T[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const res = await db().send(
      new QueryCommand({
        ...input,
        ExclusiveStartKey: startKey,
        // No projection: every attribute (a read costs the item's whole size either way).
        ...(proj.length ? { ExpressionAttributeNames: names, ProjectionExpression: proj.join(', ') } : {}),
      }),
    );
    out.push(...((res.Items ?? []) as T[]));
    startKey = res.LastEvaluatedKey;
  } while (startKey);
  return out;
};

/**
 * A list's total: counted by a function of its own (a Query COUNT, or counters read apart), or
 * summed from counter items read by key (`keys`, e.g. a resource's totals shards), which a page
 * fetches in the BatchGetItem that fetches its items.
 */
export type ListTotal = (() => Promise<number>) | { keys: Key[]; sum: (items: Record<string, unknown>[]) => number };

/** The total on its own (a deep offset page reads it before its rows). */
const readTotal = async (total: ListTotal): Promise<number> =>
  typeof total === 'function' ? total() : total.sum([...(await batchGet(total.keys)).values()]);

type PageRead<T> = { rows: Row[]; items: T[]; companions: Map<string, Row>; total: number };

/**
 * The rows of one page and their items with the total: a keyed total comes from the items'
 * BatchGetItem, any other is counted beside the page (the budgeted request count of page 1 and of
 * a cursor page, whatever its depth).
 */
const pageWithTotal = async <T>(q: IndexQuery, rows: () => Promise<Row[]>, total: ListTotal): Promise<PageRead<T>> => {
  if (typeof total === 'function') {
    const [n, page] = await Promise.all([total(), rows().then(async (r) => ({ rows: r, ...(await itemsOf<T>(q, r)) }))]);
    return { rows: page.rows, items: page.items, companions: page.companions, total: n };
  }
  const r = await rows();
  const { items, extra, companions } = await itemsOf<T>(q, r, total.keys);
  return { rows: r, items, companions, total: total.sum(extra) };
};

/**
 * One offset page of a list with its total. Page 1 reads the total with the page (above); deeper
 * pages read the total first, so a page past the end reads nothing more and a skip is bounded by
 * the total.
 */
const offsetPage = async <T>(q: IndexQuery, total: ListTotal, page: number, perPage: number): Promise<PageRead<T>> => {
  const offset = (page - 1) * perPage;
  if (offset === 0) return pageWithTotal<T>(q, () => rowsAfter(q, undefined, perPage), total);
  const n = await readTotal(total);
  if (offset >= n) return { rows: [], items: [], companions: new Map(), total: n };
  const rows = await rowsAtOffset(q, offset, perPage);
  return { rows, ...(await itemsOf<T>(q, rows)), total: n };
};

/** The list a cursor belongs to: its index, partition, bounds and filter (a cursor of another list is refused). */
const listFingerprint = (q: IndexQuery): string =>
  createHash('sha256')
    .update(JSON.stringify([q.index ?? '', q.partition, q.from ?? '', q.to ?? '', q.filter ?? null]))
    .digest('base64url')
    .slice(0, 16);

/** A cursor's key may only position the read inside this list's partition and bounds (else DynamoDB refuses it). */
const keyFits = (q: IndexQuery, key: Record<string, string>): boolean => {
  const g = indexDef(q.index);
  const attrs = keyAttributes(q);
  const sortKey = key[g.sortKey];
  return (
    Object.keys(key).length === attrs.length &&
    attrs.every((a) => typeof key[a] === 'string') &&
    key[g.partitionKey] === q.partition &&
    (q.from === undefined || sortKey >= q.from) &&
    (q.to === undefined || sortKey <= q.to)
  );
};

/** Up to `limit` index rows after `after` (exclusive; from the start when absent): one Query when unfiltered. */
const rowsAfter = async (q: IndexQuery, after: Record<string, unknown> | undefined, limit: number): Promise<Row[]> => {
  const input = baseInput(q);
  const out: Row[] = [];
  let startKey: Record<string, unknown> | undefined = after;
  while (out.length < limit) {
    const res: QueryCommandOutput = await db().send(
      new QueryCommand({ ...input, Limit: q.filter ? undefined : limit - out.length, ExclusiveStartKey: startKey }),
    );
    out.push(...((res.Items ?? []) as Row[]));
    if (!res.LastEvaluatedKey) break;
    startKey = res.LastEvaluatedKey;
  }
  return out.slice(0, limit);
};

/** The key of the item a list entry names (its `ENTRY_OF`), or null when the row is an item itself. */
const listedKey = (row: Row): Key | null => {
  const of = row[ENTRY_OF] as Partial<Key> | undefined;
  return of && typeof of.pk === 'string' && typeof of.sk === 'string' ? { pk: of.pk, sk: of.sk } : null;
};

/**
 * The items of index rows, in their order: a row that is an item is taken as it is (an item
 * written before list entries existed carries its index keys itself); a list entry is replaced by
 * the item it names, read by key, strongly consistent, in one BatchGetItem with `extra` (the list's
 * totals shards; `batchGet` splits past 100 keys into requests sent together). An entry whose item
 * is gone (deleted between the two reads), or has left the list (`q.live`), is skipped.
 */
const itemsOf = async <T>(
  q: IndexQuery,
  rows: Row[],
  extra: Key[] = [],
): Promise<{ items: T[]; extra: Record<string, unknown>[]; companions: Map<string, Row> }> => {
  const named = rows.map(listedKey);
  const companionKeys = q.companion ? rows.flatMap((row) => q.companion!(row) ?? []) : [];
  const wanted = [...named.filter((k): k is Key => k !== null), ...extra, ...companionKeys];
  const found = wanted.length ? await batchGet<Row>(wanted) : new Map<string, Row>();
  const items = rows.flatMap((row, i) => {
    const k = named[i];
    const item = k ? found.get(keyId(k)) : row;
    return item && (q.live?.(item) ?? true) ? [item as T] : [];
  });
  const extraItems = extra.flatMap((k): Row[] => {
    const item = found.get(keyId(k));
    return item ? [item] : [];
  });
  const companions = new Map(
    companionKeys.flatMap((k): [string, Row][] => (found.has(keyId(k)) ? [[keyId(k), found.get(keyId(k))!]] : [])),
  );
  return { items, extra: extraItems, companions };
};

/**
 * Every matching index row, `limit` at a time, as the index holds it (list entries included, not
 * replaced by their items): each page is read after the previous page's last key (for walks over a
 * whole partition, whatever its length, in bounded memory).
 */
export async function* pagesOf<T extends Record<string, unknown>>(q: IndexQuery, limit: number): AsyncGenerator<T[]> {
  let after: Record<string, unknown> | undefined;
  for (;;) {
    const rows = await rowsAfter(q, after, limit);
    if (rows.length) yield rows as T[];
    if (rows.length < limit) return;
    after = keyOf(q, rows[rows.length - 1]);
  }
}

/**
 * Every item of a list, `limit` rows at a time: each page of index rows with its list entries
 * replaced by the items they name (one BatchGetItem a page, strongly consistent), in bounded memory.
 */
export async function* listedItemsOf<T>(q: IndexQuery, limit = 100): AsyncGenerator<T[]> {
  for await (const rows of pagesOf(q, limit)) {
    const { items } = await itemsOf<T>(q, rows);
    if (items.length) yield items;
  }
}

/**
 * The rows of a list index that are items carrying their own list keys (written before list
 * entries existed), a page at a time, for `ops upgrade` to move their keys to entries.
 */
export async function* itemRowsOf(q: IndexQuery, limit = 100): AsyncGenerator<Row[]> {
  for await (const rows of pagesOf(q, limit)) {
    const items = rows.filter((row) => listedKey(row) === null);
    if (items.length) yield items;
  }
}

export type PageRequest = { page: number; per_page: number; cursor?: string };
export type CursorPage<T> = {
  items: T[];
  meta: PageMeta & { next_cursor: string | null };
  /** The list's `companion` items found, by `keyId`. */
  companions?: Map<string, Record<string, unknown>>;
};

/**
 * One page of a list by number or by cursor, with its total and `next_cursor`. A cursor page reads
 * the total and the page like page 1, whatever its depth; page numbers stop at an offset of
 * MAX_PAGE_OFFSET (a 422 on `page` that points to the cursor). The page's items are its index
 * rows, list entries replaced by their items (`itemsOf`); the cursor names the last row read.
 */
export const listPage = async <T extends Record<string, unknown>>(
  /** Whose list: its cursors are sealed for this merchant (another's cursor is refused). */
  merchantId: string,
  q: IndexQuery,
  total: ListTotal,
  req: PageRequest,
  /** What names the list for its cursors, when `q` also carries bounds that move with time (retention). */
  identity: IndexQuery = q,
): Promise<CursorPage<T>> => {
  const list = listFingerprint(identity);
  let offset: number;
  let page: PageRead<T>;
  if (req.cursor !== undefined) {
    const cursor = decodeCursor(merchantId, req.cursor);
    if (!cursor || cursor.list !== list || !keyFits(q, cursor.key)) throw InvalidError.field('cursor', CURSOR_INVALID);
    offset = cursor.offset;
    page = await pageWithTotal<T>(q, () => rowsAfter(q, cursor.key, req.per_page), total);
  } else {
    offset = checkPageOffset(req.page, req.per_page);
    // An empty range (its end before the retention bound) reads nothing: DynamoDB refuses inverted bounds.
    if (q.from !== undefined && q.to !== undefined && q.from > q.to)
      return { items: [], meta: cursorMeta(offset, req.per_page, 0, 0, null) };
    page = await offsetPage<T>(q, total, req.page, req.per_page);
  }
  const next = cursorAfter(merchantId, q, identity, offset, page.rows, req.per_page, page.total);
  return {
    items: page.items,
    meta: cursorMeta(offset, req.per_page, page.total, page.items.length, next),
    companions: page.companions,
  };
};

/** The cursor of the page after `rows` (read at `offset` of a list of `total`), or null when none follows. */
const cursorAfter = (
  merchantId: string,
  q: IndexQuery,
  identity: IndexQuery,
  offset: number,
  rows: Row[],
  perPage: number,
  total: number,
): string | null => {
  const more = rows.length === perPage && offset + rows.length < total;
  return more
    ? encodeCursor(merchantId, {
        list: listFingerprint(identity),
        offset: offset + rows.length,
        key: keyOf(q, rows[rows.length - 1]) as Record<string, string>,
      })
    : null;
};
