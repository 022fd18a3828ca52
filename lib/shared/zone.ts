import { TZDate } from '@date-fns/tz';
import { plusDays, plusMonths } from '#lib/shared/time';

/**
 * The merchant's reporting time zone: which names are accepted, and where its days and months start
 * in UTC. Zone rules come from the runtime's IANA database (Intl) through `@date-fns/tz`, so DST
 * and historical offsets are the database's, not ours.
 */

export const DEFAULT_TIMEZONE = 'UTC';
export const TIMEZONE_MESSAGE = 'The timezone field must be an IANA time zone name, such as UTC, Asia/Taipei or America/New_York.';

// Region/City names (and UTC, Etc/GMT+8): not numeric offsets such as "+08:00", which have no rules.
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

/** The canonical spelling of an IANA time zone name ("asia/taipei" → "Asia/Taipei"), or null when it is not one. */
export const canonicalZone = (name: string): string | null => {
  if (name.length > 64 || !ZONE_NAME.test(name)) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
};

/** Stats keep quarter-hours: every zone in use today starts its days on one (UTC+5:45, +8:45, +12:45 included). */
export const QUARTER_MS = 900_000;
export const QUARTERS_PER_DAY = 96;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** The local calendar day (`YYYY-MM-DD`) of an instant in `zone`. */
export const localDayOf = (ms: number, zone: string): string => {
  const d = new TZDate(ms, zone);
  return `${pad(d.getFullYear(), 4)}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
};

/** The first instant (UTC milliseconds) of local day `day` (`YYYY-MM-DD`) in `zone`; a midnight skipped by DST starts the day at the first local time that exists. */
export const localDayStart = (day: string, zone: string): number => {
  const [y, m, d] = day.split('-').map(Number);
  if (y >= 100) return new TZDate(y, m - 1, d, zone).getTime();
  // Date's constructor reads years 0 to 99 as 1900 to 1999. (Not date-fns' parseISO in the zone: it sets the
  // fields one by one, which misses the midnight by the seconds of an old local-mean-time offset, 1900 in Kathmandu.)
  const t = new TZDate(2000, 0, 1, zone);
  t.setFullYear(y, m - 1, d);
  t.setHours(0, 0, 0, 0);
  return t.getTime();
};

/** The local day, and its month, an instant falls in: each as the UTC instants [from, to) it covers. */
export const localPeriodsAt = (ms: number, zone: string) => {
  const day = localDayOf(ms, zone);
  const month = day.slice(0, 7);
  return {
    day,
    today: { from: localDayStart(day, zone), to: localDayStart(plusDays(day, 1), zone) },
    month: { from: localDayStart(`${month}-01`, zone), to: localDayStart(`${plusMonths(month, 1)}-01`, zone) },
  };
};

/** The quarter-hour of its UTC day an instant falls in (0 to 95). */
export const quarterOf = (ms: number): number => {
  const d = new Date(ms);
  return d.getUTCHours() * 4 + Math.floor(d.getUTCMinutes() / 15);
};

/** The local date (`YYYY-MM-DD`) of a stored UTC timestamp (`…Z`) in `zone`; in UTC, its first ten characters. */
export const localDateOfIso = (iso: string, zone: string): string =>
  zone === DEFAULT_TIMEZONE ? iso.slice(0, 10) : localDayOf(Date.parse(iso), zone);
