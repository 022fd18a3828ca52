import { stringify } from 'csv-stringify/sync';
import * as z from 'zod';

/**
 * `Accept: text/csv` on the metrics reads and the lists (docs/api-conventions.md, "CSV"): the same
 * figures as the JSON answer's `data`, one row per item, a header row, UTF-8.
 * - Columns are the item schema's fields, in its order, so an empty answer still has its header.
 * - A field holding a list of objects (a cohort's `retention`) gives one row per element, its
 *   fields prefixed (`retention.month`), the item's own fields repeated on each.
 * - Any other object or list (`metadata`, a delivery's payload) is one cell of JSON text.
 * - null is an empty cell; numbers and booleans as JSON writes them.
 * - A text cell that a spreadsheet would run as a formula (starting `=`, `+`, `-`, `@`, tab or CR)
 *   gets a leading `'`, unless it is a number (`-30.00` stays as it is).
 */
export const CSV_MEDIA_TYPE = 'text/csv';

type Row = Record<string, unknown>;

/** The element schema of `data` (an array, or one object), if the route declares one. */
const itemSchemaOf = (schema: z.ZodType | undefined): z.ZodObject | null => {
  const data = schema instanceof z.ZodObject ? (schema.shape as Record<string, z.ZodType>).data : undefined;
  const unwrap = (t: z.ZodType | undefined): z.ZodType | undefined =>
    t instanceof z.ZodNullable || t instanceof z.ZodOptional ? unwrap(t.unwrap() as z.ZodType) : t;
  const item = unwrap(data instanceof z.ZodArray ? (data.element as z.ZodType) : data);
  return item instanceof z.ZodObject ? item : null;
};

/** A field whose values are lists of objects (expanded into rows), with the element's fields. */
const nestedOf = (item: z.ZodObject | null): { field: string; columns: string[] } | null => {
  for (const [field, t] of Object.entries((item?.shape ?? {}) as Record<string, z.ZodType>)) {
    if (t instanceof z.ZodArray && t.element instanceof z.ZodObject) return { field, columns: Object.keys(t.element.shape) };
  }
  return null;
};

const NUMBER = /^-?\d+(\.\d+)?$/;
const FORMULA = /^[=+\-@\t\r]/;
const cell = (v: unknown): string => {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  const text = String(v);
  return typeof v === 'string' && FORMULA.test(text) && !NUMBER.test(text) ? `'${text}` : text;
};

/** The CSV text of a JSON answer's `data`, by the route's 200 schema. */
export const toCsv = (body: unknown, schema?: z.ZodType): string => {
  const data = (body as { data?: unknown } | undefined)?.data;
  const items = (Array.isArray(data) ? data : data === undefined || data === null ? [] : [data]) as Row[];
  const item = itemSchemaOf(schema);
  const nested = nestedOf(item);
  const own = item ? Object.keys(item.shape).filter((k) => k !== nested?.field) : [...new Set(items.flatMap((i) => Object.keys(i)))];
  const columns = [...own, ...(nested ? nested.columns.map((c) => `${nested.field}.${c}`) : [])];
  const rows: string[][] = [];
  for (const i of items) {
    const base = own.map((k) => cell(i[k]));
    const children = nested ? ((i[nested.field] as Row[] | undefined) ?? []) : [];
    if (!children.length) rows.push([...base, ...(nested ? nested.columns.map(() => '') : [])]);
    for (const child of children) rows.push([...base, ...nested!.columns.map((c) => cell(child[c]))]);
  }
  return stringify([columns, ...rows], { record_delimiter: '\r\n' });
};

/** Paging of a list answer as headers (CSV has no room for `meta`): the total and the next page's cursor. */
export const csvPagingHeaders = (body: unknown): Record<string, string> => {
  const meta = (body as { meta?: { total?: unknown; next_cursor?: unknown } } | undefined)?.meta;
  if (!meta) return {};
  return {
    ...(typeof meta.total === 'number' ? { 'X-Total-Count': String(meta.total) } : {}),
    ...(typeof meta.next_cursor === 'string' ? { 'X-Next-Cursor': meta.next_cursor } : {}),
  };
};
