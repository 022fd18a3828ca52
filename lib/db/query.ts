import { createHash } from 'node:crypto';
import { QueryCommand, type QueryCommandInput, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import { InvalidError } from '#lib/errors';
import { CURSOR_INVALID, checkPageOffset, cursorMeta, decodeCursor, encodeCursor, type PageMeta } from '#lib/shared/pagination';
import { db, tableName } from '#lib/db/client';
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
};

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
 * One offset page of an index. Skipped items are read as keys only (deep pages stay cheap in
 * bytes, but cost O(offset) reads: callers that know the total skip pages past the end);
 * page 1 of an unfiltered index is a single Query.
 */
export const queryPage = async <T>(q: IndexQuery, offset: number, limit: number): Promise<T[]> => {
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
  return queryAfter<T>(q, startKey, limit);
};

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
      new QueryCommand({ ...input, ExpressionAttributeNames: names, ProjectionExpression: proj.join(', '), ExclusiveStartKey: startKey }),
    );
    out.push(...((res.Items ?? []) as T[]));
    startKey = res.LastEvaluatedKey;
  } while (startKey);
  return out;
};

/**
 * One offset page of a list with its total. Page 1 reads the total and the page in
 * parallel (the budgeted request count); deeper pages read the total first, so a page past the
 * end reads nothing more and a skip is bounded by the total.
 */
const offsetPage = async <T>(q: IndexQuery, count: () => Promise<number>, page: number, perPage: number): Promise<{ items: T[]; total: number }> => {
  const offset = (page - 1) * perPage;
  if (offset === 0) {
    const [total, items] = await Promise.all([count(), queryPage<T>(q, 0, perPage)]);
    return { items, total };
  }
  const total = await count();
  if (offset >= total) return { items: [], total };
  return { items: await queryPage<T>(q, offset, perPage), total };
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

/** Up to `limit` items after `after` (exclusive; from the start when absent): one Query when unfiltered. */
const queryAfter = async <T>(q: IndexQuery, after: Record<string, unknown> | undefined, limit: number): Promise<T[]> => {
  const input = baseInput(q);
  const out: T[] = [];
  let startKey: Record<string, unknown> | undefined = after;
  while (out.length < limit) {
    const res: QueryCommandOutput = await db().send(new QueryCommand({ ...input, Limit: q.filter ? undefined : limit - out.length, ExclusiveStartKey: startKey }));
    out.push(...((res.Items ?? []) as T[]));
    if (!res.LastEvaluatedKey) break;
    startKey = res.LastEvaluatedKey;
  }
  return out.slice(0, limit);
};

/**
 * Every matching item, `limit` at a time: each page is read after the previous page's last key
 * (for walks over a whole partition, whatever its length, in bounded memory).
 */
export async function* pagesOf<T extends Record<string, unknown>>(q: IndexQuery, limit: number): AsyncGenerator<T[]> {
  let after: Record<string, unknown> | undefined;
  for (;;) {
    const items = await queryAfter<T>(q, after, limit);
    if (items.length) yield items;
    if (items.length < limit) return;
    after = keyOf(q, items[items.length - 1]);
  }
}

export type PageRequest = { page: number; per_page: number; cursor?: string };
export type CursorPage<T> = { items: T[]; meta: PageMeta & { next_cursor: string | null } };

/**
 * One page of a list by number or by cursor, with its total and `next_cursor`. A cursor page reads
 * the total and the page in parallel, like page 1, whatever its depth; page numbers stop at an
 * offset of MAX_PAGE_OFFSET (a 422 on `page` that points to the cursor).
 */
export const listPage = async <T extends Record<string, unknown>>(
  q: IndexQuery,
  count: () => Promise<number>,
  req: PageRequest,
  /** What names the list for its cursors, when `q` also carries bounds that move with time (retention). */
  identity: IndexQuery = q,
): Promise<CursorPage<T>> => {
  const list = listFingerprint(identity);
  let offset: number;
  let items: T[];
  let total: number;
  if (req.cursor !== undefined) {
    const cursor = decodeCursor(req.cursor);
    if (!cursor || cursor.list !== list || !keyFits(q, cursor.key)) throw InvalidError.field('cursor', CURSOR_INVALID);
    offset = cursor.offset;
    [total, items] = await Promise.all([count(), queryAfter<T>(q, cursor.key, req.per_page)]);
  } else {
    offset = checkPageOffset(req.page, req.per_page);
    // An empty range (its end before the retention bound) reads nothing: DynamoDB refuses inverted bounds.
    if (q.from !== undefined && q.to !== undefined && q.from > q.to) return { items: [], meta: cursorMeta(offset, req.per_page, 0, 0, null) };
    ({ items, total } = await offsetPage<T>(q, count, req.page, req.per_page));
  }
  return { items, meta: cursorMeta(offset, req.per_page, total, items.length, cursorAfter(q, identity, offset, items, req.per_page, total)) };
};

/** The cursor of the page after `items` (read at `offset` of a list of `total`), or null when none follows. */
export const cursorAfter = (q: IndexQuery, identity: IndexQuery, offset: number, items: Record<string, unknown>[], perPage: number, total: number): string | null => {
  const more = items.length === perPage && offset + items.length < total;
  return more ? encodeCursor({ list: listFingerprint(identity), offset: offset + items.length, key: keyOf(q, items[items.length - 1]) as Record<string, string> }) : null;
};
