import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { fixedClock, resetClock } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { COUNTER_SHARDS } from '#lib/db/writes-constants';
import { generationSegmentsPartition, keys, salesPartition, salesPartitions } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { repairCustomer } from '#lib/customers/repair';
import { getMerchant } from '#lib/merchants/store';
import { generationOf } from '#lib/merchants/rules';
import { rebuildMerchantAggregates } from '#lib/metrics/rebuild';
import { lastCustomerId } from '#lib/metrics/store';
import { newMerchant, ok, useApi } from '../support/api.ts';
import { backofficeJwt } from '../backoffice/support.ts';
import type { RefInterval } from '../metrics/reference.ts';
import { type RefOrder, type RefRateBook, refPaymentMethods, refPurchaseCohorts, refSales } from '../metrics/sales-reference.ts';

/**
 * GET /metrics/sales, /metrics/payment-methods and /metrics/purchase-cohorts as a client sees them
 * (docs/sales.md): the figures equal the from-scratch reference over the orders the API lists, in a
 * zone with other currencies, after back-dated imports, upserts and refunds; bad queries are 422s.
 */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const api = useApi();
afterEach(() => resetClock());

const NOW = '2026-03-20T09:00:00Z';
const ZONE = 'Asia/Taipei';
const RATES: RefRateBook = new Map([
  [
    'USD',
    new Map([
      ['2026-01', '31.5'],
      ['2026-02', '32.25'],
    ]),
  ],
]);

const batch = async (token: string, orders: Record<string, unknown>[]) => {
  const r = await ok(api.post('/orders/batch', token, { orders }));
  expect(r.data.results.failed, JSON.stringify(r.data.results.failed)).toEqual([]);
};

/** The orders as the API lists them: the raw records the reference recomputes from. */
const storedOrders = async (token: string): Promise<(RefOrder & { customer_email: string })[]> => {
  const out: (RefOrder & { customer_email: string })[] = [];
  for (let page = 1; ; page++) {
    const r = await ok(api.get(`/orders?per_page=100&page=${page}`, token));
    out.push(...r.data);
    if (r.data.length < 100) return out;
  }
};

const shop = async () => {
  const clock = fixedClock(NOW);
  const merchant = await newMerchant();
  await ok(
    api.request('PUT', '/settings', {
      headers: { authorization: `Bearer ${await backofficeJwt(merchant.merchantId, 'admin')}` },
      body: { timezone: ZONE },
    }),
  );
  await ok(
    api.request('PUT', '/exchange-rates/USD', {
      token: merchant.token,
      body: { rates: [...RATES.get('USD')!].map(([month, rate]) => ({ month, rate })) },
    }),
  );
  await ok(api.post('/customers', merchant.token, { email: 'gold@sales.test', name: 'Gold', metadata: { tier: 'gold' } }), 201);
  const o = (no: string, email: string, over: Record<string, unknown>) => ({
    order_no: no,
    customer_email: email,
    amount: '100.00',
    status: 'paid',
    payment_method: 'credit_card',
    ...over,
  });
  await batch(merchant.token, [
    o('S-1', 'gold@sales.test', { created_at: '2026-01-05T02:00:00Z', paid_at: '2026-01-05T03:00:00Z' }),
    // Taipei's 1 February: February's rate; refunded in March, which has no USD rate.
    o('S-2', 'gold@sales.test', {
      amount: '10.00',
      currency: 'USD',
      status: 'refunded',
      created_at: '2026-01-31T16:30:00Z',
      paid_at: '2026-01-31T17:00:00Z',
      refunded_at: '2026-03-02T00:00:00Z',
    }),
    o('S-3', 'b@sales.test', {
      amount: '50.00',
      status: 'failed',
      payment_method: 'cvs',
      created_at: '2026-02-03T00:00:00Z',
      failed_at: '2026-02-03T00:05:00Z',
    }),
    o('S-4', 'b@sales.test', {
      amount: '33.33',
      payment_method: null,
      billing_cycle: 'monthly',
      created_at: '2026-02-10T00:00:00Z',
      paid_at: '2026-02-11T00:00:00Z',
    }),
    o('S-5', 'b@sales.test', {
      amount: '20.00',
      status: 'pending',
      payment_method: 'atm',
      created_at: '2026-03-01T00:00:00Z',
      paid_at: null,
    }),
    // March has no USD rate: left out, created and paid.
    o('S-6', 'c@sales.test', { amount: '7.77', currency: 'USD', created_at: '2026-03-04T00:00:00Z', paid_at: '2026-03-04T01:00:00Z' }),
    o('S-7', 'c@sales.test', { amount: '12.34', status: 'cancelled', created_at: '2026-03-05T00:00:00Z', paid_at: null }),
  ]);
  clock.set(NOW);
  return merchant;
};

const QUERIES: { q: string; interval: RefInterval; start: string; end: string; filters?: Record<string, string>; tier?: boolean }[] = [
  { q: '', interval: 'month', start: '2025-04-01', end: '2026-03-20' },
  { q: 'start_date=2026-01-01&end_date=2026-03-20&interval=day', interval: 'day', start: '2026-01-01', end: '2026-03-20' },
  { q: 'start_date=2026-01-15&end_date=2026-03-10&interval=week', interval: 'week', start: '2026-01-15', end: '2026-03-10' },
  { q: 'start_date=2026-01-01&end_date=2026-03-20&interval=quarter', interval: 'quarter', start: '2026-01-01', end: '2026-03-20' },
  { q: 'start_date=2025-06-01&end_date=2026-03-20&interval=year', interval: 'year', start: '2025-06-01', end: '2026-03-20' },
  ...(
    [
      ['payment_method', 'none'],
      ['payment_method', 'credit_card'],
      ['currency', 'USD'],
      ['source', 'import'],
      ['source', 'api'],
      ['billing_cycle', 'monthly'],
      ['billing_cycle', 'one-time'],
    ] as const
  ).map(([k, v]) => ({
    q: `start_date=2026-01-01&end_date=2026-03-20&${k}=${v}`,
    interval: 'month' as const,
    start: '2026-01-01',
    end: '2026-03-20',
    filters: { [k]: v },
  })),
  {
    q: 'start_date=2026-01-01&end_date=2026-03-20&metadata.tier=gold',
    interval: 'month',
    start: '2026-01-01',
    end: '2026-03-20',
    tier: true,
  },
];

/** Every read equals the reference over the orders the API now lists. */
const expectAllAsReference = async (token: string) => {
  const orders = await storedOrders(token);
  const gold = new Set(orders.filter((o) => o.customer_email === 'gold@sales.test').map((o) => o.customer_id));
  for (const { q, interval, start, end, filters, tier } of QUERIES) {
    const got = await ok(api.get(`/metrics/sales?${q}`, token));
    const expected = refSales(orders, {
      start,
      end,
      interval,
      zone: ZONE,
      reporting: 'TWD',
      rates: RATES,
      ...filters,
      ...(tier ? { customers: gold } : {}),
    });
    expect(got, q).toEqual(expected);
  }
  expect(await ok(api.get('/metrics/payment-methods?start_date=2026-01-01&end_date=2026-03-20', token))).toEqual(
    refPaymentMethods(orders, { start: '2026-01-01', end: '2026-03-20', zone: ZONE, reporting: 'TWD', rates: RATES }),
  );
  expect(await ok(api.get('/metrics/purchase-cohorts?start_month=2025-12&end_month=2026-03', token))).toEqual(
    refPurchaseCohorts(orders, { start: '2025-12', end: '2026-03', current: '2026-03', zone: ZONE, reporting: 'TWD', rates: RATES }),
  );
  return orders;
};

describe('sales reads', () => {
  it('equal the reference over the orders as stored, and follow every later change', async () => {
    const { token } = await shop();
    const before = await expectAllAsReference(token);
    expect(before).toHaveLength(7);
    // docs/sales.md's worked example, worked by hand.
    const sales = await ok(api.get('/metrics/sales?start_date=2026-01-01&end_date=2026-03-20', token));
    const row = (p: Record<string, unknown>) => [
      p.gross_revenue,
      p.refunds,
      p.orders,
      p.paid_orders,
      p.failed_orders,
      p.aov,
      p.first_order_revenue,
      p.returning_revenue,
      p.new_buyers,
    ];
    expect([...sales.data, sales.summary].map(row)).toEqual([
      ['100.00', '0.00', 1, 1, 0, '100.00', '100.00', '0.00', 1],
      ['355.83', '0.00', 3, 2, 1, '177.92', '33.33', '322.50', 1],
      ['0.00', '0.00', 2, 0, 0, null, '0.00', '0.00', 0],
      ['455.83', '0.00', 6, 3, 1, '151.94', '133.33', '322.50', 2],
    ]);
    expect(sales.unconverted).toEqual({ USD: { gross_revenue: '7.77', refunds: '10.00', orders: 1 } });
    const methods = await ok(api.get('/metrics/payment-methods?start_date=2026-01-01&end_date=2026-03-20', token));
    expect(
      methods.data.map((r: Record<string, unknown>) => [r.payment_method, r.orders, r.success_rate, r.gross_revenue, r.avg_seconds_to_pay]),
    ).toEqual([
      ['credit_card', 3, 100, '422.50', 2700],
      ['atm', 1, null, '0.00', null],
      ['cvs', 1, 0, '0.00', null],
      ['none', 1, 100, '33.33', 86400],
    ]);
    const cohorts = await ok(api.get('/metrics/purchase-cohorts?start_month=2026-01&end_month=2026-03', token));
    expect(cohorts.data.map((c: { cohort: string; customers: number }) => [c.cohort, c.customers])).toEqual([
      ['2026-01', 1],
      ['2026-02', 1],
      ['2026-03', 0],
    ]);
    expect(cohorts.data[0].periods[1]).toEqual({
      month: '2026-02',
      buyers: 1,
      orders: 1,
      gross_revenue: '322.50',
      revenue_per_customer: '422.50',
      repeat_rate: 100,
    });
    expect(cohorts.unconverted).toEqual({ USD: { gross_revenue: '7.77', orders: 1 } });

    // A back-dated import makes a new first order for b, a refund lands, an upsert moves S-1's money and currency.
    await batch(token, [
      {
        order_no: 'S-0',
        customer_email: 'b@sales.test',
        amount: '5.00',
        status: 'paid',
        created_at: '2025-12-30T00:00:00Z',
        paid_at: '2025-12-30T00:00:00Z',
      },
      {
        order_no: 'S-1',
        customer_email: 'gold@sales.test',
        amount: '20.00',
        currency: 'USD',
        status: 'paid',
        paid_at: '2026-01-05T03:00:00Z',
      },
    ]);
    await ok(api.request('PATCH', '/orders/S-4', { token, body: { status: 'refunded', refunded_at: '2026-03-10T00:00:00Z' } }));
    const after = await expectAllAsReference(token);
    expect(after.find((o) => o.order_no === 'S-1')).toMatchObject({ amount: '20.00', currency: 'USD' });
    // b's first paid order is now December's: S-4 turns returning, and b's cohort moved there with all its orders.
    const feb = (await ok(api.get('/metrics/sales?start_date=2026-02-01&end_date=2026-02-28', token))).data[0];
    expect(feb).toMatchObject({ first_order_revenue: '0.00', new_buyers: 0 });
    const moved = await ok(api.get('/metrics/purchase-cohorts?start_month=2025-12&end_month=2026-03', token));
    expect(moved.data[0]).toMatchObject({ cohort: '2025-12', customers: 1 });
    expect(moved.data[0].periods[2]).toMatchObject({ month: '2026-02', buyers: 1, orders: 1, gross_revenue: '33.33', repeat_rate: 100 });

    // Deleting a customer changes no figure.
    const gold = after.find((o) => o.customer_email === 'gold@sales.test')!.customer_id;
    expect((await api.request('DELETE', `/customers/${gold}`, { token })).status).toBe(204);
    await expectAllAsReference(token);
  });

  it('answer text/csv with the JSON figures', async () => {
    const { token } = await shop();
    for (const path of [
      '/metrics/sales?start_date=2026-01-01&end_date=2026-03-20&interval=month',
      '/metrics/payment-methods?start_date=2026-01-01&end_date=2026-03-20',
    ]) {
      const json = await ok(api.get(path, token));
      const csv = await api.get(path, token, { accept: 'text/csv' });
      expect(csv.headers.get('content-type'), path).toBe('text/csv; charset=utf-8');
      const [header, ...rows] = parse(csv.body as string) as string[][];
      expect(header, path).toEqual(Object.keys(json.data[0]));
      expect(rows, path).toEqual(json.data.map((d: Record<string, unknown>) => header.map((c) => (d[c] === null ? '' : String(d[c])))));
    }
    const cohorts = await ok(api.get('/metrics/purchase-cohorts?start_month=2026-01&end_month=2026-02', token));
    const [header, ...rows] = parse(
      (await api.get('/metrics/purchase-cohorts?start_month=2026-01&end_month=2026-02', token, { accept: 'text/csv' })).body as string,
    ) as string[][];
    expect(header).toEqual([
      'cohort',
      'customers',
      'periods.month',
      'periods.buyers',
      'periods.orders',
      'periods.gross_revenue',
      'periods.revenue_per_customer',
      'periods.repeat_rate',
    ]);
    expect(rows).toHaveLength(cohorts.data.reduce((n: number, c: { periods: unknown[] }) => n + c.periods.length, 0));
  });

  it('refuse bad queries with a 422 naming the field and what is allowed', async () => {
    const { token } = await shop();
    const refused = async (path: string, field: string, says: RegExp) => {
      const r = await api.get(path, token);
      expect(r.status, path).toBe(422);
      expect(Object.keys(r.body.errors), path).toEqual([field]);
      expect(r.body.errors[field].join(' '), path).toMatch(says);
    };
    await refused('/metrics/sales?interval=hour', 'interval', /day, week, month, quarter, year|day.*week.*month.*quarter.*year/);
    await refused('/metrics/sales?payment_method=paypal', 'payment_method', /credit_card.*none/);
    await refused('/metrics/sales?source=pos', 'source', /api.*import/);
    await refused('/metrics/sales?billing_cycle=weekly', 'billing_cycle', /one-time/);
    await refused('/metrics/sales?plan=Pro', 'plan', /Allowed: .*payment_method.*metadata/);
    await refused('/metrics/sales?end_date=2026-03-21', 'end_date', /today/);
    await refused('/metrics/sales?start_date=2026-03-02&end_date=2026-03-01', 'end_date', /after or equal to the start date/);
    await refused('/metrics/sales?start_date=2024-01-01&end_date=2026-03-01&interval=day', 'end_date', /731 days/);
    await refused('/metrics/payment-methods?end_date=2026-03-21', 'end_date', /today/);
    await refused('/metrics/payment-methods?currency=USD', 'currency', /Allowed: start_date, end_date/);
    await refused('/metrics/purchase-cohorts?start_month=2023-01&end_month=2026-01', 'end_month', /36 months/);
    await refused('/metrics/purchase-cohorts?start_month=2026-13', 'start_month', /YYYY-MM/);
  });
});

/**
 * The shop as an earlier version left it: orders with no bookings kept with their customers (a
 * customer with one-time orders only had no timeline head at all) and no sales items.
 */
const forgetSales = async (merchantId: string) => {
  const merchant = await getMerchant(merchantId);
  const generation = merchant ? generationOf(merchant) : 0;
  for (let id = 1; id <= (await lastCustomerId(merchantId)); id++) {
    const key = keys.customerTimeline(merchantId, id);
    const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }));
    if (!Item) continue;
    const lines = Object.fromEntries(Object.entries(JSON.parse(String(Item.lines))).filter(([line]) => !line.startsWith('B')));
    if (!Object.keys(lines).length) await db().send(new DeleteCommand({ TableName: tableName(), Key: key }));
    else await db().send(new PutCommand({ TableName: tableName(), Item: { ...Item, lines: JSON.stringify(lines) } }));
  }
  const registry = (
    await Promise.all(
      Array.from({ length: COUNTER_SHARDS }, (_, s) =>
        queryAll<{ dimension: string; value: string }>({ partition: generationSegmentsPartition(merchantId, generation, s) }, [
          'dimension',
          'value',
        ]),
      ),
    )
  ).flat();
  const segments = [
    null,
    ...registry.filter((r) => r.dimension.startsWith('sales.')).map((r) => ({ dimension: r.dimension.slice(6), value: r.value })),
  ];
  expect(segments.length).toBeGreaterThan(4);
  for (const segment of segments)
    for (const partition of salesPartitions(salesPartition(merchantId, segment, generation)))
      for (const item of await queryAll<{ pk: string; sk: string }>({ partition }, ['pk', 'sk']))
        await db().send(new DeleteCommand({ TableName: tableName(), Key: { pk: item.pk, sk: item.sk } }));
};

describe('sales figures of orders written before bookings were kept', () => {
  it('ops metrics rebuild gives every customer its bookings from its orders, and the figures are the reference again', async () => {
    const { token, merchantId } = await shop();
    const orders = await expectAllAsReference(token);
    await forgetSales(merchantId);
    const forgotten = await ok(api.get('/metrics/sales?start_date=2026-01-01&end_date=2026-03-20', token));
    expect(forgotten.summary.orders).toBe(0);
    // Two orders' bookings a write: a customer's are written in several steps, as a large customer's are.
    const report = await rebuildMerchantAggregates(merchantId, repairCustomer, { bookingsPerWrite: 2 });
    // Every customer with orders is written again: its bookings.
    expect(report.timelines_rederived).toBe(new Set(orders.map((o) => o.customer_id)).size);
    await expectAllAsReference(token);
    expect(await rebuildMerchantAggregates(merchantId, repairCustomer)).toMatchObject({ timelines_rederived: 0, aggregates_corrected: 0 });
  }, 120_000);
});
