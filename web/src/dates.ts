/** The metrics' ranges and days, in the merchant's reporting time zone. */
export const RANGES = [
  { id: '30d', label: 'Last 30 days', days: 29 },
  { id: '90d', label: 'Last 90 days', days: 89 },
  { id: '6m', label: 'Last 6 months', months: 5 },
  { id: '12m', label: 'Last 12 months', months: 11 },
  { id: '24m', label: 'Last 24 months', months: 23 },
] as const;
export const INTERVALS = ['day', 'week', 'month', 'quarter', 'year'] as const;

export const isoDay = (d: Date) => d.toISOString().slice(0, 10);
export const dayBefore = (day: string) => isoDay(new Date(Date.parse(`${day}T00:00:00Z`) - 86_400_000));
/** Today in the merchant's reporting time zone, where the API's metrics days are (`YYYY-MM-DD`). */
export const todayIn = (zone: string) =>
  new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());
/** The range's first day (in the zone of `today`): N days back, or the 1st of the month N months back. */
export const rangeStart = (id: string, today: string) => {
  const r = RANGES.find((x) => x.id === id)!;
  const [y, m, d] = today.split('-').map(Number);
  if ('days' in r) return isoDay(new Date(Date.UTC(y, m - 1, d - r.days)));
  return isoDay(new Date(Date.UTC(y, m - 1 - r.months, 1)));
};

/** The month `n` months before the month of `day` (`YYYY-MM`). */
export const monthBefore = (day: string, n: number) => {
  const [y, m] = day.split('-').map(Number);
  return isoDay(new Date(Date.UTC(y, m - 1 - n, 1))).slice(0, 7);
};

/**
 * The range of the same length just before a range (`id`, ending `today`): as many days before its
 * first day, or as many whole months before its first month. What a range's figure is compared with.
 */
export const previousRange = (id: string, today: string) => {
  const r = RANGES.find((x) => x.id === id)!;
  const start = rangeStart(id, today);
  const end = dayBefore(start);
  if ('days' in r) return { start_date: isoDay(new Date(Date.parse(`${end}T00:00:00Z`) - r.days * 86_400_000)), end_date: end };
  return { start_date: `${monthBefore(start, r.months + 1)}-01`, end_date: end };
};

/** How a range is named in a figure's change: `the previous 12 months`. */
export const previousWords = (id: string) => {
  const r = RANGES.find((x) => x.id === id)!;
  return 'days' in r ? `the previous ${r.days + 1} days` : `the previous ${r.months + 1} months`;
};
