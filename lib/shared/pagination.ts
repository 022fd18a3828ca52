import { InvalidError } from '#lib/errors';
import { openCursor, sealCursor } from '#lib/shared/cursor';

/** The list envelope's meta (docs/api-conventions.md). */
export type PageMeta = {
  current_page: number;
  from: number | null;
  last_page: number;
  per_page: number;
  to: number | null;
  total: number;
};

export const pageMeta = (page: number, perPage: number, total: number, count: number): PageMeta => {
  const offset = (page - 1) * perPage;
  return {
    current_page: page,
    from: count > 0 ? offset + 1 : null,
    last_page: Math.max(1, Math.ceil(total / perPage)),
    per_page: perPage,
    to: count > 0 ? offset + count : null,
    total,
  };
};

/** A list answer: the page and its meta, `next_cursor` included (null: no page follows). */
export const paginated = <T>(data: T[], page: number, perPage: number, total: number, nextCursor: string | null = null) => ({
  data,
  meta: { ...pageMeta(page, perPage, total, data.length), next_cursor: nextCursor },
});

/**
 * Cursor pages: `meta.next_cursor` is an opaque string, sealed for the merchant, that names the last item shown (its table
 * and index key), how many items came before the next page, and a fingerprint of the list and
 * filters it belongs to. Reading from a cursor costs one page, whatever the depth.
 */
export type CursorState = { key: Record<string, string>; offset: number; list: string };

/** Offsets from here on are refused for page numbers: deeper pages are read with `cursor`. */
export const MAX_PAGE_OFFSET = 10_000;
export const DEEP_PAGE_MESSAGE = `The page field may not reach ${MAX_PAGE_OFFSET.toLocaleString('en-US')} items or more (page × per_page): follow meta.next_cursor with the cursor parameter instead.`;
export const CURSOR_INVALID = 'The cursor field must be a meta.next_cursor value returned by this list with the same filters.';

/** Page numbers reach offsets below MAX_PAGE_OFFSET; deeper pages are read with the cursor (a 422 on `page` says so). */
export const checkPageOffset = (page: number, perPage: number): number => {
  const offset = (page - 1) * perPage;
  if (offset >= MAX_PAGE_OFFSET) throw InvalidError.field('page', DEEP_PAGE_MESSAGE);
  return offset;
};

/** The cursor of `c` for the merchant: sealed, so it shows nothing of the key it names (lib/shared/cursor.ts). */
export const encodeCursor = (merchantId: string, c: CursorState): string =>
  sealCursor(merchantId, JSON.stringify([c.list, c.offset, c.key]));

/**
 * The cursor's state, or null when it is not one this service wrote for this merchant (altered,
 * another merchant's, or not a cursor); even then never trusted beyond its shape.
 */
export const decodeCursor = (merchantId: string, raw: string): CursorState | null => {
  const plain = openCursor(merchantId, raw);
  if (plain === null) return null;
  try {
    const [list, offset, key] = JSON.parse(plain) as unknown[];
    if (typeof list !== 'string' || !Number.isSafeInteger(offset) || (offset as number) < 0) return null;
    if (!key || typeof key !== 'object' || Array.isArray(key)) return null;
    const entries = Object.entries(key as Record<string, unknown>);
    if (!entries.length || entries.some(([, v]) => typeof v !== 'string' || v.length === 0 || v.length > 2048)) return null;
    return { list, offset: offset as number, key: key as Record<string, string> };
  } catch {
    return null;
  }
};

/** A list known to be empty without reading it (a filter naming nothing): its page still obeys the offset rule. */
export const emptyPage = (req: { page: number; per_page: number }) => {
  checkPageOffset(req.page, req.per_page);
  return paginated([], req.page, req.per_page, 0);
};

/** The list meta with `next_cursor` (null on the last page). */
export const cursorMeta = (offset: number, perPage: number, total: number, count: number, nextCursor: string | null) => ({
  ...pageMeta(Math.floor(offset / perPage) + 1, perPage, total, count),
  from: count > 0 ? offset + 1 : null,
  to: count > 0 ? offset + count : null,
  next_cursor: nextCursor,
});

/**
 * A page of rows held in memory (a search's matches, a customer's activities), by page number or
 * cursor: the cursor names the last row shown (`idOf`), so a row added or removed before it does not
 * shift the next page; a row gone since is passed by its offset.
 */
export const pageOfRows = <R>(
  merchantId: string,
  rows: R[],
  list: string,
  idOf: (r: R) => string,
  q: { page: number; per_page: number; cursor?: string },
) => {
  let offset: number;
  if (q.cursor !== undefined) {
    const cursor = decodeCursor(merchantId, q.cursor);
    if (!cursor || cursor.list !== list || typeof cursor.key.id !== 'string') throw InvalidError.field('cursor', CURSOR_INVALID);
    const at = rows.findIndex((r) => idOf(r) === cursor.key.id);
    offset = at >= 0 ? at + 1 : cursor.offset;
  } else {
    offset = checkPageOffset(q.page, q.per_page);
  }
  const shown = rows.slice(offset, offset + q.per_page);
  const last = shown.at(-1);
  const next =
    last !== undefined && offset + shown.length < rows.length
      ? encodeCursor(merchantId, { list, offset: offset + shown.length, key: { id: idOf(last) } })
      : null;
  return { shown, offset, total: rows.length, next };
};
