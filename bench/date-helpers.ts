import { tz } from '@date-fns/tz';
import { addDays } from 'date-fns/addDays';
import { addMonths } from 'date-fns/addMonths';
import { startOfISOWeek } from 'date-fns/startOfISOWeek';
import { bucketKey, bucketStarts } from '#lib/metrics/rules';
import { isoDay, plusDays, timestampPlusMonths, utcDate } from '#lib/shared/time';
import { median, round } from './support/stats.ts';

/**
 * `node --import tsx bench/date-helpers.ts`: the UTC date helpers of the hot loops (date-fns on
 * `UTCDateMini`, docs/decisions.md "Libraries") against the hand-written arithmetic they replaced
 * and against date-fns on `TZDate` in `UTC`, over a 10-year range's days; the sides alternate,
 * 15 rounds, median µs a call. Pure functions only (no DynamoDB). Results: docs/benchmarks.md.
 */

const DAY_MS = 86_400_000;
const handDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const handPlusDays = (day: string, n: number) => handDay(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS);
const handWeek = (day: string) => handPlusDays(day, -((new Date(`${day}T00:00:00Z`).getUTCDay() + 6) % 7));
const handPlusMonths = (iso: string, months: number) => {
  const d = new Date(iso);
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() + months);
  d.setUTCDate(Math.min(day, new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate()));
  return `${d.toISOString().slice(0, 19)}Z`;
};
const inUtc = tz('UTC');

// A 10-year weekly range: GET /metrics/mrr's longest, its day items 8 shards a day.
const days = [...bucketStarts('2016-01-01', '2025-12-31', 'day')];
const dayItems = days.flatMap((d) => Array.from({ length: 8 }, (_, s) => ({ sk: `D#${d}#${s}`, n: 1 })));
const paidAts = days.map((d, i) => `${d}T${String(i % 24).padStart(2, '0')}:30:00Z`);

type Workload = { name: string; calls: number; sides: Record<string, () => unknown> };
const workloads: Workload[] = [
  {
    name: "a day item's week (bucketKey), ×29,224",
    calls: dayItems.length,
    sides: {
      'date-fns, UTCDateMini': () => dayItems.forEach((i) => bucketKey(i.sk.slice(2, 12), 'week')),
      'hand-written': () => dayItems.forEach((i) => handWeek(i.sk.slice(2, 12))),
      'date-fns, TZDate UTC': () => dayItems.forEach((i) => isoDay(startOfISOWeek(i.sk.slice(2, 12), { in: inUtc }))),
    },
  },
  {
    name: 'the next day (plusDays), ×3,653',
    calls: days.length,
    sides: {
      'date-fns, UTCDateMini': () => days.forEach((d) => plusDays(d, 1)),
      'hand-written': () => days.forEach((d) => handPlusDays(d, 1)),
      'date-fns, TZDate UTC': () => days.forEach((d) => isoDay(addDays(d, 1, { in: inUtc }))),
    },
  },
  {
    name: "a recurring order's cycle end (timestampPlusMonths), ×3,653",
    calls: paidAts.length,
    sides: {
      'date-fns, UTCDateMini': () => paidAts.forEach((t) => timestampPlusMonths(t, 3)),
      'hand-written': () => paidAts.forEach((t) => handPlusMonths(t, 3)),
      'date-fns, TZDate UTC': () => paidAts.forEach((t) => addMonths(t, 3, { in: inUtc }).toISOString()),
    },
  },
];

const ROUNDS = 15;
console.log('| Workload | Side | µs a call (median of 15) |\n|---|---|---:|');
for (const w of workloads) {
  const names = Object.keys(w.sides);
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = -3; r < ROUNDS; r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(r + 3 + k) % names.length];
      const t0 = performance.now();
      w.sides[name]();
      if (r >= 0) times[name].push(performance.now() - t0);
    }
  }
  for (const n of names) console.log(`| ${w.name} | ${n} | ${round((median(times[n]) * 1000) / w.calls, 2)} |`);
}
// The helpers step UTC days whatever the process's zone: a check, not a timing.
if (plusDays('2026-03-08', 1) !== '2026-03-09' || utcDate('2026-03-08').getDate() !== 8) throw new Error('UTC days moved');
