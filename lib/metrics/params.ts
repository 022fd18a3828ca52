import * as z from 'zod';
import { DATE_OR_DATETIME_PATTERN, isDateOnly, parseDate, parseTimestamp } from '#lib/shared/time';
import { DEFAULT_TIMEZONE, localDayOf } from '#lib/shared/zone';

/**
 * The metrics reads' query parameters and filters as functions and constants, with no schema built
 * when the module loads: the write paths that import the metrics module's face carry these, not
 * the reads' schemas (lib/metrics/schemas.ts, which only the route entries import).
 */

/**
 * A day `YYYY-MM-DD`; a date-time (ISO 8601 with `Z` or an offset, docs/api-conventions.md) names
 * its day in `zone`, the merchant's reporting time zone (UTC by default).
 */
export const utcDayOf = (v: string, zone = DEFAULT_TIMEZONE): string | null => {
  const d = parseDate(v) ?? (isDateOnly(v) ? null : parseTimestamp(v));
  if (!d) return null;
  return isDateOnly(v) ? d.toISOString().slice(0, 10) : localDayOf(d.getTime(), zone);
};

/** A day parameter (`start_date`, `end_date`, `date`). */
export const dayParam = () =>
  z
    .string()
    .refine((v) => utcDayOf(v) !== null, { message: 'The :field field must be a valid date (YYYY-MM-DD).' })
    .meta({
      pattern: DATE_OR_DATETIME_PATTERN,
      example: '2026-01-31',
      description: "A date (YYYY-MM-DD); a date-time is taken as its day in the merchant's reporting time zone",
    });

const MONTH = /^(\d{4})-(\d{2})$/;
/** `YYYY-MM`, years 0001–9999. */
export const isMonth = (v: string): boolean => {
  const m = MONTH.exec(v);
  return !!m && Number(m[1]) >= 1 && Number(m[2]) >= 1 && Number(m[2]) <= 12;
};
/** A month parameter (`start_month`, `end_month`). */
export const monthParam = () =>
  z
    .string()
    .refine(isMonth, { message: 'The :field field must be a valid month (YYYY-MM).' })
    .meta({ example: '2026-01', pattern: '^(?!0000)\\d{4}-(?:0[1-9]|1[0-2])$' });

/** The recurring billing cycles a segment can name. */
export const SEGMENT_CYCLES = ['monthly', 'quarterly', 'semi-annual', 'yearly'] as const;
/** The filters a metrics read takes besides its own parameters (`metadata.<key>` too). */
export const SEGMENT_FILTERS = ['plan', 'billing_cycle', 'currency'] as const;

/** The query parameters a segmented read may repeat: `plan` (a union) and `metadata.<key>` (ANDed). */
export const SEGMENT_REPEATABLE = ['plan', 'metadata.'] as const;
/**
 * Most plans a query may name, and most metadata filters (each repeat counts): a segment of the
 * matching customers reads 4 index partitions for each, and a URL holding more would pass what
 * API Gateway takes (a 414 no document describes).
 */
export const PLANS_MAX = 20;
export const METADATA_FILTERS_MAX = 10;

/** The parameter prefix of a customer-metadata filter. */
export const METADATA_PREFIX = 'metadata.';

/**
 * A metrics query takes only its own parameters, the segment filters and `metadata.<key>`: any
 * other name is a 422 on it, naming what is allowed (a misspelt filter must not answer the whole).
 * A metadata filter must name its key and give a value (repeated: each value must match).
 */
export const onlyKnown =
  (own: readonly string[], filters: readonly string[] = SEGMENT_FILTERS) =>
  (q: Record<string, unknown>, ctx: z.core.$RefinementCtx<Record<string, unknown>>) => {
    const known = [...own, ...filters];
    let metadata = 0;
    for (const [key, value] of Object.entries(q)) {
      if (key.startsWith(METADATA_PREFIX) && key !== METADATA_PREFIX) {
        const before = metadata;
        metadata += Array.isArray(value) ? value.length : 1;
        // Named once, on the parameter that passes the bound.
        if (before <= METADATA_FILTERS_MAX && metadata > METADATA_FILTERS_MAX)
          ctx.addIssue({
            code: 'custom',
            path: [key],
            message: `A query may hold at most ${METADATA_FILTERS_MAX} metadata.<key> filters, repeats included.`,
          });
      }
      if (known.includes(key)) continue;
      if (key === METADATA_PREFIX) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'The metadata. parameter must name a metadata key: metadata.<key>=<value>.' });
        continue;
      }
      if (key.startsWith(METADATA_PREFIX)) continue;
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `The ${key} parameter is not supported. Allowed: ${[...known, 'metadata.<key>'].join(', ')}.`,
      });
    }
  };

/** The metadata filters of a query (`metadata.<key>=<value>`, each repeat its own), as [key, value] pairs: all must match. */
export const metadataFilters = (q: Record<string, unknown>): [key: string, value: string][] =>
  Object.entries(q)
    .filter(([k]) => k.startsWith(METADATA_PREFIX) && k.length > METADATA_PREFIX.length)
    .flatMap(([k, v]) =>
      (Array.isArray(v) ? v : [v])
        .filter((x): x is string => typeof x === 'string')
        .map((x) => [k.slice(METADATA_PREFIX.length), x] as [string, string]),
    );

/** The plans a query names (`plan`, repeatable). */
export const planFilters = (q: { plan?: string | string[] }): string[] =>
  q.plan === undefined ? [] : Array.isArray(q.plan) ? [...new Set(q.plan)] : [q.plan];

/** GET /metrics/mrr: dates (days of the merchant's time zone, inclusive); the range checks need the clock's defaults (service). */
