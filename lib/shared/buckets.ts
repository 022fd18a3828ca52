import type { UTCDate } from '@date-fns/utc';
import { addDays } from 'date-fns/addDays';
import { addMonths } from 'date-fns/addMonths';
import { addQuarters } from 'date-fns/addQuarters';
import { addWeeks } from 'date-fns/addWeeks';
import { addYears } from 'date-fns/addYears';
import { startOfISOWeek } from 'date-fns/startOfISOWeek';
import { startOfMonth } from 'date-fns/startOfMonth';
import { startOfQuarter } from 'date-fns/startOfQuarter';
import { startOfYear } from 'date-fns/startOfYear';
import { isoDay, isoWeekStart, utcDate } from '#lib/shared/time';

/** The buckets a series is cut into (days of the reporting time zone, as `yyyy-mm-dd`). */
export const INTERVALS = ['day', 'week', 'month', 'quarter', 'year'] as const;
export type Interval = (typeof INTERVALS)[number];

/** Intervals made of whole months: read from the month roll-ups, days only at a partial end. */
export const MONTHS_IN: Partial<Record<Interval, number>> = { month: 1, quarter: 3, year: 12 };

/** The bucket a month falls in (`yyyy-mm`, `yyyy-Qn`, `yyyy`). */
export const monthBucket = (month: string, interval: Interval) =>
  interval === 'year'
    ? month.slice(0, 4)
    : interval === 'quarter'
      ? `${month.slice(0, 4)}-Q${Math.floor((Number(month.slice(5, 7)) - 1) / 3) + 1}`
      : month;

/** The bucket a day falls in: the day, its week's Monday (UTC), or its month, quarter or year. */
export const bucketKey = (day: string, interval: Interval) => {
  if (interval === 'day') return day;
  if (MONTHS_IN[interval]) return monthBucket(day.slice(0, 7), interval);
  return isoWeekStart(day);
};

/** The first day of the bucket after the one `d` falls in. */
const NEXT_BUCKET: Record<Interval, (d: UTCDate) => UTCDate> = {
  day: (d) => addDays(d, 1),
  week: (d) => addWeeks(startOfISOWeek(d), 1),
  month: (d) => addMonths(startOfMonth(d), 1),
  quarter: (d) => addQuarters(startOfQuarter(d), 1),
  year: (d) => addYears(startOfYear(d), 1),
};

/** The first day of each bucket of [start, end]: the range's start, then each next day, Monday, 1st of a month, quarter or year. */
export function* bucketStarts(start: string, end: string, interval: Interval) {
  // Compared as times, not text: past 9999-12-31 ISO dates gain a sign and sort first.
  const last = utcDate(end).getTime();
  for (let d = utcDate(start); d.getTime() <= last; d = NEXT_BUCKET[interval](d)) yield isoDay(d);
}
