/** Wire format for time: `YYYY-MM-DDTHH:MM:SSZ`, UTC, no fraction (decisions §1). */
export const formatTimestamp = (d: Date): string => d.toISOString().slice(0, 19) + 'Z';

const ISO_DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

const validParts = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0): boolean => {
  const probe = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
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
  return Number.isNaN(ms) ? null : new Date(ms);
};

/** `YYYY-MM-DD` as the start of that UTC day, or null. */
export const parseDate = (value: string): Date | null => {
  const m = ISO_DATE.exec(value);
  if (!m) return null;
  const [y, mo, d] = [m[1], m[2], m[3]].map(Number);
  return validParts(y, mo, d) ? new Date(Date.UTC(y, mo - 1, d)) : null;
};

export const isDateOnly = (value: string): boolean => ISO_DATE.test(value);

/** UTC calendar day and month keys used by the pre-aggregated stats. */
export const utcDay = (iso: string): string => iso.slice(0, 10);
export const utcMonth = (iso: string): string => iso.slice(0, 7);
