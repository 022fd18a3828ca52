import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';

const api = useApi();
afterEach(() => resetClock());

const order = (over: Record<string, unknown> = {}) => ({
  order_no: `ORD-${Math.random().toString(36).slice(2, 10)}`,
  amount: '1200.00',
  customer_email: 'buyer@example.com',
  ...over,
});

describe('POST /orders', () => {
  it('creates a pending order with defaults and auto-creates the customer', async () => {
    const { token } = await newMerchant();
    const res = await api.post('/orders', token, order({ customer_name: 'Ann', amount: 99.5 }));
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      amount: '99.50',
      currency: 'TWD',
      status: 'pending',
      source: 'api',
      billing_cycle: 'one-time',
      payment_method: null,
      paid_at: null,
      refunded_at: null,
      failed_at: null,
      metadata: null,
      customer_email: 'buyer@example.com',
      customer_name: 'Ann',
    });
    expect(res.body.data.id).toBe(1);
    expect(res.body.data.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const customers = await api.get('/customers/1', token);
    expect(customers.status).toBe(200);
    expect(customers.body.data).toMatchObject({ email: 'buyer@example.com', name: 'Ann', order_count: 0, ltv: '0.00' });
  });

  it('paid at creation fills paid_at with now and moves the customer figures', async () => {
    fixedClock('2026-03-01T10:00:00Z');
    const { token } = await newMerchant();
    const res = await api.post('/orders', token, order({ status: 'paid', amount: '100.10' }));
    expect(res.status).toBe(201);
    expect(res.body.data.paid_at).toBe('2026-03-01T10:00:00Z');
    await api.post('/orders', token, order({ status: 'paid', amount: '0.20', paid_at: '2026-02-01T08:00:00+08:00' }));
    const c = await api.get('/customers/1', token);
    expect(c.body.data).toMatchObject({
      ltv: '100.30',
      order_count: 2,
      first_payment_at: '2026-02-01T00:00:00Z',
      last_payment_at: '2026-03-01T10:00:00Z',
    });
    const stats = await api.get('/orders/stats', token);
    expect(stats.body.data).toEqual({ today_revenue: '100.10', monthly_revenue: '100.10', today_count: 2, today_success_rate: 100 });
  });

  it('GET, list and PATCH', async () => {
    const { token } = await newMerchant();
    const a = await api.post('/orders', token, order({ order_no: 'A-1' }));
    expect(a.status).toBe(201);
    const got = await api.get('/orders/A-1', token);
    expect(got.body.data).toEqual(a.body.data);
    const list = await api.get('/orders', token);
    expect(list.body.meta).toMatchObject({ total: 1, current_page: 1, from: 1, to: 1 });
    const p = await api.patch('/orders/A-1', token, { status: 'paid' });
    expect(p.status).toBe(200);
    expect(p.body.data.status).toBe('paid');
    const bad = await api.patch('/orders/A-1', token, { status: 'pending' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.status).toBeDefined();
    const r = await api.patch('/orders/A-1', token, { status: 'refunded' });
    expect(r.body.data.refunded_at).toBeTruthy();
    const c = await api.get('/customers/1', token);
    expect(c.body.data).toMatchObject({ ltv: '0.00', order_count: 0 });
    expect(c.body.data.first_payment_at).toBe(p.body.data.paid_at);
  });

  it('budgets', async () => {
    const { token } = await newMerchant();
    await api.post('/orders', token, order({ order_no: 'B-0' }));
    const create = await api.counted('POST', '/orders', { token, body: order({ status: 'paid' }), headers: { 'x-idempotency-key': 'k1' } });
    expect(create.res.status).toBe(201);
    const get = await api.counted('GET', '/orders/B-0', { token });
    const list = await api.counted('GET', '/orders', { token });
    const stats = await api.counted('GET', '/orders/stats', { token });
    console.log(create.requests, create.byCommand, get.requests, list.requests, stats.requests);
    expect(create.requests).toBeLessThanOrEqual(6);
  });
});
