import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { METRIC_SHARDS } from '#lib/db/keys';
import { STORED_ATTR } from '#lib/metrics/rules';
import { aggregateKey } from '#lib/metrics/store';
import { addContributions, contributions, setFrom, type Contributions, type Segment, type Tag, type Timeline } from '#lib/metrics/timeline';
import { batchWriteAll } from './seed.ts';

const DAY = 86_400_000;
/** Every seeded subscription: plan Basic, monthly, in the reporting currency. */
const TAG: Tag = ['Basic', 'monthly', 'TWD'];
const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;

/**
 * A merchant's MRR aggregate items exactly as `customers` subscriptions leave them (the sum of
 * their timelines' `contributions`): one subscription each, created, changed and some cancelled
 * over 2019–2026, so that every day of the range has a day item. Written with BatchWriteItem;
 * returns how many items. For request-budget tests and the bench (reads touch only these items).
 */
/** With `segment`, the items of that segment (its partition) instead of the whole's. */
export const seedMetricsAggregates = async (merchantId: string, customers: number, segment: Segment | null = null) => {
  const total: Contributions = new Map();
  const start = Date.parse('2019-01-01T00:00:00Z');
  for (let i = 0; i < customers; i++) {
    const created = start + ((i * 7919) % 2900) * DAY + (i % 86_400) * 1000;
    // Every fifth starts with a trial (converted two weeks later); every seventh goes past due and is
    // recovered or cancelled as delinquent; every eleventh has a cancellation scheduled in 2026–2027.
    let tl: Timeline = i % 5 === 0 ? setFrom({}, 'S1', iso(created - 14 * DAY), 0, 't', TAG) : {};
    tl = setFrom(tl, 'S1', iso(created), 10 + (i % 90), 'a', TAG);
    tl = setFrom(tl, 'S1', iso(created + (30 + (i % 200)) * DAY), 20 + (i % 50), 'a', TAG);
    if (i % 7 === 0) {
      tl = setFrom(tl, 'S1', iso(created + (40 + (i % 200)) * DAY), 20 + (i % 50), 'd', TAG);
      tl = setFrom(tl, 'S1', iso(created + (50 + (i % 200)) * DAY), i % 2 ? 20 + (i % 50) : 0, i % 2 ? 'a' : 'c', [
        TAG[0],
        TAG[1],
        TAG[2],
        i % 2 ? null : 'delinquent',
      ]);
    }
    if (i % 3 === 0) tl = setFrom(tl, 'S1', iso(created + (60 + (i % 400)) * DAY), 0, 'c', TAG);
    else if (i % 11 === 0) tl = setFrom(tl, 'F1', iso(Date.parse('2026-01-01T00:00:00Z') + (i % 700) * DAY), -(20 + (i % 50)), 'c', TAG);
    addContributions(total, contributions(tl, 'TWD', segment));
  }
  // Every shard of every item the reads below touch holds every attribute (the largest reads): the
  // sums in shard 0, zeros elsewhere. Items outside those ranges get shard 0 only (fewer to seed).
  const read = (id: string) =>
    id.startsWith('M#') ||
    id.startsWith('F#') ||
    (id.startsWith('D#')
      ? id.slice(2, 6) >= '2024' && id.slice(2, 6) <= '2025'
      : id.split('#')[1] >= '2024-01' && id.split('#')[1] <= '2025-12');
  const items = [...total].flatMap(([id, attrs]) =>
    Array.from({ length: read(id) ? METRIC_SHARDS : 1 }, (_, shard) => ({
      ...aggregateKey(merchantId, id, shard, segment),
      ...Object.fromEntries([...attrs].map(([a, v]) => [STORED_ATTR[a], NumberValue.from(shard ? '0' : v.toFixed())])),
    })),
  );
  await batchWriteAll(items);
  return items.length;
};
