import Decimal from 'decimal.js';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { createOrder, expectFiguresMatchOrders, pickFigures } from './helpers.ts';

const api = useApi();
afterEach(() => resetClock());

const customer = async (token: string, id: number) => pickFigures((await api.get(`/customers/${id}`, token)).body.data);
const batch = async (token: string, orders: unknown[]) => {
  const r = await api.post('/orders/batch', token, { orders });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.data.failed, JSON.stringify(r.body.data.results.failed)).toBe(0);
  return r.body.data;
};

describe('customer figures (docs/customers.md)', () => {
  it('follow creates and PATCHes: ltv in the reporting currency, per currency, paid count, payment times', async () => {
    fixedClock('2026-03-31T12:00:00Z');
    const { token } = await newMerchant();
    const email = 'fig@example.com';
    const o1 = await createOrder(api, token, { customer_email: email, status: 'paid', amount: '100', paid_at: '2026-03-05T00:00:00Z' });
    const id = o1.customer_id;
    const o2 = await createOrder(api, token, {
      customer_email: email,
      status: 'paid',
      amount: '50.5',
      currency: 'USD',
      paid_at: '2026-03-10T00:00:00Z',
    });
    const o3 = await createOrder(api, token, { customer_email: email, status: 'pending', amount: '30' });
    await createOrder(api, token, { customer_email: email, status: 'refunded', amount: '20', paid_at: '2026-03-01T00:00:00Z' });
    await createOrder(api, token, { customer_email: email, status: 'refunded', amount: '1' }); // never paid: no payment time
    await createOrder(api, token, { customer_email: email, status: 'failed', amount: '2', paid_at: '2026-02-01T00:00:00Z' });
    await createOrder(api, token, { customer_email: email, status: 'cancelled', amount: '3', paid_at: '2026-01-01T00:00:00Z' });
    expect(await customer(token, id)).toEqual({
      ltv: '100.00',
      ltv_by_currency: { TWD: '100.00', USD: '50.50' },
      order_count: 2,
      first_payment_at: '2026-03-01T00:00:00Z',
      last_payment_at: '2026-03-10T00:00:00Z',
    });
    await expectFiguresMatchOrders(api, token, id);

    expect((await api.patch(`/orders/${o1.order_no}`, token, { status: 'refunded' })).status).toBe(200);
    expect(await customer(token, id)).toEqual({
      ltv: '0.00',
      ltv_by_currency: { USD: '50.50' },
      order_count: 1,
      first_payment_at: '2026-03-01T00:00:00Z',
      last_payment_at: '2026-03-10T00:00:00Z',
    });
    expect((await api.patch(`/orders/${o3.order_no}`, token, { status: 'paid', paid_at: '2026-04-01T00:00:00Z' })).status).toBe(200);
    expect(await customer(token, id)).toMatchObject({ ltv: '30.00', order_count: 2, last_payment_at: '2026-04-01T00:00:00Z' });
    expect((await api.patch(`/orders/${o2.order_no}`, token, { status: 'refunded' })).status).toBe(200);
    expect(await customer(token, id)).toEqual({
      ltv: '30.00',
      ltv_by_currency: { TWD: '30.00' },
      order_count: 1,
      first_payment_at: '2026-03-01T00:00:00Z',
      last_payment_at: '2026-04-01T00:00:00Z',
    });
    await expectFiguresMatchOrders(api, token, id);
  });

  it('ltv is in the merchant’s reporting currency', async () => {
    const { token } = await newMerchant(undefined, 'USD');
    const o = await createOrder(api, token, { status: 'paid', amount: '10', currency: 'USD' });
    await createOrder(api, token, { status: 'paid', amount: '500', currency: 'TWD' });
    expect(await customer(token, o.customer_id)).toMatchObject({ ltv: '10.00', ltv_by_currency: { TWD: '500.00', USD: '10.00' } });
    await expectFiguresMatchOrders(api, token, o.customer_id, 'USD');
  });

  it('follow batch moves: pending→paid, paid→pending, paid_at earlier/later, and an order moved to another customer', async () => {
    fixedClock('2026-03-25T00:00:00Z');
    const { token } = await newMerchant();
    await batch(token, [
      { order_no: 'X-1', amount: '10', customer_email: 'a@example.com', status: 'pending' },
      { order_no: 'X-2', amount: '20', customer_email: 'a@example.com', status: 'paid', paid_at: '2026-03-10T00:00:00Z' },
      { order_no: 'X-3', amount: '30', customer_email: 'a@example.com', status: 'paid', paid_at: '2026-03-20T00:00:00Z' },
      { order_no: 'X-4', amount: '40', customer_email: 'b@example.com', status: 'paid', paid_at: '2026-03-15T00:00:00Z' },
    ]);
    const a = (await api.get('/orders/X-1', token)).body.data.customer_id;
    const b = (await api.get('/orders/X-4', token)).body.data.customer_id;
    const check = async (want: Record<number, Partial<ReturnType<typeof pickFigures>>>) => {
      for (const [id, figures] of Object.entries(want)) {
        expect(await customer(token, Number(id)), `customer ${id}`).toMatchObject(figures);
        await expectFiguresMatchOrders(api, token, Number(id));
      }
    };
    await check({
      [a]: { ltv: '50.00', order_count: 2, first_payment_at: '2026-03-10T00:00:00Z', last_payment_at: '2026-03-20T00:00:00Z' },
    });

    await batch(token, [{ order_no: 'X-1', status: 'paid' }]); // paid_at filled with now (Mar 25)
    await check({
      [a]: { ltv: '60.00', order_count: 3, first_payment_at: '2026-03-10T00:00:00Z', last_payment_at: '2026-03-25T00:00:00Z' },
    });

    await batch(token, [{ order_no: 'X-1', status: 'pending' }]); // the last payment goes away
    await check({
      [a]: { ltv: '50.00', order_count: 2, first_payment_at: '2026-03-10T00:00:00Z', last_payment_at: '2026-03-20T00:00:00Z' },
    });

    await batch(token, [{ order_no: 'X-2', paid_at: '2026-01-01T00:00:00Z' }]); // earlier
    await check({ [a]: { first_payment_at: '2026-01-01T00:00:00Z', last_payment_at: '2026-03-20T00:00:00Z' } });

    await batch(token, [{ order_no: 'X-2', paid_at: '2026-12-31T00:00:00Z' }]); // the first becomes the last
    await check({ [a]: { ltv: '50.00', first_payment_at: '2026-03-20T00:00:00Z', last_payment_at: '2026-12-31T00:00:00Z' } });

    await batch(token, [{ order_no: 'X-2', customer_email: 'B@example.com' }]); // moved to b
    await check({
      [a]: { ltv: '30.00', order_count: 1, first_payment_at: '2026-03-20T00:00:00Z', last_payment_at: '2026-03-20T00:00:00Z' },
      [b]: { ltv: '60.00', order_count: 2, first_payment_at: '2026-03-15T00:00:00Z', last_payment_at: '2026-12-31T00:00:00Z' },
    });
    expect((await api.get('/orders/X-2', token)).body.data).toMatchObject({ customer_id: b, customer_email: 'b@example.com' });

    // Several moves of one customer's orders in one batch, and a move to a new customer.
    await batch(token, [
      { order_no: 'X-3', status: 'refunded' },
      { order_no: 'X-1', status: 'paid', paid_at: '2025-06-01T00:00:00Z', amount: '11' },
      { order_no: 'X-4', customer_email: 'c@example.com', customer_name: 'Cee' },
      { order_no: 'X-2', amount: '25', currency: 'USD' },
    ]);
    const c = (await api.get('/orders/X-4', token)).body.data;
    expect(c).toMatchObject({ customer_email: 'c@example.com', customer_name: 'Cee' });
    await check({
      [a]: { ltv: '11.00', order_count: 1, first_payment_at: '2025-06-01T00:00:00Z', last_payment_at: '2026-03-20T00:00:00Z' },
      [b]: { ltv: '0.00', ltv_by_currency: { USD: '25.00' }, order_count: 1, first_payment_at: '2026-12-31T00:00:00Z' },
      [c.customer_id]: { ltv: '40.00', order_count: 1, first_payment_at: '2026-03-15T00:00:00Z' },
    });
    expect((await customer(token, b)).ltv_by_currency).toEqual({ USD: '25.00' });
  });

  it('concurrent PATCHes on different orders of one customer lose no update', async () => {
    fixedClock('2026-10-10T10:00:00Z');
    const { token } = await newMerchant();
    const n = 20; // more writers than one round of retries can absorb
    const orders = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        createOrder(api, token, { customer_email: 'busy@example.com', amount: `${i + 1}.${i % 10}1`, order_no: `C-${i}` }),
      ),
    );
    const id = orders[0].customer_id;
    const paidAt = (i: number) => `2026-10-${String(1 + i).padStart(2, '0')}T00:00:00Z`;
    const paid = await Promise.all(orders.map((o, i) => api.patch(`/orders/${o.order_no}`, token, { status: 'paid', paid_at: paidAt(i) })));
    for (const r of paid) expect(r.status, JSON.stringify(r.body)).toBe(200);
    const total = orders.reduce((s, o) => s.plus(o.amount), new Decimal(0));
    expect(await customer(token, id)).toEqual({
      ltv: total.toFixed(2),
      ltv_by_currency: { TWD: total.toFixed(2) },
      order_count: n,
      first_payment_at: paidAt(0),
      last_payment_at: paidAt(n - 1),
    });

    const refunded = await Promise.all(
      orders.filter((_, i) => i % 2 === 0).map((o) => api.patch(`/orders/${o.order_no}`, token, { status: 'refunded' })),
    );
    for (const r of refunded) expect(r.status, JSON.stringify(r.body)).toBe(200);
    const rest = orders.filter((_, i) => i % 2 === 1).reduce((s, o) => s.plus(o.amount), new Decimal(0));
    expect(await customer(token, id)).toEqual({
      ltv: rest.toFixed(2),
      ltv_by_currency: { TWD: rest.toFixed(2) },
      order_count: n / 2,
      first_payment_at: paidAt(0),
      last_payment_at: paidAt(n - 1),
    });
    await expectFiguresMatchOrders(api, token, id);
    expect((await api.get('/orders/stats', token)).body.data).toMatchObject({ today_count: n, today_success_rate: 50 });
  });

  it('concurrent creates for one existing customer lose no update', async () => {
    fixedClock('2026-10-11T10:00:00Z');
    const { token } = await newMerchant();
    const first = await createOrder(api, token, {
      customer_email: 'many@example.com',
      status: 'paid',
      amount: '1',
      paid_at: '2026-10-05T00:00:00Z',
    });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post('/orders', token, {
          order_no: `M-${i}`,
          amount: `${i + 1}`,
          customer_email: 'many@example.com',
          status: 'paid',
          paid_at: `2026-10-${String(10 + i).padStart(2, '0')}T00:00:00Z`,
        }),
      ),
    );
    for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(await customer(token, first.customer_id)).toEqual({
      ltv: '211.00',
      ltv_by_currency: { TWD: '211.00' },
      order_count: 21,
      first_payment_at: '2026-10-05T00:00:00Z',
      last_payment_at: '2026-10-29T00:00:00Z',
    });
  });
});
