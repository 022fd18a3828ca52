import * as z from 'zod';
import { now } from '#lib/clock';
import { parseAmount } from '#lib/shared/money';
import { CURRENCY_PATTERN, isCurrency } from '#lib/shared/currency';
import { CURSOR_PATTERN, MAX_CURSOR_LENGTH } from '#lib/shared/cursor';
import { CURSOR_INVALID, MAX_PAGE_OFFSET } from '#lib/shared/pagination';
import { idFromPath } from '#lib/shared/ids';
import { DATE_OR_DATETIME_PATTERN, DATETIME_DOC_PATTERN, formatTimestamp, parseDate, parseTimestamp } from '#lib/shared/time';

type JsonSchema = Record<string, unknown>;

/**
 * The document's schema of a field whose zod form renders looser than what the server accepts (a
 * transform, a union of string and number): `json` replaces what zod-openapi generated, keeping the
 * description and example given with `.meta()`.
 */
export const documentedAs =
  (json: JsonSchema) =>
  ({ jsonSchema }: { jsonSchema: JsonSchema }) => {
    const kept = Object.fromEntries(
      Object.entries(jsonSchema).filter(([k, v]) => ['description', 'example'].includes(k) && v !== undefined),
    );
    for (const k of Object.keys(jsonSchema)) delete jsonSchema[k];
    Object.assign(jsonSchema, json, kept);
  };

/** The largest amount: 13 integer digits, 2 fraction digits. */
export const MAX_AMOUNT = 9_999_999_999_999.99;
/** An amount as text: what `parseAmount` takes (the string is trimmed first, as JSON Schema's `\s` reads white space). */
export const AMOUNT_PATTERN = '^\\s*\\d{1,13}(?:\\.\\d{1,2})?\\s*$';
/** An amount above zero, as the document says it: a digit other than 0 somewhere, a number above 0. */
export const positiveAmountDocument = () =>
  documentedAs({
    anyOf: [
      { type: 'string', pattern: '^\\s*(?=[\\d.]*[1-9])\\d{1,13}(?:\\.\\d{1,2})?\\s*$' },
      { type: 'number', exclusiveMinimum: 0, maximum: MAX_AMOUNT },
    ],
  });
const AMOUNT_NOTE =
  'a string of at most 13 integer and 2 fraction digits, or a JSON number from 0 to 9999999999999.99 with at most 2 fraction digits; a whole number in a currency without a minor unit (JPY, KRW, …)';

/**
 * Reusable field schemas. Custom messages use `:field`, replaced by the field's name when the
 * 422 body is built, so every schema words its errors the same way.
 */

/** Decimal amount: JSON string or number, ≤ 13 integer and ≤ 2 fraction digits, ≥ 0 → "1200.00". */
export const amount = () =>
  z
    .union([z.string(), z.number()], { error: 'The :field field must be a number.' })
    .transform((v, ctx) => {
      const r = parseAmount(v, ':field');
      if (r.ok) return r.value;
      ctx.addIssue({ code: 'custom', message: r.message });
      return z.NEVER;
    })
    .meta({
      description: `Decimal amount: ${AMOUNT_NOTE}`,
      example: '1200.00',
      override: documentedAs({
        anyOf: [
          { type: 'string', pattern: AMOUNT_PATTERN },
          { type: 'number', minimum: 0, maximum: MAX_AMOUNT },
        ],
      }),
    });

/** What the date-time pattern cannot say. */
export const INSTANT_RANGE = 'The instant, in UTC, must fall in the years 0001 to 9999.';

/** ISO 8601 date-time with `Z` or an offset → `YYYY-MM-DDTHH:MM:SSZ`. */
export const timestamp = () =>
  z
    .string({ error: 'The :field field must be a valid date-time.' })
    .transform((v, ctx) => {
      const d = parseTimestamp(v);
      if (d) return formatTimestamp(d);
      ctx.addIssue({ code: 'custom', message: 'The :field field must be a valid ISO 8601 date-time with a time zone.' });
      return z.NEVER;
    })
    // No `format: date-time` (RFC 3339 wants seconds): the pattern says what is accepted.
    .meta({
      pattern: DATETIME_DOC_PATTERN,
      example: '2026-01-31T12:00:00Z',
      description: `ISO 8601 date-time with Z or an offset; seconds optional. ${INSTANT_RANGE}`,
    });

/** A timestamp of something that has happened: not after now (history, not a schedule). */
export const pastTimestamp = () =>
  timestamp().refine((v) => Date.parse(v) <= now().getTime(), { message: 'The :field field must be a date before or equal to now.' });

/** A filter bound: `YYYY-MM-DD` or a date-time → an ISO instant; `end` makes a bare date inclusive to the day's end. */
export const dateBound = (end: boolean) =>
  z
    .string()
    .transform((v, ctx) => {
      const day = parseDate(v);
      if (day) return formatTimestamp(end ? new Date(day.getTime() + 86_399_000) : day);
      const d = parseTimestamp(v);
      if (d) return formatTimestamp(d);
      ctx.addIssue({ code: 'custom', message: 'The :field field must be a date (YYYY-MM-DD) or an ISO 8601 date-time.' });
      return z.NEVER;
    })
    .meta({
      pattern: DATE_OR_DATETIME_PATTERN,
      description: `YYYY-MM-DD or ISO 8601 date-time (inclusive). ${INSTANT_RANGE}`,
      example: '2026-01-31',
    });

export const currency = () =>
  z
    .string({ error: 'The :field field must be a string.' })
    .refine(isCurrency, { message: 'The :field field must be a valid ISO 4217 currency code.' })
    .transform((v) => v.toUpperCase())
    .meta({
      example: 'TWD',
      description: 'ISO 4217 currency code, in any case (written upper-case)',
      override: documentedAs({ type: 'string', pattern: CURRENCY_PATTERN }),
    });

export const email = () =>
  z
    .email({ error: 'The :field field must be a valid email address.' })
    .max(255)
    .transform((v) => v.toLowerCase());

/**
 * Free-form metadata object: ≤ 50 keys, ≤ 16 KiB as JSON (docs/customers.md). Its output is the JSON
 * text, stored as a string: any JSON the client sends (huge numbers, empty keys, deep nesting)
 * round-trips, where a DynamoDB map would refuse some of it. Presenters decode it.
 */
export const metadata = () =>
  z
    .record(z.string(), z.unknown(), { error: 'The :field field must be an object.' })
    .refine((o) => Object.keys(o).length <= 50, { message: 'The :field field must not have more than 50 keys.' })
    // Checked before anything recursive (JSON.stringify) walks a pathologically deep value.
    .refine((o) => withinDepth(o), {
      message: `The :field field must not be nested more than ${METADATA_MAX_DEPTH} levels deep.`,
      abort: true,
    })
    .refine((o) => Buffer.byteLength(JSON.stringify(o)) <= 16 * 1024, {
      message: 'The :field field must not be larger than 16 KiB.',
    })
    // Keys and values become index keys (segments by metadata), where a lone surrogate would read as U+FFFD.
    .refine((o) => wellFormedTree(o), {
      message: 'The :field field must be valid Unicode text (a key or value has a lone UTF-16 surrogate).',
    })
    .transform((o) => JSON.stringify(o));

export const METADATA_MAX_DEPTH = 64;

/**
 * Whether `visit` holds for every value inside `value` (itself at depth 1), with the key it sits
 * under in an object (none in an array, none for `value`): iteratively, so no input is too deep
 * to walk, and stopping at the first that fails.
 */
const everyNode = (value: unknown, visit: (v: unknown, depth: number, key?: string) => boolean): boolean => {
  const stack: [unknown, number, string | undefined][] = [[value, 1, undefined]];
  while (stack.length) {
    const [v, depth, key] = stack.pop()!;
    if (!visit(v, depth, key)) return false;
    if (v !== null && typeof v === 'object')
      for (const [k, child] of Object.entries(v as object)) stack.push([child, depth + 1, Array.isArray(v) ? undefined : k]);
  }
  return true;
};

/** No object or array nested deeper than METADATA_MAX_DEPTH levels. */
const withinDepth = (value: unknown) => everyNode(value, (v, depth) => v === null || typeof v !== 'object' || depth <= METADATA_MAX_DEPTH);

/** Every key and string value well-formed Unicode (walked once the depth is known to be bounded). */
const wellFormedTree = (value: unknown) =>
  everyNode(value, (v, _depth, key) => (key === undefined || isWellFormed(key)) && (typeof v !== 'string' || isWellFormed(v)));

/**
 * An integer query parameter in min..max with a default. A number too long for a double
 * (`99999999999999999999`) is above `max`, so it gets the maximum's message, never the minimum's.
 * `between` words both sides with the two bounds (per_page's contract range, docs/api-conventions.md).
 */
export const intParam = (
  min: number,
  max: number,
  fallback: number,
  { between = false, documentedMax, description }: { between?: boolean; documentedMax?: number; description?: string } = {},
) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return fallback;
      if (!/^\d+$/.test(v)) {
        ctx.addIssue({ code: 'custom', message: 'The :field field must be an integer.' });
        return z.NEVER;
      }
      const n = Number(v);
      if (n < min || n > max) {
        const message = between
          ? `The :field field must be between ${min} and ${max}.`
          : n < min
            ? `The :field field must be at least ${min}.`
            : `The :field field must not be greater than ${max}.`;
        ctx.addIssue({ code: 'custom', message });
        return z.NEVER;
      }
      return n;
    })
    .meta({ type: 'integer', minimum: min, maximum: documentedMax ?? max, description: description ?? `Defaults to ${fallback}` } as never);

/**
 * `cursor`: a `meta.next_cursor` of the same list, as it was given (base64url, so a cursor costs as
 * many bytes in a URL as it has characters, and the longest keeps any request line far below the
 * 10,240 bytes API Gateway takes). Other characters get the message of a cursor that does not open.
 */
export const cursorParam = (description: string) =>
  z
    .string()
    .min(1)
    .max(MAX_CURSOR_LENGTH)
    .regex(new RegExp(CURSOR_PATTERN), { message: CURSOR_INVALID.replace('The cursor field', 'The :field field') })
    .optional()
    .meta({ description });

/**
 * The deepest page: 2^31 − 1, so the offset (page − 1) × per_page stays an exact integer
 * (below 2^38) and no page number overflows a 32-bit signed integer in a client.
 */
export const MAX_PAGE = 2 ** 31 - 1;

/** `page` and `per_page` (docs/api-conventions.md). */
export const pageQuery = {
  // Parsed up to MAX_PAGE (so a deep page is refused by the offset rule, which points to the cursor);
  // documented up to the deepest page any per_page allows.
  page: intParam(1, MAX_PAGE, 1, {
    documentedMax: MAX_PAGE_OFFSET,
    description: `Defaults to 1. (page − 1) × per_page must stay below ${MAX_PAGE_OFFSET.toLocaleString('en-US')} (at most page ${MAX_PAGE_OFFSET / 20} at the default per_page of 20, ${MAX_PAGE_OFFSET} at per_page 1); deeper pages are read with \`cursor\``,
  }),
  per_page: intParam(1, 100, 20, { between: true }),
  cursor: cursorParam(
    "`meta.next_cursor` of the previous page, with the same filters: reads on from there at one page's cost, however deep",
  ),
};

/**
 * A resource id in the path: documented as a positive integer, parsed here once. Anything else names
 * no resource, so it becomes 0, which no stored resource has: the service answers 404, never 422.
 */
export const pathId = (description: string) =>
  z
    .string()
    .transform(idFromPath)
    .meta({ description, override: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } });

/** An optional id-like positive integer query filter; ids are exact integers (≤ 2^53 − 1). */
export const idParam = () =>
  z
    .string()
    .transform((v, ctx) => {
      if (!/^[1-9]\d*$/.test(v)) {
        ctx.addIssue({ code: 'custom', message: 'The :field field must be a positive integer.' });
        return z.NEVER;
      }
      const n = Number(v);
      if (!Number.isSafeInteger(n)) {
        ctx.addIssue({ code: 'custom', message: `The :field field must not be greater than ${Number.MAX_SAFE_INTEGER}.` });
        return z.NEVER;
      }
      return n;
    })
    .meta({ type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as never);

/**
 * A lone UTF-16 surrogate (a JSON `"\ud800"` escape) is not Unicode text: it has no UTF-8 form,
 * so it cannot be put in a URL, and DynamoDB keys do not keep two such strings apart.
 */
const LONE_SURROGATE = /\p{Cs}/u;
export const isWellFormed = (v: string): boolean => !LONE_SURROGATE.test(v);
export const WELL_FORMED_MESSAGE = 'The :field field must be valid Unicode text.';
/** The document's pattern of well-formed text (no lone surrogate, \p{Cs}), at least one character. */
export const WELL_FORMED_PATTERN = '^[^\\p{Cs}]+$';
/** Text that must only be well-formed Unicode (a plan name, a reason), as the server and the document take it. */
export const wellFormedText = (min: number, max: number) =>
  z
    .string()
    .min(min)
    .max(max)
    .refine(isWellFormed, { message: WELL_FORMED_MESSAGE })
    .meta({ pattern: min ? WELL_FORMED_PATTERN : WELL_FORMED_PATTERN.replace('+$', '*$') });

/** Control characters (C0, DEL, C1): no person's name or phone number holds one, and NUL ends strings elsewhere. */
const CONTROL = /\p{Cc}/u;
/** The document's pattern of plain text: no control character (\p{Cc}), no lone surrogate (\p{Cs}). */
export const PLAIN_TEXT_PATTERN = '^[^\\p{Cc}\\p{Cs}]*$';
const PLAIN_TEXT_NOTE =
  'Plain text: valid Unicode (no lone UTF-16 surrogate) without control characters (C0, DEL, C1: no NUL, tab or line break)';

/** Text a person reads (a name, a phone number): at most `max` characters, valid Unicode, no control character. */
export const plainText = (max: number) =>
  z
    .string()
    .max(max)
    .refine(isWellFormed, { message: WELL_FORMED_MESSAGE })
    .refine((v) => !CONTROL.test(v), { message: 'The :field field must not contain control characters (such as NUL or a line break).' })
    .meta({ pattern: PLAIN_TEXT_PATTERN, description: `${PLAIN_TEXT_NOTE}; at most ${max} UTF-16 code units` });

/** Optional string field where null means "not given". */
export const nullish = <T extends z.ZodType>(schema: T) => schema.nullish();
