import { INVALID_DATA } from '#lib/errors';
import Decimal from 'decimal.js';
import { EVENT_TYPES } from '#lib/outbox/store';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { failOnce, sdkTimeout } from '../support/faults.ts';
import {
  activityRecords,
  createOrder,
  expect422,
  expectFiguresMatchOrders,
  figuresFromOrders,
  listAll,
  outboxEvents,
  pickFigures,
  storedCounts,
  uniqueNo,
} from './helpers.ts';

const api = useApi();
afterEach(() => resetClock());

const T0 = '2026-08-01T08:00:00Z';
const T1 = '2026-08-03T10:00:00Z';

const batch = async (token: string, orders: unknown[]) => {
  const r = await api.post('/orders/batch', token, { orders });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
};

describe('POST /orders/batch', () => {
  it('creates, accumulates into existing orders, repeats in order, and reports failures per item', async () => {
    const clock = fixedClock(T0);
    const { merchantId, token } = await newMerchant();
    const existing = await createOrder(api, token, {
      order_no: 'E-1',
      amount: '100',
      currency: 'USD',
      payment_method: 'atm',
      billing_cycle: 'monthly',
      metadata: { a: 1 },
      customer_email: 'ann@example.com',
      customer_name: 'Ann',
    });
    clock.set(T1);
    const items: unknown[] = [
      /* 0 */ { order_no: 'E-1', amount: '', currency: null, payment_method: 'cvs', metadata: { b: 2 }, status: 'paid', billing_cycle: '' },
      /* 1 */ { order_no: 'N-1', amount: '10', customer_email: 'New@Example.com', customer_name: 'New' },
      /* 2 */ { order_no: 'bad no', amount: 1, customer_email: 'x@example.com' },
      /* 3 */ { amount: 5, customer_email: 'y@example.com' },
      /* 4 */ 'not an object',
      /* 5 */ { order_no: 'N-2', customer_email: 'n2@example.com' },
      /* 6 */ { order_no: 'N-1', status: 'paid', paid_at: '2026-01-01T08:00:00+08:00' },
      /* 7 */ { order_no: 'N-1', amount: '20' },
      /* 8 */ { order_no: 'N-3', amount: 'abc', customer_email: 'z@example.com' },
      /* 9 */ { order_no: 'N-4', amount: '3', customer_email: 'not an email' },
      /* 10 */ { order_no: 'N-5', amount: '1', customer_email: 'ANN@example.com', status: 'refunded', customer_name: 'Not Ann' },
      /* 11 */ { order_no: 'N-2', amount: '5', customer_email: 'n2@example.com' },
      /* 12 */ { order_no: 'N-6' },
      /* 13 */ { order_no: 'N-7', amount: 5 },
      /* 14 */ null,
      /* 15 */ { order_no: 'N-8', amount: '1', customer_email: 'q@example.com', status: 'bogus' },
    ];
    const data = await batch(token, items);
    expect(data).toMatchObject({ total: 16, created: 3, updated: 3, skipped: 0, failed: 10 });
    expect(data.results.created.map((x: any) => [x.index, x.identifier])).toEqual([
      [1, 'N-1'],
      [10, 'N-5'],
      [11, 'N-2'],
    ]);
    expect(data.results.updated.map((x: any) => [x.index, x.identifier])).toEqual([
      [0, 'E-1'],
      [6, 'N-1'],
      [7, 'N-1'],
    ]);
    expect(data.results.failed.map((x: any) => [x.index, x.identifier, x.reason])).toEqual([
      [2, 'bad no', 'validation_error'],
      [3, '', 'validation_error'],
      [4, '', 'validation_error'],
      [5, 'N-2', 'validation_error'],
      [8, 'N-3', 'validation_error'],
      [9, 'N-4', 'validation_error'],
      [12, 'N-6', 'validation_error'],
      [13, 'N-7', 'validation_error'],
      [14, '', 'validation_error'],
      [15, 'N-8', 'validation_error'],
    ]);
    expect(data.results.skipped).toEqual([]);
    for (const f of data.results.failed) expect(f.message).toMatch(/^The .+\.$/);
    const failedMessage = (i: number) => data.results.failed.find((f: any) => f.index === i).message;
    expect(failedMessage(5)).toMatch(/amount/);
    expect(failedMessage(8)).toMatch(/amount/);
    expect(failedMessage(9)).toMatch(/email/);
    expect(failedMessage(13)).toMatch(/email/);
    expect(failedMessage(3)).toMatch(/order no/);

    // Updated items carry the order's id; repeats of one order_no share it.
    expect(data.results.updated[0].id).toBe(existing.id);
    const n1 = data.results.created[0].id;
    expect(data.results.updated[1].id).toBe(n1);
    expect(data.results.updated[2].id).toBe(n1);
    expect(new Set(data.results.created.map((x: any) => x.id)).size).toBe(3);

    const e1 = (await api.get('/orders/E-1', token)).body.data;
    expect(e1).toEqual({
      ...existing,
      amount: '100.00', // "" leaves it alone
      currency: 'USD', // null leaves it alone
      billing_cycle: 'monthly',
      payment_method: 'cvs', // supplied: replaced
      metadata: { b: 2 }, // replaced, not merged
      status: 'paid',
      paid_at: T1, // filled as at creation
      updated_at: T1,
    });
    const n1Order = (await api.get('/orders/N-1', token)).body.data;
    expect(n1Order).toMatchObject({
      id: n1,
      amount: '20.00',
      status: 'paid',
      paid_at: '2026-01-01T00:00:00Z',
      currency: 'TWD',
      billing_cycle: 'one-time',
      source: 'import',
      payment_method: null,
      metadata: null,
      customer_email: 'new@example.com',
      customer_name: 'New',
      created_at: T1,
    });
    const n5 = (await api.get('/orders/N-5', token)).body.data;
    expect(n5).toMatchObject({ status: 'refunded', refunded_at: T1, customer_id: existing.customer_id, customer_name: 'Ann' });
    expect((await api.get('/orders/N-2', token)).body.data).toMatchObject({ amount: '5.00', status: 'pending', source: 'import' });
    for (const missing of ['N-3', 'N-4', 'N-6', 'N-7', 'N-8']) expect((await api.get(`/orders/${missing}`, token)).status).toBe(404);

    // No webhook events (the one internal event arms the renewal check of a paid recurring order); one activity record.
    const recorded = (await outboxEvents(merchantId)).map((e) => e.type);
    expect(recorded.filter((t) => (EVENT_TYPES as readonly string[]).includes(t))).toEqual(['order.created']);
    expect(recorded.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t))).toEqual(['customer.renewal_grace']);
    const activity = await activityRecords(merchantId);
    expect(activity).toHaveLength(1);
    expect(activity[0]).toMatchObject({ type: 'orders.batch', total: 16, created: 3, updated: 3, failed: 10, created_at: T1 });

    const customers = (await api.get('/customers?per_page=100', token)).body.data;
    expect(customers.map((c: any) => c.email).sort()).toEqual(['ann@example.com', 'n2@example.com', 'new@example.com']);
    const annNow = customers.find((c: any) => c.email === 'ann@example.com');
    expect(annNow.name).toBe('Ann');
    expect(pickFigures(annNow)).toEqual({
      ltv: '0.00',
      ltv_by_currency: { USD: '100.00' },
      order_count: 1,
      first_payment_at: T1,
      last_payment_at: T1,
    });
    expect(customers.find((c: any) => c.email === 'new@example.com')).toMatchObject({ name: 'New', ltv: '20.00', order_count: 1 });
    expect((await api.get('/orders', token)).body.meta.total).toBe(4);
  });

  it('100 items in one request: chunked writes keep every order and every figure', async () => {
    fixedClock(T1);
    const { merchantId, token } = await newMerchant();
    const items = Array.from({ length: 100 }, (_, i) => ({
      order_no: `H-${i}`,
      amount: `${i}.${String(i % 100).padStart(2, '0')}`,
      customer_email: `c${i % 7}@example.com`,
      status: i % 3 === 0 ? 'paid' : i % 3 === 1 ? 'pending' : 'refunded',
      ...(i % 3 !== 1 ? { paid_at: `2026-0${1 + (i % 8)}-${String(1 + (i % 28)).padStart(2, '0')}T0${i % 10}:00:00Z` } : {}),
      currency: i % 5 === 0 ? 'USD' : 'TWD',
    }));
    const data = await batch(token, items);
    expect(data).toMatchObject({ total: 100, created: 100, updated: 0, failed: 0 });
    expect(data.results.created.map((x: any) => x.index)).toEqual(items.map((_, i) => i));
    expect(new Set(data.results.created.map((x: any) => x.id)).size).toBe(100);

    const { orders, total } = await listAll(api, token);
    expect(total).toBe(100);
    expect(orders.map((o) => o.order_no).sort()).toEqual(items.map((i) => i.order_no).sort());
    for (const o of orders) expect(o.source).toBe('import');

    // Each customer's figures equal those recomputed from its orders.
    const byCustomer = new Map<number, any[]>();
    for (const o of orders) byCustomer.set(o.customer_id, [...(byCustomer.get(o.customer_id) ?? []), o]);
    expect(byCustomer.size).toBe(7);
    for (const [id, list] of byCustomer) {
      const c = (await api.get(`/customers/${id}`, token)).body.data;
      const expected = figuresFromOrders(list);
      expect(pickFigures(c)).toEqual(expected);
      expect(expected.order_count).toBeGreaterThan(0);
    }
    expect((await api.get('/orders/stats', token)).body.data).toMatchObject({ today_count: 100, today_success_rate: 34 });
    expect(await outboxEvents(merchantId)).toEqual([]);
    expect(await activityRecords(merchantId)).toHaveLength(1);
  });

  it('racing batches over the same order_nos: each item reported once, each order created once, figures kept', async () => {
    fixedClock(T1);
    for (let round = 0; round < 2; round++) {
      const { merchantId, token } = await newMerchant();
      const items = (k: number) => [
        { order_no: 'R-0' }, // a new order_no without amount: fails (unless another batch created it first)
        ...Array.from({ length: 8 }, (_, i) => ({
          order_no: `R-${i}`,
          amount: `${k + i}.5`,
          customer_email: `r${(i + k) % 3}@example.com`,
          status: (i + k) % 2 ? 'paid' : 'pending',
          paid_at: `2026-08-0${1 + ((i + k) % 9)}T00:00:00Z`,
        })),
      ];
      const results = (await Promise.all([0, 1, 2].map((k) => api.post('/orders/batch', token, { orders: items(k) })))).map((r) => {
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        return r.body.data;
      });
      const createdNos: string[] = [];
      for (const data of results) {
        const all = [...data.results.created, ...data.results.updated, ...data.results.failed, ...data.results.skipped];
        expect(all.map((x: any) => x.index).sort((a: number, b: number) => a - b)).toEqual([...Array(9).keys()]);
        expect(data.created + data.updated + data.failed + data.skipped).toBe(data.total);
        createdNos.push(...data.results.created.map((x: any) => x.identifier));
      }
      expect(createdNos.sort()).toEqual([...Array(8).keys()].map((i) => `R-${i}`));
      const { orders, total } = await listAll(api, token);
      expect(total).toBe(8);
      for (const id of new Set(orders.map((o) => o.customer_id))) await expectFiguresMatchOrders(api, token, id);
      expect((await api.get('/orders/stats', token)).body.data).toMatchObject({
        today_count: 8,
        today_success_rate: new Decimal(orders.filter((o) => o.status === 'paid').length).times(100).div(8).toDecimalPlaces(1).toNumber(),
      });
      const activity = await activityRecords(merchantId);
      expect(activity).toHaveLength(3);
      for (const a of activity) expect(a.created + a.updated + a.failed).toBe(9);
    }
  }, 120_000);

  it('refuses 101 items, an empty list, or no list, with 422 on orders; stores nothing', async () => {
    const { merchantId, token } = await newMerchant();
    const item = (i: number) => ({ order_no: `X-${i}`, amount: '1', customer_email: `x${i}@example.com` });
    const bodies: unknown[] = [
      { orders: Array.from({ length: 101 }, (_, i) => item(i)) },
      { orders: [] },
      { orders: 'x' },
      { orders: { 0: item(0) } },
      { orders: null },
      {},
      { order: [item(0)] },
    ];
    for (const body of bodies) expect422(await api.post('/orders/batch', token, body), 'orders');
    const notJson = await api.request('POST', '/orders/batch', {
      token,
      rawBody: '{"orders": [',
      headers: { 'content-type': 'application/json' },
    });
    expect(notJson.status).toBe(400);
    expect(await storedCounts(merchantId)).toEqual({ orders: 0, customers: 0, outbox: 0 });
    expect(await activityRecords(merchantId)).toEqual([]);
  });

  it('a batch whose items all fail still answers 200 and logs one activity record', async () => {
    const { merchantId, token } = await newMerchant();
    const data = await batch(token, [{ order_no: 'only-no' }, { amount: 1 }]);
    expect(data).toMatchObject({ total: 2, created: 0, updated: 0, failed: 2 });
    expect(await storedCounts(merchantId)).toEqual({ orders: 0, customers: 0, outbox: 0 });
    expect(await activityRecords(merchantId)).toHaveLength(1);
  });

  it('status moves freely in imports and the figures follow; paid orders emit no events', async () => {
    const clock = fixedClock(T0);
    const { merchantId, token } = await newMerchant();
    await batch(token, [{ order_no: 'F-1', amount: '50', customer_email: 'f@example.com', status: 'paid' }]);
    const id = (await api.get('/orders/F-1', token)).body.data.customer_id;
    const figures = async () => ({
      customer: (await api.get(`/customers/${id}`, token)).body.data,
      stats: (await api.get('/orders/stats', token)).body.data,
      order: (await api.get('/orders/F-1', token)).body.data,
    });
    let f = await figures();
    expect(f.customer).toMatchObject({ ltv: '50.00', order_count: 1, first_payment_at: T0, last_payment_at: T0 });
    expect(f.stats).toEqual({ today_revenue: '50.00', monthly_revenue: '50.00', today_count: 1, today_success_rate: 100 });

    clock.set('2026-08-01T09:00:00Z');
    await batch(token, [{ order_no: 'F-1', status: 'refunded' }]);
    f = await figures();
    expect(f.order).toMatchObject({ status: 'refunded', paid_at: T0, refunded_at: '2026-08-01T09:00:00Z' });
    expect(f.customer).toMatchObject({ ltv: '0.00', order_count: 0, first_payment_at: T0, last_payment_at: T0 });
    expect(f.stats).toEqual({ today_revenue: '0.00', monthly_revenue: '0.00', today_count: 1, today_success_rate: 0 });

    await batch(token, [{ order_no: 'F-1', status: 'pending' }]);
    f = await figures();
    expect(f.order).toMatchObject({ status: 'pending', paid_at: T0, refunded_at: '2026-08-01T09:00:00Z' });
    // A pending order has not been paid: it no longer gives the payment times.
    expect(f.customer).toMatchObject({ ltv: '0.00', order_count: 0, first_payment_at: null, last_payment_at: null });
    expect((await api.get('/orders?status=pending', token)).body.meta.total).toBe(1);
    expect((await api.get('/orders?status=refunded', token)).body.meta.total).toBe(0);

    await batch(token, [{ order_no: 'F-1', status: 'paid', amount: '60' }]);
    f = await figures();
    expect(f.order).toMatchObject({ status: 'paid', amount: '60.00', paid_at: T0 });
    expect(f.customer).toMatchObject({ ltv: '60.00', order_count: 1, first_payment_at: T0, last_payment_at: T0 });
    expect(f.stats).toEqual({ today_revenue: '60.00', monthly_revenue: '60.00', today_count: 1, today_success_rate: 100 });

    expect(await outboxEvents(merchantId)).toEqual([]);
    expect(await activityRecords(merchantId)).toHaveLength(4);
  });
});

describe('updated_at', () => {
  it('a batch item that changes nothing is reported updated but writes nothing; order writes leave the customer updated_at alone', async () => {
    const clock = fixedClock('2026-05-01T10:00:00Z');
    const { token } = await newMerchant();
    const item = {
      order_no: uniqueNo('UPD'),
      amount: '10.00',
      customer_email: 'same@example.com',
      status: 'paid',
      paid_at: '2026-05-01T09:00:00Z',
    };
    expect((await api.post('/orders/batch', token, { orders: [item] })).body.data.created).toBe(1);
    const customerBefore = (await api.get('/customers?search=same@example.com', token)).body.data[0];
    clock.set('2026-05-02T10:00:00Z');
    const again = await api.post('/orders/batch', token, { orders: [item, { order_no: item.order_no, amount: '10' }] });
    expect(again.body.data).toMatchObject({ updated: 2, failed: 0 });
    const order = (await api.get(`/orders/${item.order_no}`, token)).body.data;
    expect(order.updated_at).toBe('2026-05-01T10:00:00Z');
    // A real change moves it; the customer's figures move, its updated_at (profile changes only) does not.
    await api.post('/orders/batch', token, { orders: [{ order_no: item.order_no, amount: '12.00' }] });
    expect((await api.get(`/orders/${item.order_no}`, token)).body.data.updated_at).toBe('2026-05-02T10:00:00Z');
    const customerAfter = (await api.get('/customers?search=same@example.com', token)).body.data[0];
    expect(customerAfter.ltv).toBe('12.00');
    expect(customerAfter.updated_at).toBe(customerBefore.updated_at);
    resetClock();
  });
});

describe('one batch, applied in array order', () => {
  it('a repeated order_no moving to a second new email still creates the first email’s customer, as two batches would', async () => {
    const { token } = await newMerchant();
    const no = uniqueNo('MOVE');
    const r = await api.post('/orders/batch', token, {
      orders: [
        { order_no: no, amount: '5.00', customer_email: 'first@example.com', customer_name: 'First', status: 'paid' },
        { order_no: no, customer_email: 'second@example.com', customer_name: 'Second' },
      ],
    });
    expect(r.body.data).toMatchObject({ created: 1, updated: 1, failed: 0 });
    const first = (await api.get('/customers?search=first@example.com', token)).body.data;
    const second = (await api.get('/customers?search=second@example.com', token)).body.data;
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({ name: 'First', order_count: 0, ltv: '0.00' });
    expect(second[0]).toMatchObject({ name: 'Second', order_count: 1, ltv: '5.00' });
    expect((await api.get(`/orders/${no}`, token)).body.data.customer_id).toBe(second[0].id);
  });
});

describe('POST /orders/batch when DynamoDB does not answer', () => {
  it('sends a chunk that got no answer again as it is (its token: applied once), never unit by unit; each item answered as it went', async () => {
    const { token } = await newMerchant();
    const [a, b] = [uniqueNo(), uniqueNo()];
    // The chunk's transaction gets no answer twice; the third send of the same transaction lands.
    const faults = [failOnce('TransactWriteItems', sdkTimeout), failOnce('TransactWriteItems', sdkTimeout)];
    try {
      const data = await batch(token, [
        { order_no: a, amount: '1.00', customer_email: 'a@example.com' },
        { order_no: b, amount: '2.00', customer_email: 'b@example.com' },
      ]);
      expect(faults.map((f) => f.stats.fired)).toEqual([true, true]);
      expect(data).toMatchObject({ total: 2, created: 2, failed: 0 });
    } finally {
      for (const f of faults) f.uninstall();
    }
    for (const no of [a, b]) expect((await api.get(`/orders/${no}`, token)).status).toBe(200);
    expect((await api.get('/orders', token)).body.meta.total).toBe(2);
  });
});

describe('outbox items', () => {
  it('carry the stream filter attribute, a TTL and their time-ordered mark, and no flag of their own to write again', async () => {
    const clock = fixedClock('2026-06-01T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    await createOrder(api, token, { status: 'paid' });
    const events = await outboxEvents(merchantId);
    expect(events.map((e) => e.type)).toEqual(['order.created', 'order.paid']);
    for (const e of events) {
      expect(e).toMatchObject({ entity: 'outbox', expires_at: Date.parse('2026-06-04T00:00:00Z') / 1000 });
      expect(e).not.toHaveProperty('published');
      expect(e.mark_sk).toMatch(/^2026-06-01T00:00:00Z#0[01]#evt_/);
    }
    clock.set('2026-06-01T00:00:00Z');
    resetClock();
  });
});

describe('money per currency: zero-decimal currencies take whole amounts', () => {
  it('POST /orders and batch items refuse a fraction in JPY, KRW or VND (422 on amount); nothing is stored', async () => {
    const { token } = await newMerchant();
    const whole = 'The amount field must be a whole number in JPY, which has no minor unit.';
    const refused = await api.post('/orders', token, {
      order_no: 'JPY-1',
      amount: '3561.50',
      currency: 'jpy',
      customer_email: 'yen@example.com',
    });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({ message: INVALID_DATA, errors: { amount: [whole] } });
    expect((await api.get('/orders/JPY-1', token)).status).toBe(404);
    for (const [currency, amount] of [
      ['KRW', 10.5],
      ['VND', '0.01'],
    ] as const) {
      const r = await api.post('/orders', token, { order_no: `Z-${currency}`, amount, currency, customer_email: 'z@example.com' });
      expect(r.status, currency).toBe(422);
      expect(r.body.errors.amount, currency).toEqual([`The amount field must be a whole number in ${currency}, which has no minor unit.`]);
    }
    // Whole amounts pass, written with 2 fraction digits; two-decimal currencies keep their cents.
    const yen = await api.post('/orders', token, {
      order_no: 'JPY-2',
      amount: '3561.00',
      currency: 'JPY',
      customer_email: 'yen@example.com',
    });
    expect(yen.status, JSON.stringify(yen.body)).toBe(201);
    expect(yen.body.data).toMatchObject({ amount: '3561.00', currency: 'JPY' });
    expect(
      (await api.post('/orders', token, { order_no: 'USD-1', amount: '3561.50', currency: 'USD', customer_email: 'usd@example.com' }))
        .status,
    ).toBe(201);

    const data = await batch(token, [
      /* 0 */ { order_no: 'B-JPY', amount: '10.5', currency: 'JPY', customer_email: 'b@example.com' },
      /* 1 */ { order_no: 'B-JPY', amount: '10', currency: 'JPY', customer_email: 'b@example.com' },
      /* 2 */ { order_no: 'USD-1', currency: 'JPY' }, // the stored 3561.50 cannot become yen
      /* 3 */ { order_no: 'JPY-2', amount: '1.25' }, // nor can a yen order take cents
      /* 4 */ { order_no: 'JPY-2', amount: '12' },
    ]);
    expect(data).toMatchObject({ created: 1, updated: 1, failed: 3 });
    expect(data.results.failed).toEqual([
      {
        index: 0,
        reason: 'validation_error',
        message: 'The amount field must be a whole number in JPY, which has no minor unit.',
        identifier: 'B-JPY',
      },
      {
        index: 2,
        reason: 'validation_error',
        message: "The currency field cannot be JPY: the order's amount 3561.50 has a fraction and JPY has no minor unit.",
        identifier: 'USD-1',
      },
      {
        index: 3,
        reason: 'validation_error',
        message: 'The amount field must be a whole number in JPY, which has no minor unit.',
        identifier: 'JPY-2',
      },
    ]);
    expect((await api.get('/orders/USD-1', token)).body.data).toMatchObject({ amount: '3561.50', currency: 'USD' });
    expect((await api.get('/orders/JPY-2', token)).body.data).toMatchObject({ amount: '12.00', currency: 'JPY' });
    expect((await api.get('/orders/B-JPY', token)).body.data).toMatchObject({ amount: '10.00', currency: 'JPY' });
  });
});

describe('imported orders keep their dates (created_at)', () => {
  it('lists, date filters, today_count and today_success_rate follow an imported created_at; a later import may move it; the future is refused', async () => {
    const clock = fixedClock('2026-03-10T08:00:00Z');
    const { token } = await newMerchant();
    const jan = Array.from({ length: 5 }, (_, i) => ({
      order_no: `JAN-${i}`,
      amount: '100',
      customer_email: 'old@example.com',
      status: 'paid',
      created_at: `2026-01-${String(10 + i).padStart(2, '0')}T09:00:00+08:00`,
      paid_at: `2026-01-${String(10 + i).padStart(2, '0')}T09:30:00Z`,
    }));
    const data = await batch(token, [
      ...jan,
      { order_no: 'TODAY-1', amount: '5', customer_email: 'new@example.com', status: 'paid' },
      { order_no: 'TODAY-2', amount: '5', customer_email: 'new@example.com' },
      { order_no: 'FUTURE', amount: '5', customer_email: 'new@example.com', created_at: '2026-03-10T08:00:01Z' },
      { order_no: 'BAD-DATE', amount: '5', customer_email: 'new@example.com', created_at: 'yesterday' },
      { order_no: 'FEB-PAID', amount: '70', customer_email: 'old@example.com', status: 'paid', created_at: '2026-02-03T04:05:06Z' },
    ]);
    expect(data).toMatchObject({ created: 8, failed: 2 });
    // A status time the import does not give is the order's own date, not the import's.
    expect((await api.get('/orders/FEB-PAID', token)).body.data).toMatchObject({
      created_at: '2026-02-03T04:05:06Z',
      paid_at: '2026-02-03T04:05:06Z',
    });
    expect((await api.get('/orders/stats', token)).body.data).toMatchObject({ today_revenue: '5.00', monthly_revenue: '5.00' });
    expect(data.results.failed).toEqual([
      {
        index: 7,
        reason: 'validation_error',
        message: 'The created at field must be a date before or equal to now.',
        identifier: 'FUTURE',
      },
      {
        index: 8,
        reason: 'validation_error',
        message: 'The created at field must be a valid ISO 8601 date-time with a time zone.',
        identifier: 'BAD-DATE',
      },
    ]);
    const january = await api.get('/orders?start_date=2026-01-01&end_date=2026-01-31', token);
    expect(january.body.data.map((o: { order_no: string }) => o.order_no)).toEqual(['JAN-4', 'JAN-3', 'JAN-2', 'JAN-1', 'JAN-0']);
    expect(january.body.data[4]).toMatchObject({ created_at: '2026-01-10T01:00:00Z', source: 'import' });
    expect((await api.get('/orders', token)).body.data.map((o: { order_no: string }) => o.order_no)).toEqual([
      'TODAY-2',
      'TODAY-1',
      'FEB-PAID',
      'JAN-4',
      'JAN-3',
      'JAN-2',
      'JAN-1',
      'JAN-0',
    ]);
    expect((await api.get('/orders/stats', token)).body.data).toMatchObject({ today_count: 2, today_success_rate: 50 });

    // A later import dates TODAY-2 to February: it leaves today's count and January's list alone.
    clock.set('2026-03-10T09:00:00Z');
    expect(await batch(token, [{ order_no: 'TODAY-2', created_at: '2026-02-01T00:00:00Z' }])).toMatchObject({ updated: 1, failed: 0 });
    expect((await api.get('/orders/stats', token)).body.data).toMatchObject({ today_count: 1, today_success_rate: 100 });
    expect(
      (await api.get('/orders?start_date=2026-02-01&end_date=2026-02-28', token)).body.data.map((o: { order_no: string }) => o.order_no),
    ).toEqual(['FEB-PAID', 'TODAY-2']);
    expect((await api.get('/orders?status=pending', token)).body.data.map((o: { order_no: string }) => o.order_no)).toEqual(['TODAY-2']);
    // POST /orders does not take it: the order is created now.
    const direct = await api.post('/orders', token, {
      order_no: 'DIRECT',
      amount: '1',
      customer_email: 'new@example.com',
      created_at: '2026-01-01T00:00:00Z',
    });
    expect(direct.body.data.created_at).toBe('2026-03-10T09:00:00Z');
  });
});

describe('POST /orders/batch under X-Idempotency-Key: an answer too large to record', () => {
  it('an item echoing a huge invalid order_no still gets its 200 and validation_error; the same request again answers the same', async () => {
    const { token } = await newMerchant();
    const body = { orders: [{ order_no: 'h'.repeat(500_000), amount: '1.00', customer_email: 'big@example.com', status: 'paid' }] };
    const send = () => api.request('POST', '/orders/batch', { token, headers: { 'x-idempotency-key': 'huge-1' }, body });
    const first = await send();
    expect(first.status, JSON.stringify(first.body).slice(0, 300)).toBe(200);
    expect(first.body.data).toMatchObject({ total: 1, failed: 1, created: 0 });
    expect(first.body.data.results.failed[0].reason).toBe('validation_error');
    // Not recorded (no item may hold it): run again, with the same answer, and nothing stored.
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body).toEqual(first.body);
    expect((await api.get('/orders', token)).body.meta.total).toBe(0);
  });
});
