import { startApi, type BenchApi } from '../support/api.ts';
import type { BenchItem } from '../support/report.ts';
import { seedMerchant } from '../support/seed.ts';
import { alternate, latency, ratio, round } from '../support/stats.ts';

/**
 * Item 2: the reads that must stay flat, on a merchant with 1,000 and one with 20,000 records of
 * each kind (5 other merchants hold data too), called alternately: median and p95 latency over
 * ≥ 200 warm calls each, DynamoDB requests and capacity units per call, and the 20k / 1k ratios.
 */
const SMALL = 1_000;
const LARGE = Number(process.env.BENCH_SCALING_RECORDS ?? 20_000);
const OTHERS = 5;
const CALLS = Number(process.env.BENCH_SCALING_CALLS ?? 200);
const FLAT = 1.3;

const READS: { call: string; path: string; flat: boolean }[] = [
  { call: 'GET /orders page 1', path: '/orders', flat: true },
  { call: 'GET /orders page 50', path: '/orders?page=50', flat: true },
  { call: 'GET /orders?status=paid page 1', path: '/orders?status=paid', flat: true },
  { call: 'GET /orders/stats', path: '/orders/stats', flat: true },
  { call: 'GET /customers?search=', path: '/customers?search=777', flat: false },
  { call: 'GET /subscriptions/events page 1', path: '/subscriptions/events', flat: true },
  { call: 'GET /metrics/mrr (24 months)', path: '/metrics/mrr?start_date=2024-01-01&end_date=2025-12-31&interval=month', flat: true },
];

/** `BENCH_SCALING_READS=mrr,stats`: only the reads whose call contains one of these (a quick look). */
const ONLY = process.env.BENCH_SCALING_READS?.split(',').filter(Boolean);
const chosen = () => READS.filter((r) => !ONLY || ONLY.some((part) => r.call.includes(part)));

const costOf = async (api: BenchApi, token: string, path: string) => {
  const r = await api.request('GET', path, token);
  if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  return { requests: r.requests, capacity: r.capacityUnits };
};

export const item: BenchItem = {
  name: 'scaling',
  title: `2. Scaling: reads at ${SMALL.toLocaleString('en')} and ${LARGE.toLocaleString('en')} records of one merchant`,
  run: async () => {
    const seedStart = Date.now();
    const small = await seedMerchant('small', SMALL);
    const large = await seedMerchant('large', LARGE);
    for (let i = 0; i < OTHERS; i++) await seedMerchant(`other${i}`, SMALL);
    const seedSeconds = Math.round((Date.now() - seedStart) / 1000);
    const api = await startApi();
    try {
      const rows = [];
      for (const read of chosen()) {
        const t = await alternate(
          { small: () => api.request('GET', read.path, small.token), large: () => api.request('GET', read.path, large.token) },
          CALLS,
        );
        const [cs, cl] = [await costOf(api, small.token, read.path), await costOf(api, large.token, read.path)];
        const s = latency(t.small);
        const l = latency(t.large);
        rows.push({
          ...read,
          small: { ...s, ...cs },
          large: { ...l, ...cl },
          median_ratio: ratio(l.median, s.median),
          p95_ratio: ratio(l.p95, s.p95),
        });
      }
      const flatOnes = rows.filter((r) => r.flat);
      const search = rows.find((r) => !r.flat);
      return {
        tables: [
          {
            columns: [
              'call',
              `median / p95 ms at ${SMALL / 1000}k`,
              `median / p95 ms at ${LARGE / 1000}k`,
              'ratio (median)',
              'ratio (p95)',
              `requests ${SMALL / 1000}k → ${LARGE / 1000}k`,
              `capacity units ${SMALL / 1000}k → ${LARGE / 1000}k`,
            ],
            rows: rows.map((r) => [
              r.call,
              `${round(r.small.median, 1)} / ${round(r.small.p95, 1)}`,
              `${round(r.large.median, 1)} / ${round(r.large.p95, 1)}`,
              r.median_ratio,
              r.p95_ratio,
              `${r.small.requests} → ${r.large.requests}`,
              `${r.small.capacity} → ${r.large.capacity}`,
            ]),
          },
        ],
        targets: [
          ...flatOnes.map((r) => ({
            name: `${r.call} median ratio 20k/1k`,
            value: r.median_ratio,
            target: `≤ ${FLAT}`,
            met: r.median_ratio <= FLAT,
          })),
          ...flatOnes.map((r) => ({
            name: `${r.call} requests flat`,
            value: `${r.small.requests} → ${r.large.requests}`,
            target: 'equal',
            met: r.small.requests === r.large.requests,
          })),
        ],
        notes: [
          `${CALLS} alternating warm calls per side and call (after a warm-up). Seeded in ${seedSeconds} s with BatchWriteItem in the API's item shapes (customers via addCustomerCreate, orders via newOrderItem, events and MRR aggregates via the test seeds); ${OTHERS} other merchants hold ${SMALL.toLocaleString('en')} records of each kind.`,
          ...(search
            ? [
                `Search grows by design (it reads every live customer's id, email and name, a projection of three attributes, then fetches the page's customers): ${search.small.requests} → ${search.large.requests} requests, ${search.small.capacity} → ${search.large.capacity} capacity units, median ×${search.median_ratio}.`,
              ]
            : []),
        ],
        data: { small: SMALL, large: LARGE, calls: CALLS, seed_seconds: seedSeconds, reads: rows },
      };
    } finally {
      await api.close();
    }
  },
};
