import * as z from 'zod';
import { now } from '#lib/clock';
import { parseAmount } from '#lib/shared/money';
import { isCurrency } from '#lib/shared/currency';
import { idFromPath } from '#lib/shared/ids';
import { DATE_OR_DATETIME_PATTERN, formatTimestamp, ISO_DATETIME_PATTERN, parseDate, parseTimestamp } from '#lib/shared/time';

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
    .meta({ description: 'Decimal amount as a string ("1200.00"), at most 2 fraction digits', example: '1200.00' });

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
      pattern: ISO_DATETIME_PATTERN,
      example: '2026-01-31T12:00:00Z',
      description: 'ISO 8601 date-time with Z or an offset; seconds optional',
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
    .meta({ pattern: DATE_OR_DATETIME_PATTERN, description: 'YYYY-MM-DD or ISO 8601 date-time (inclusive)', example: '2026-01-31' });

export const currency = () =>
  z
    .string({ error: 'The :field field must be a string.' })
    .refine(isCurrency, { message: 'The :field field must be a valid ISO 4217 currency code.' })
    .transform((v) => v.toUpperCase())
    .meta({ example: 'TWD' });

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
    .refine((o) => wellFormedText(o), {
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
const wellFormedText = (value: unknown) =>
  everyNode(value, (v, _depth, key) => (key === undefined || isWellFormed(key)) && (typeof v !== 'string' || isWellFormed(v)));

/**
 * An integer query parameter in min..max with a default. A number too long for a double
 * (`99999999999999999999`) is above `max`, so it gets the maximum's message, never the minimum's.
 * `between` words both sides with the two bounds (per_page's contract range, docs/api-conventions.md).
 */
export const intParam = (min: number, max: number, fallback: number, { between = false } = {}) =>
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
    .meta({ type: 'integer', minimum: min, maximum: max, description: `Defaults to ${fallback}` } as never);

/**
 * The deepest page: 2^31 − 1, so the offset (page − 1) × per_page stays an exact integer
 * (below 2^38) and no page number overflows a 32-bit signed integer in a client.
 */
export const MAX_PAGE = 2 ** 31 - 1;

/** `page` and `per_page` (docs/api-conventions.md). */
export const pageQuery = {
  page: intParam(1, MAX_PAGE, 1),
  per_page: intParam(1, 100, 20, { between: true }),
  cursor: z.string().min(1).max(4096).optional().meta({
    description: "`meta.next_cursor` of the previous page, with the same filters: reads on from there at one page's cost, however deep",
  }),
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

/** Control characters (C0, DEL, C1): no person's name or phone number holds one, and NUL ends strings elsewhere. */
const CONTROL = /\p{Cc}/u;
/** Text a person reads (a name, a phone number): at most `max` characters, valid Unicode, no control character. */
export const plainText = (max: number) =>
  z
    .string()
    .max(max)
    .refine(isWellFormed, { message: WELL_FORMED_MESSAGE })
    .refine((v) => !CONTROL.test(v), { message: 'The :field field must not contain control characters (such as NUL or a line break).' });

/** Optional string field where null means "not given". */
export const nullish = <T extends z.ZodType>(schema: T) => schema.nullish();
