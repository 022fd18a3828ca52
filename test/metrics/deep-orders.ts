import Decimal from 'decimal.js';
import { expect } from 'vitest';
import { fixedClock } from '#lib/clock';
import { keys } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { CHUNK_LIMIT, INLINE_LIMIT } from '#lib/metrics/store';
import { newMerchant, type useApi } from '../support/api.ts';
import { allPages } from '../support/pages.ts';
import { type RefOrder, refPurchaseCohorts, refSales } from './sales-reference.ts';

/** The customer's stored timeline items: head and chunks, with their sizes (every page of the Query). */
const timelineItems = async (merchantId: string, customerId: number) => {
  const Items = await queryAll<Record<string, unknown>>(
    { partition: keys.customerTimeline(merchantId, customerId).pk, from: 'MRR_TIMELINE', to: 'MRR_TIMELINE~', descending: false },
    [],
  );
  // DynamoDB's measure of an item: each attribute's name and value bytes (numbers and booleans counted generously).
  const size = (i: Record<string, unknown>) =>
    Object.entries(i).reduce((n, [k, v]) => n + Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 21), 0);
  return Items.map((i) => ({ sk: String(i.sk), bytes: size(i) }));
};

export const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;

/** `at` plus n calendar months, the day clamped to the target month's last (Jan 31 + 1 → Feb 28 or 29). */
export const addMonths = (at: string, n: number) => {
  const d = new Date(at);
  const target = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 1, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()));
  const last = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(d.getUTCDate(), last));
  return iso(target.getTime());
};

/**
 * One customer with `count` paid monthly orders over 20 years, imported 100 at a time: its
 * timeline is stored in chunks of bounded size, it stays writable (today and back-dated), and
 * every month's MRR equals the recomputation straight from the orders; so do its sales figures.
 */
export const deepOrders = async (api: ReturnType<typeof useApi>, count: number) => {
  fixedClock('2026-06-01T00:00:00Z');
  const { token, merchantId } = await newMerchant();
  const orders = Array.from({ length: count }, (_, i) => {
    // 20 years of monthly orders, about 42 a month, paid at spread-out times.
    const paidAt = iso(Date.parse('2006-01-01T00:00:00Z') + Math.floor((i * 20 * 365.25 * 86_400_000) / count) + (i % 13) * 3_600_000);
    return {
      order_no: `LONG-${String(i).padStart(5, '0')}`,
      amount: String(10 + (i % 5)),
      customer_email: 'deep@example.com',
      status: 'paid',
      billing_cycle: 'monthly',
      paid_at: paidAt,
      created_at: paidAt,
    };
  });
  // As a client would: a batch answered 503 (the function's deadline, on a loaded machine) is sent
  // again after its Retry-After; what it had committed is found unchanged, so nothing counts twice.
  let retried = 0;
  for (let b = 0; b < orders.length; b += 100) {
    let r = await api.post('/orders/batch', token, { orders: orders.slice(b, b + 100) });
    for (let attempt = 1; r.status === 503 && attempt <= 3; attempt++) {
      retried++;
      await new Promise((done) => setTimeout(done, Number(r.headers.get('retry-after') ?? 1) * 1000));
      r = await api.post('/orders/batch', token, { orders: orders.slice(b, b + 100) });
    }
    expect(r.status).toBe(200);
    // Items the batch had no time left for answer "retry the item" (conflict, throttled): sent again,
    // alone in their batch, as a client would; what landed is found unchanged.
    let failed: { index: number; reason: string }[] = r.body.data.results.failed;
    for (let attempt = 1; failed.length && attempt <= 3; attempt++) {
      expect(
        failed.every((f) => ['conflict', 'throttled', 'unconfirmed'].includes(f.reason)),
        JSON.stringify(failed.slice(0, 2)),
      ).toBe(true);
      retried++;
      const again = failed.map((f) => orders[b + f.index]);
      const rr = await api.post('/orders/batch', token, { orders: again });
      expect(rr.status).toBe(200);
      failed = rr.body.data.results.failed.map((f: { index: number; reason: string }) => ({ ...f, index: failed[f.index].index }));
    }
    expect(failed, JSON.stringify(failed.slice(0, 2))).toEqual([]);
  }
  if (retried)
    console.info(
      `[depth] ${retried} of ${Math.ceil(orders.length / 100)} batches sent again (after a 503, or their items left without time)`,
    );

  const customerId = (await api.get('/customers?search=deep@example.com', token)).body.data[0].id as number;
  const items = await timelineItems(merchantId, customerId);
  // Chunked (the head and chunks split only when full: each at least a quarter full on average).
  const chunks = items.filter((i) => i.sk.startsWith('MRR_TIMELINE#'));
  expect(chunks.length).toBeGreaterThanOrEqual(2);
  expect(chunks.reduce((n, c) => n + c.bytes, 0) / chunks.length).toBeGreaterThan(CHUNK_LIMIT / 4);
  for (const i of items) expect(i.bytes, i.sk).toBeLessThan(Math.max(INLINE_LIMIT, CHUNK_LIMIT) + 1_000);

  // Still writable, today and back-dated, and every figure is the recomputation's.
  const started = performance.now();
  const write = await api.counted('POST', '/orders', {
    token,
    body: {
      order_no: 'LONG-NOW',
      amount: '99',
      customer_email: 'deep@example.com',
      status: 'paid',
      billing_cycle: 'monthly',
      paid_at: '2026-05-31T00:00:00Z',
    },
  });
  expect(write.res.status).toBe(201);
  // Printed, not asserted (docs/benchmarks.md): the customer's record is read whole, in pages of 1 MB.
  console.info(
    `[depth] POST /orders at ${count.toLocaleString('en')} orders: ${write.requests} requests ${JSON.stringify(write.byCommand)}, ${write.capacityUnits} capacity units, ${(performance.now() - started).toFixed(0)} ms; timeline ${items.length} items, ${items.reduce((n, i) => n + i.bytes, 0).toLocaleString('en')} bytes`,
  );
  expect((await api.patch('/orders/LONG-00000', token, { status: 'refunded' })).status).toBe(200);
  // The recomputation, straight from the orders (each counts its amount for the month from paid_at): MRR at each month's end.
  const counted = [...orders.slice(1), { amount: '99', paid_at: '2026-05-31T00:00:00Z' }].map((o) => ({
    from: o.paid_at,
    to: addMonths(o.paid_at, 1),
    amount: new Decimal(o.amount),
  }));
  for (const [start, end] of [
    ['2006-01-01', '2015-12-31'],
    ['2016-06-02', '2026-06-01'],
  ]) {
    const got = (await api.get(`/metrics/mrr?start_date=${start}&end_date=${end}&interval=month`, token)).body.data as {
      date: string;
      mrr: string;
    }[];
    expect(got.length).toBeGreaterThan(100);
    for (const p of got) {
      const next = addMonths(`${p.date.slice(0, 7)}-01T00:00:00Z`, 1);
      const edge = next > `${end}T23:59:59Z` ? `${end}T23:59:59Z` : iso(Date.parse(next) - 1000);
      const want = counted.filter((o) => o.from <= edge && edge < o.to).reduce((sum, o) => sum.plus(o.amount), new Decimal(0));
      expect(p.mrr, p.date).toBe(want.toFixed(2));
    }
  }

  // Sales (docs/sales.md): an import paid before all of them becomes the customer's first paid
  // order (its cohort moves back, every other order turns returning); each read is the reference's
  // over the orders as listed.
  const early = {
    order_no: 'LONG-EARLY',
    amount: '5',
    customer_email: 'deep@example.com',
    status: 'paid',
    paid_at: '2005-12-15T00:00:00Z',
    created_at: '2005-12-15T00:00:00Z',
  };
  expect((await api.post('/orders/batch', token, { orders: [early] })).body.data.results.failed).toEqual([]);
  // By cursor: page numbers reach only so deep (past that a 422 points to the cursor).
  const listed = (await allPages(api, token, '/orders')).items as RefOrder[];
  expect(listed).toHaveLength(count + 2);
  const money = { zone: 'UTC', reporting: 'TWD', rates: new Map() };
  for (const [start, end, interval] of [
    ['2005-12-01', '2015-11-30', 'year'],
    ['2016-06-02', '2026-06-01', 'month'],
  ] as const) {
    const got = await api.get(`/metrics/sales?start_date=${start}&end_date=${end}&interval=${interval}`, token);
    expect(got.body, `sales ${start}..${end}`).toEqual(refSales(listed, { start, end, interval, ...money }));
  }
  const cohorts = await api.get('/metrics/purchase-cohorts?start_month=2005-12&end_month=2008-11', token);
  expect(cohorts.body.data[0]).toMatchObject({ cohort: '2005-12', customers: 1 });
  expect(cohorts.body).toEqual(refPurchaseCohorts(listed, { start: '2005-12', end: '2008-11', current: '2026-06', ...money }));
};
