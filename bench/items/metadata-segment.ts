import { WriteSet } from '#lib/db/writes';
import { addCustomerCreate } from '#lib/customers/store';
import { addTimelineChange, EMPTY_TIMELINE } from '#lib/metrics/store';
import { setFrom, type Tag } from '#lib/metrics/timeline';
import { startApi, benchMerchant } from '../support/api.ts';
import type { BenchItem } from '../support/report.ts';
import { alternate, latency, ratio } from '../support/stats.ts';
import { batchWriteAll } from '../../test/support/seed.ts';

/**
 * Item 8: a metadata segment (docs/metrics.md, "Segments"), which reads the matching customers'
 * timelines: `GET /metrics/mrr?metadata.team=core` (24 months) on a merchant whose segment matches
 * 1,000 customers and on one where it matches 20,000, each with 1,000 other customers that do not
 * match. Requests and capacity units per call, median and p95 latency, and the ratios: the cost
 * grows with the customers matched (one BatchGetItem per 100), not with the others.
 *
 * Customers, their metadata index entries, timelines and plan-customers entries are written with
 * BatchWriteItem in the API's own shapes (`addCustomerCreate`, `addTimelineChange`): a Pro
 * subscription of 10 + (id mod 7) from a day of 2024, raised by 5 a year later for one in three.
 */
const SMALL = Number(process.env.BENCH_SEGMENT_SMALL ?? 1_000);
const LARGE = Number(process.env.BENCH_SEGMENT_LARGE ?? 20_000);
const OTHERS = Number(process.env.BENCH_SEGMENT_OTHERS ?? 1_000);
const CALLS = Number(process.env.BENCH_SEGMENT_CALLS ?? 20);
const PATH = '/metrics/mrr?start_date=2024-01-01&end_date=2025-12-31&interval=month&metadata.team=core';

const seed = async (label: string, matching: number) => {
  const m = await benchMerchant(label);
  const items: Record<string, unknown>[] = [];
  const tag: Tag = ['Pro', 'monthly', 'TWD'];
  for (let id = 1; id <= matching + OTHERS; id++) {
    const ws = new WriteSet(0);
    const team = id <= matching ? 'core' : 'other';
    addCustomerCreate(
      ws,
      m.merchantId,
      id,
      { email: `c${id}@${label}.bench`, metadata: JSON.stringify({ team }) } as never,
      '2024-01-01T00:00:00Z',
    );
    const start = new Date(Date.UTC(2024, 0, 1 + (id % 365))).toISOString().replace('.000', '');
    let tl = setFrom({}, `S${id}`, start, 10 + (id % 7), 'a', tag);
    if (id % 3 === 0) tl = setFrom(tl, `S${id}`, start.replace('2024', '2025'), 15 + (id % 7), 'a', tag);
    await addTimelineChange(ws, m.merchantId, { reportingCurrency: 'TWD', timezone: 'UTC', generation: 0 }, id, EMPTY_TIMELINE, tl);
    // Puts only: the customer, its markers and index entries, the timeline; the aggregates are not read here.
    for (const a of ws.toTransactItems()) if (a.Put) items.push(a.Put.Item as Record<string, unknown>);
  }
  await batchWriteAll(items);
  return m;
};

export const item: BenchItem = {
  name: 'metadata-segment',
  title: `8. A metadata segment matching ${SMALL.toLocaleString('en')} and ${LARGE.toLocaleString('en')} customers`,
  run: async () => {
    const seedStart = Date.now();
    const small = await seed('segsmall', SMALL);
    const large = await seed('seglarge', LARGE);
    const seedSeconds = Math.round((Date.now() - seedStart) / 1000);
    const api = await startApi();
    try {
      const cost = async (token: string) => {
        const r = await api.request('GET', PATH, token);
        if (r.status !== 200) throw new Error(`GET ${PATH}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
        return { requests: r.requests, capacity: r.capacityUnits, customers: r.body.data.at(-1).active_customers as number };
      };
      const t = await alternate(
        { small: () => api.request('GET', PATH, small.token), large: () => api.request('GET', PATH, large.token) },
        CALLS,
        2,
      );
      // Counted after the timed calls: the tokens were used within the minute (no `last_used_at` stamp in the count).
      const [cs, cl] = [await cost(small.token), await cost(large.token)];
      const [s, l] = [latency(t.small), latency(t.large)];
      const expected = (n: number) => 2 + 4 + Math.ceil(n / 100);
      return {
        tables: [
          {
            columns: ['matching customers', 'requests', 'expected 2 + 4 + ⌈n/100⌉', 'capacity units', 'median / p95 ms'],
            rows: [
              [SMALL, cs.requests, expected(SMALL), cs.capacity, `${s.median} / ${s.p95}`],
              [LARGE, cl.requests, expected(LARGE), cl.capacity, `${l.median} / ${l.p95}`],
            ],
          },
        ],
        targets: [
          { name: 'requests at the small size', value: cs.requests, target: `= ${expected(SMALL)}`, met: cs.requests === expected(SMALL) },
          { name: 'requests at the large size', value: cl.requests, target: `= ${expected(LARGE)}`, met: cl.requests === expected(LARGE) },
          {
            name: 'customers counted',
            value: `${cs.customers} / ${cl.customers}`,
            target: `${SMALL} / ${LARGE}`,
            met: cs.customers === SMALL && cl.customers === LARGE,
          },
        ],
        notes: [
          `seeded in ${seedSeconds} s (${OTHERS.toLocaleString('en')} non-matching customers beside each); ${CALLS} calls a side, alternating`,
          `latency ratio ${LARGE / SMALL}× the customers: ${ratio(l.median, s.median)} (median), ${ratio(l.p95, s.p95)} (p95)`,
        ],
        data: { small: { ...cs, ...s }, large: { ...cl, ...l } },
      };
    } finally {
      await api.close();
    }
  },
};
