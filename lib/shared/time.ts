/** Wire format for time: `YYYY-MM-DDTHH:MM:SSZ`, UTC, no fraction (docs/api-conventions.md). */
export const formatTimestamp = (d: Date): string => `${d.toISOString().slice(0, 19)}Z`;

/**
 * The date-times accepted on input: ISO 8601 with `Z` or an offset, seconds and their fraction
 * optional (`2026-11-24T08:00Z`). Also the OpenAPI document's pattern, so it accepts what we do.
 */
export const ISO_DATETIME_PATTERN = '^(\\d{4})-(\\d{2})-(\\d{2})[Tt](\\d{2}):(\\d{2})(?::(\\d{2})(?:\\.\\d+)?)?([Zz]|[+-]\\d{2}:?\\d{2})$';
const ISO_DATETIME = new RegExp(ISO_DATETIME_PATTERN);
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** A day (`YYYY-MM-DD`) or a date-time as above: the OpenAPI pattern of inputs that take either. */
export const DATE_OR_DATETIME_PATTERN = `^\\d{4}-\\d{2}-\\d{2}$|${ISO_DATETIME_PATTERN}`;

/** Date.UTC maps years 0–99 to 1900–1999, so the year is set on its own. */
const utc = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0): Date => {
  const date = new Date(Date.UTC(2000, 0, 1, h, mi, s));
  date.setUTCFullYear(y, mo - 1, d);
  return date;
};

const validParts = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0): boolean => {
  const probe = utc(y, mo, d, h, mi, s);
  return (
    probe.getUTCFullYear() === y &&
    probe.getUTCMonth() === mo - 1 &&
    probe.getUTCDate() === d &&
    probe.getUTCHours() === h &&
    probe.getUTCMinutes() === mi &&
    probe.getUTCSeconds() === s
  );
};

/** Parses ISO 8601 with `Z` or an offset; returns null for anything else. */
export const parseTimestamp = (value: string): Date | null => {
  const m = ISO_DATETIME.exec(value);
  if (!m) return null;
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '0'].map(Number);
  if (!validParts(y, mo, d, h, mi, s)) return null;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return null;
  const date = new Date(ms);
  // The wire format has four year digits: an offset may not carry the instant out of 0001–9999.
  return date.getUTCFullYear() >= 1 && date.getUTCFullYear() <= 9999 ? date : null;
};

/** `YYYY-MM-DD` (years 0001–9999, as timestamps) as the start of that UTC day, or null. */
export const parseDate = (value: string): Date | null => {
  const m = ISO_DATE.exec(value);
  if (!m) return null;
  const [y, mo, d] = [m[1], m[2], m[3]].map(Number);
  return y >= 1 && validParts(y, mo, d) ? utc(y, mo, d) : null;
};

export const isDateOnly = (value: string): boolean => ISO_DATE.test(value);

/** UTC calendar day and month keys used by the pre-aggregated stats. */
export const utcDay = (iso: string): string => iso.slice(0, 10);
export const utcMonth = (iso: string): string => iso.slice(0, 7);
