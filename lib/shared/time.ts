import { type UTCDate, UTCDateMini } from '@date-fns/utc';
import { addDays } from 'date-fns/addDays';
import { addMonths } from 'date-fns/addMonths';
import { lastDayOfMonth } from 'date-fns/lastDayOfMonth';
import { startOfISOWeek } from 'date-fns/startOfISOWeek';

/** Wire format for time: `YYYY-MM-DDTHH:MM:SSZ`, UTC, no fraction (docs/api-conventions.md). */
export const formatTimestamp = (d: Date): string => `${d.toISOString().slice(0, 19)}Z`;

/**
 * The date-times accepted on input: ISO 8601 with `Z` or an offset, seconds and their fraction
 * optional (`2026-11-24T08:00Z`); the parser then checks the calendar.
 */
export const ISO_DATETIME_PATTERN = '^(\\d{4})-(\\d{2})-(\\d{2})[Tt](\\d{2}):(\\d{2})(?::(\\d{2})(?:\\.\\d+)?)?([Zz]|[+-]\\d{2}:?\\d{2})$';
const ISO_DATETIME = new RegExp(ISO_DATETIME_PATTERN);
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * The document's patterns: the same grammar, with only the calendar's days (30 April, 29 February
 * in leap years), hours 00–23, minutes and seconds 00–59 and offsets below 24 hours, as the parser
 * checks them. Year 0000 is let through for date-times: an offset may carry such an instant into
 * year 0001, which is accepted (only the description can say that the instant, in UTC, must fall
 * in years 0001–9999).
 */
const MONTH_DAY = '(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))';
const LEAP_YEAR = '(?:\\d\\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)';
const CALENDAR_DATE = `(?:\\d{4}-${MONTH_DAY}|${LEAP_YEAR}-02-29)`;
const CLOCK = '(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d+)?)?';
const OFFSET = '(?:[Zz]|[+-](?:[01]\\d|2[0-3]):?[0-5]\\d)';
/** A date-time the server can accept (the OpenAPI `pattern` of date-time inputs). */
export const DATETIME_DOC_PATTERN = `^${CALENDAR_DATE}[Tt]${CLOCK}${OFFSET}$`;
/** A day `YYYY-MM-DD`, years 0001–9999 (the OpenAPI `pattern` of date inputs). */
export const DATE_DOC_PATTERN = `^(?!0000)${CALENDAR_DATE}$`;
/** A day or a date-time: the OpenAPI pattern of inputs that take either. */
export const DATE_OR_DATETIME_PATTERN = `${DATE_DOC_PATTERN}|${DATETIME_DOC_PATTERN}`;

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

/*
 * Calendar arithmetic on UTC days (`YYYY-MM-DD`), months (`YYYY-MM`) and timestamps: date-fns on
 * `UTCDateMini`s (@date-fns/utc), whose getters and setters are the UTC ones, so a step is a UTC
 * calendar step whatever the process's time zone. Not `TZDate` in `UTC`: it asks Intl for the
 * offset on every operation, 11 to 18 times slower, and these run in loops over a range's days
 * (docs/decisions.md, "Libraries"). The merchant's reporting zone is `#lib/shared/zone`'s.
 */

/** The start of UTC day `day` (`YYYY-MM-DD`), for date-fns. */
export const utcDate = (day: string): UTCDate => new UTCDateMini(Date.parse(`${day}T00:00:00Z`));
/** The UTC day (`YYYY-MM-DD`) an instant falls in. */
export const isoDay = (d: Date | number): string => new Date(+d).toISOString().slice(0, 10);
/** `day` plus `n` calendar days. */
export const plusDays = (day: string, n: number): string => isoDay(addDays(utcDate(day), n));
/** `month` (`YYYY-MM`) plus `n` months. */
export const plusMonths = (month: string, n: number): string => isoDay(addMonths(utcDate(`${month}-01`), n)).slice(0, 7);
/** The last day of `month` (`YYYY-MM`). */
export const monthLastDay = (month: string): string => isoDay(lastDayOfMonth(utcDate(`${month}-01`)));
/** The Monday of the ISO week `day` falls in. */
export const isoWeekStart = (day: string): string => isoDay(startOfISOWeek(utcDate(day)));
/** A timestamp plus `n` calendar months, the time of day kept and the day clamped to the month's last (Jan 31 + 1 → Feb 28/29). */
export const timestampPlusMonths = (iso: string, n: number): string => formatTimestamp(addMonths(new UTCDateMini(Date.parse(iso)), n));
/** A timestamp `n` whole days (of 24 hours, UTC) later. */
export const timestampPlusDays = (iso: string, n: number): string => formatTimestamp(addDays(new UTCDateMini(Date.parse(iso)), n));
