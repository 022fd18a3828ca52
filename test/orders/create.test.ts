import { INVALID_DATA } from '#lib/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { createOrder, expect422, orderBody, outboxFor, storedCounts } from './helpers.ts';

const api = useApi();
afterEach(() => resetClock());

const NOW = '2026-03-01T10:00:00Z';

describe('POST /orders: initial status rules', () => {
  const cases = [
    { status: 'pending', stamp: null, events: ['order.created'] },
    { status: 'paid', stamp: 'paid_at', events: ['order.created', 'order.paid'] },
    { status: 'failed', stamp: 'failed_at', events: ['order.created'] },
    { status: 'refunded', stamp: 'refunded_at', events: ['order.created'] },
    { status: 'cancelled', stamp: null, events: ['order.created'] },
  ] as const;

  for (const c of cases) {
    it(`${c.status}: ${c.stamp ?? 'no timestamp'} filled with now; outbox ${c.events.join(' + ')} carrying the order`, async () => {
      fixedClock(NOW);
      const { merchantId, token } = await newMerchant();
      const order = await createOrder(api, token, { status: c.status });
      expect(order.status).toBe(c.status);
      for (const field of ['paid_at', 'refunded_at', 'failed_at']) {
        expect(order[field], field).toBe(field === c.stamp ? NOW : null);
      }
      expect(order.created_at).toBe(NOW);
      expect(order.updated_at).toBe(NOW);

      const events = await outboxFor(merchantId, order.order_no);
      expect(events.map((e) => e.type).sort()).toEqual([...c.events].sort());
      for (const e of events) {
        expect(e.data.object).toEqual(order);
        expect(e.id).toMatch(/^evt_[0-9a-f]+$/);
        expect(e.created_at).toBe(NOW);
      }
      expect(new Set(events.map((e) => e.id)).size).toBe(events.length);

      const got = await api.get(`/orders/${order.order_no}`, token);
      expect(got.status).toBe(200);
      expect(got.body.data).toEqual(order);
    });
  }

  it('supplied timestamps (with offsets) are converted to UTC and kept, never replaced by now', async () => {
    fixedClock(NOW);
    const { merchantId, token } = await newMerchant();
    const paid = await createOrder(api, token, { status: 'paid', paid_at: '2026-01-01T08:00:00+08:00' });
    expect(paid.paid_at).toBe('2026-01-01T00:00:00Z');
    const refunded = await createOrder(api, token, {
      status: 'refunded',
      paid_at: '2025-12-31T23:00:00-02:00',
      refunded_at: '2026-01-05T12:30:15.999Z',
    });
    expect(refunded).toMatchObject({ paid_at: '2026-01-01T01:00:00Z', refunded_at: '2026-01-05T12:30:15Z', failed_at: null });
    const failed = await createOrder(api, token, { status: 'failed', failed_at: '2026-02-28T23:59:59+0000' });
    expect(failed.failed_at).toBe('2026-02-28T23:59:59Z');
    // A timestamp of another status is kept as given and not filled for the status reached.
    const pending = await createOrder(api, token, { status: 'pending', paid_at: '2026-02-01T00:00:00Z' });
    expect(pending).toMatchObject({ status: 'pending', paid_at: '2026-02-01T00:00:00Z', refunded_at: null, failed_at: null });

    const events = await outboxFor(merchantId, paid.order_no);
    expect(events.map((e) => e.type).sort()).toEqual(['order.created', 'order.paid']);
    for (const e of events) expect(e.data.object.paid_at).toBe('2026-01-01T00:00:00Z');
    for (const o of [paid, refunded, failed, pending]) expect((await api.get(`/orders/${o.order_no}`, token)).body.data).toEqual(o);
  });

  it('defaults: pending, TWD, one-time, source api, nulls; the customer is created with the given name', async () => {
    const { token } = await newMerchant();
    const res = await api.post('/orders', token, {
      order_no: 'D-1',
      amount: 99.5,
      customer_email: 'Buyer@Example.COM',
      customer_name: 'Ann',
    });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: 1,
      order_no: 'D-1',
      amount: '99.50',
      currency: 'TWD',
      status: 'pending',
      payment_method: null,
      source: 'api',
      billing_cycle: 'one-time',
      paid_at: null,
      refunded_at: null,
      failed_at: null,
      metadata: null,
      customer_id: 1,
      customer_email: 'buyer@example.com',
      customer_name: 'Ann',
      created_at: res.body.data.created_at,
      updated_at: res.body.data.created_at,
    });
    expect(res.body.data.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const customer = await api.get('/customers/1', token);
    expect(customer.body.data).toMatchObject({ id: 1, email: 'buyer@example.com', name: 'Ann', order_count: 0, ltv: '0.00' });

    // Supplied optional fields are stored as given.
    const full = await createOrder(api, token, {
      order_no: 'D-2',
      currency: 'usd',
      payment_method: 'wallet_b_pay',
      billing_cycle: 'semi-annual',
      metadata: { plan: 'gold', nested: { a: [1, 2] } },
      customer_email: 'buyer@example.com',
      customer_name: 'Someone Else',
    });
    expect(full).toMatchObject({
      id: 2,
      currency: 'USD',
      payment_method: 'wallet_b_pay',
      billing_cycle: 'semi-annual',
      metadata: { plan: 'gold', nested: { a: [1, 2] } },
      // the existing customer (matched case-insensitively) keeps its name
      customer_id: 1,
      customer_name: 'Ann',
    });
    expect((await api.get('/customers/1', token)).body.data.name).toBe('Ann');
    expect((await api.get('/customers', token)).body.meta.total).toBe(1);
  });

  it('a taken order_no is a 422 on order_no and changes nothing', async () => {
    const { merchantId, token } = await newMerchant();
    const first = await createOrder(api, token, { order_no: 'DUP-1', status: 'paid', amount: '10' });
    const before = await storedCounts(merchantId);
    const again = await api.post('/orders', token, orderBody({ order_no: 'DUP-1', amount: '99', customer_email: 'other@example.com' }));
    expect422(again, 'order_no');
    expect(await storedCounts(merchantId)).toEqual(before);
    expect((await api.get('/orders/DUP-1', token)).body.data).toEqual(first);
    // order_no is unique per merchant only
    const other = await newMerchant();
    await createOrder(api, other.token, { order_no: 'DUP-1' });
  });
});

describe('POST /orders: validation', () => {
  const invalid: [string, Record<string, unknown>, string][] = [
    ['amount "abc"', { amount: 'abc' }, 'amount'],
    ['amount "1.234"', { amount: '1.234' }, 'amount'],
    ['amount "-5"', { amount: '-5' }, 'amount'],
    ['amount -5', { amount: -5 }, 'amount'],
    ['amount "1e3"', { amount: '1e3' }, 'amount'],
    ['amount 14 digits', { amount: 12345678901234 }, 'amount'],
    ['amount "" ', { amount: '' }, 'amount'],
    ['amount null', { amount: null }, 'amount'],
    ['amount missing', { amount: undefined }, 'amount'],
    ['amount object', { amount: { v: 1 } }, 'amount'],
    ['amount 0.001', { amount: 0.001 }, 'amount'],
    ['currency XXX', { currency: 'XXX' }, 'currency'],
    ['currency US', { currency: 'US' }, 'currency'],
    ['currency 12', { currency: 12 }, 'currency'],
    ['email', { customer_email: 'not-an-email' }, 'customer_email'],
    ['email missing', { customer_email: undefined }, 'customer_email'],
    ['status', { status: 'shipped' }, 'status'],
    ['payment_method', { payment_method: 'cash' }, 'payment_method'],
    ['billing_cycle', { billing_cycle: 'weekly' }, 'billing_cycle'],
    ['paid_at month 13', { paid_at: '2026-13-01T00:00:00Z' }, 'paid_at'],
    ['paid_at "yesterday"', { paid_at: 'yesterday' }, 'paid_at'],
    ['paid_at without zone', { paid_at: '2026-01-01T00:00:00' }, 'paid_at'],
    ['refunded_at Feb 30', { status: 'refunded', refunded_at: '2026-02-30T00:00:00Z' }, 'refunded_at'],
    ['failed_at date only', { status: 'failed', failed_at: '2026-01-01' }, 'failed_at'],
    ['order_no whitespace', { order_no: 'A 1' }, 'order_no'],
    ['order_no tab', { order_no: 'A\t1' }, 'order_no'],
    ['order_no slash', { order_no: 'A/1' }, 'order_no'],
    ['order_no 101 chars', { order_no: 'x'.repeat(101) }, 'order_no'],
    ['order_no empty', { order_no: '' }, 'order_no'],
    ['order_no number', { order_no: 12 }, 'order_no'],
    ['metadata string', { metadata: 'x' }, 'metadata'],
    ['metadata array', { metadata: [1, 2] }, 'metadata'],
    ['metadata number', { metadata: 5 }, 'metadata'],
    ['metadata 51 keys', { metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }, 'metadata'],
    ['customer_name 256 chars', { customer_name: 'n'.repeat(256) }, 'customer_name'],
    ['customer_email 256 chars', { customer_email: `${'e'.repeat(244)}@example.com` }, 'customer_email'],
  ];

  it('every invalid field gives 422 on that field and stores nothing', async () => {
    const { merchantId, token } = await newMerchant();
    const results = await Promise.all(
      invalid.map(async ([name, over, field]) => ({ name, field, res: await api.post('/orders', token, orderBody(over)) })),
    );
    for (const { name, field, res } of results) {
      expect(res.status, name).toBe(422);
      expect(res.body, name).toEqual({ message: INVALID_DATA, errors: { [field]: expect.any(Array) } });
      expect422(res, field);
    }
    expect(await storedCounts(merchantId)).toEqual({ orders: 0, customers: 0, outbox: 0 });
    expect((await api.get('/orders', token)).body.meta.total).toBe(0);
  });

  it('an order_no of exactly 100 characters is accepted', async () => {
    const { token } = await newMerchant();
    const o = await createOrder(api, token, { order_no: 'y'.repeat(100) });
    expect(o.order_no).toHaveLength(100);
  });

  it('valid amounts are normalised to 2-decimal strings', async () => {
    const { token } = await newMerchant();
    const cases: [unknown, string][] = [
      [10, '10.00'],
      ['10', '10.00'],
      ['0.5', '0.50'],
      [0.5, '0.50'],
      ['9999999999999.99', '9999999999999.99'],
      [0, '0.00'],
      ['12.3', '12.30'],
    ];
    for (const [amount, expected] of cases) {
      const o = await createOrder(api, token, { amount });
      expect(o.amount, String(amount)).toBe(expected);
      expect((await api.get(`/orders/${o.order_no}`, token)).body.data.amount).toBe(expected);
    }
  });

  it('currency is accepted in any case and stored upper-case', async () => {
    const { token } = await newMerchant();
    expect((await createOrder(api, token, { currency: 'usd' })).currency).toBe('USD');
    expect((await createOrder(api, token, { currency: 'Jpy' })).currency).toBe('JPY');
  });

  it('X-Idempotency-Key over 255 characters (or empty) is a 422 on idempotency_key; nothing stored', async () => {
    const { merchantId, token } = await newMerchant();
    expect422(await api.post('/orders', token, orderBody(), { 'x-idempotency-key': 'k'.repeat(256) }), 'idempotency_key');
    expect422(await api.post('/orders', token, orderBody(), { 'x-idempotency-key': '' }), 'idempotency_key');
    expect(await storedCounts(merchantId)).toEqual({ orders: 0, customers: 0, outbox: 0 });
    const ok = await api.post('/orders', token, orderBody(), { 'x-idempotency-key': 'k'.repeat(255) });
    expect(ok.status).toBe(201);
  });

  it('a body that is not JSON is a 400; nothing stored', async () => {
    const { merchantId, token } = await newMerchant();
    for (const rawBody of ['{"order_no": "A-1",', 'not json', '{"a":1}}']) {
      const r = await api.request('POST', '/orders', { token, rawBody, headers: { 'content-type': 'application/json' } });
      expect(r.status, rawBody).toBe(400);
      expect(r.body).toEqual({ message: 'The request body is not valid JSON.' });
    }
    const notObject = await api.request('POST', '/orders', { token, rawBody: '[1,2]', headers: { 'content-type': 'application/json' } });
    expect(notObject.status).toBe(422);
    expect(await storedCounts(merchantId)).toEqual({ orders: 0, customers: 0, outbox: 0 });
  });
});

describe('POST /orders: abilities', () => {
  it('a token without orders:write gets 403 on every order write and nothing is stored', async () => {
    const { merchantId, token } = await newMerchant(['orders:read']);
    const forbidden = { message: 'This action is unauthorized.' };
    const create = await api.post('/orders', token, orderBody());
    expect(create.status).toBe(403);
    expect(create.body).toEqual(forbidden);
    const batch = await api.post('/orders/batch', token, { orders: [orderBody()] });
    expect(batch.status).toBe(403);
    const patch = await api.patch('/orders/ANY-1', token, { status: 'paid' });
    expect(patch.status).toBe(403);
    expect(await storedCounts(merchantId)).toEqual({ orders: 0, customers: 0, outbox: 0 });
    expect((await api.get('/orders', token)).status).toBe(200);
    const writeOnly = await newMerchant(['orders:write']);
    expect((await api.get('/orders', writeOnly.token)).status).toBe(403);
    expect((await api.get('/orders/stats', writeOnly.token)).status).toBe(403);
  });
});
