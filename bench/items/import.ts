import type { OrderBatchItem } from '#lib/orders/schemas';
import { batchGet } from '#lib/db/batch-get';
import { batchWriteAll } from '../../test/support/seed.ts';
import { benchMerchant, expectStatus, startApi } from '../support/api.ts';
import { capturing, rebind, writtenKeys } from '../support/capture.ts';
import type { BenchItem } from '../support/report.ts';
import { median, ratio, round, timed } from '../support/stats.ts';

/**
 * Item 4: 10,000 orders through `POST /orders/batch` (100 per call) against the same items written
 * with raw BatchWriteItem (the `batchWriteAll` of the test seeds), call by call, each side on its
 * own merchant. "The same items": every item the API call's transactions wrote (orders, customers
 * and their markers, timelines, totals, stats, MRR aggregates) as the call left it.
 */
const ORDERS = Number(process.env.BENCH_IMPORT_ORDERS ?? 10_000);
const PER_CALL = 100;
const CUSTOMERS = Math.max(1, Math.floor(ORDERS / 4)); // each customer gets 4 orders, in 4 different calls
const BASE = Date.parse('2025-01-01T00:00:00Z');
const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;

/** The i-th order of the import: history in time order, mostly paid, 30 % monthly, some refunded or pending. */
export const importOrder = (i: number): OrderBatchItem & { order_no: string; amount: string; customer_email: string } => {
  const paidAt = BASE + i * 50 * 60_000;
  const kind = i % 10;
  return {
    order_no: `IMP-${i}`,
    amount: `${(i % 97) + 1}.${String(i % 100).padStart(2, '0')}`,
    currency: 'TWD',
    customer_email: `c${i % CUSTOMERS}@import.bench`,
    customer_name: `Customer ${i % CUSTOMERS}`,
    payment_method: 'credit_card',
    billing_cycle: kind < 3 ? 'monthly' : 'one-time',
    ...(kind === 9
      ? { status: 'pending' as const }
      : kind === 8
        ? { status: 'refunded' as const, paid_at: iso(paidAt), refunded_at: iso(paidAt + 86_400_000) }
        : { status: 'paid' as const, paid_at: iso(paidAt) }),
  } as never;
};

export const item: BenchItem = {
  name: 'import',
  title: `4. Import: ${ORDERS.toLocaleString('en')} orders, POST /orders/batch vs raw BatchWriteItem of the same items`,
  run: async () => {
    const api = await startApi();
    try {
      const viaApi = await benchMerchant('import api');
      const raw = await benchMerchant('import raw');
      // Loads the handler (a cold start) outside the measurement.
      expectStatus(
        await api.request('POST', '/orders/batch', (await benchMerchant('import warm-up')).token, { orders: [importOrder(0)] }),
        200,
        'warm-up',
      );
      const calls = Math.ceil(ORDERS / PER_CALL);
      const chunk = (k: number) =>
        Array.from({ length: Math.min(PER_CALL, ORDERS - k * PER_CALL) }, (_, j) => importOrder(k * PER_CALL + j));
      const apiMs: number[] = [];
      const rawMs: number[] = [];
      let created = 0;
      let rawItems = 0;
      let transactions = 0;
      for (let k = 0; k < calls; k++) {
        // API call k, then the items it wrote (their state after it) put raw for the other merchant.
        const t0 = performance.now();
        const { result: r, sent } = await capturing(() => api.request('POST', '/orders/batch', viaApi.token, { orders: chunk(k) }));
        apiMs.push(performance.now() - t0);
        expectStatus(r, 200, `POST /orders/batch #${k}`);
        if (r.body.data.failed) throw new Error(`POST /orders/batch #${k}: ${JSON.stringify(r.body.data.results.failed.slice(0, 3))}`);
        created += r.body.data.created;
        transactions += sent.filter((s) => s.command === 'TransactWriteItems').length;
        const written = [...(await batchGet(writtenKeys(sent))).values()].filter((i) => String(i.pk).includes(viaApi.merchantId));
        const items = rebind(written, viaApi.merchantId, raw.merchantId);
        rawItems += items.length;
        rawMs.push(await timed(() => batchWriteAll(items)));
      }
      if (created !== ORDERS) throw new Error(`API import created ${created} of ${ORDERS} orders`);
      const seconds = (ms: number[]) => ms.reduce((s, x) => s + x, 0) / 1000;
      const apiRate = round(ORDERS / seconds(apiMs), 0);
      const rawRate = round(ORDERS / seconds(rawMs), 0);
      const r = ratio(apiRate, rawRate);
      return {
        tables: [
          {
            columns: ['side', 'orders', 'DynamoDB writes', 'seconds', 'orders/s', 'median ms per 100 orders'],
            rows: [
              ['POST /orders/batch', ORDERS, `${transactions} transactions`, round(seconds(apiMs), 1), apiRate, round(median(apiMs), 1)],
              [
                'raw BatchWriteItem of the same items',
                ORDERS,
                `${rawItems} items, ${Math.ceil(rawItems / 25)}+ calls`,
                round(seconds(rawMs), 1),
                rawRate,
                round(median(rawMs), 1),
              ],
            ],
          },
        ],
        targets: [{ name: 'import throughput ratio API / raw', value: r, target: '≥ 0.5', met: r >= 0.5 }],
        notes: [
          `${CUSTOMERS.toLocaleString('en')} customers created by the import (4 orders each, in 4 different calls); 30 % monthly (MRR timelines and aggregates move), 10 % refunded, 10 % pending.`,
          "Raw side: after each API call, every item its transactions put or updated (orders, customers, email markers, payments, timelines, totals, stats, MRR aggregates), in its state after the call, rewritten to a second merchant and put with BatchWriteItem (25 a call, 8 in flight); calls alternate with the API's.",
        ],
        data: {
          orders: ORDERS,
          customers: CUSTOMERS,
          transactions,
          raw_items: rawItems,
          api_orders_per_s: apiRate,
          raw_orders_per_s: rawRate,
          ratio: r,
          api_ms: apiMs.map((x) => round(x, 1)),
          raw_ms: rawMs.map((x) => round(x, 1)),
        },
      };
    } finally {
      await api.close();
    }
  },
};
