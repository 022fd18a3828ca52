import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { createOrder, expect422 } from './helpers.ts';

const api = useApi();
afterEach(() => resetClock());

const stats = async (token: string, query = '') => {
  const r = await api.get(`/orders/stats${query}`, token);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
};

describe('GET /orders/stats', () => {
  it('splits days at UTC midnight and months at the month boundary', async () => {
    const clock = fixedClock('2026-01-31T23:59:59Z');
    const { token } = await newMerchant();
    await createOrder(api, token, { status: 'paid', amount: '100' });
    await createOrder(api, token, { status: 'pending', amount: '1' });
    // paid_at given with an offset that is still Jan 31 in UTC
    await createOrder(api, token, { status: 'paid', amount: '0.05', paid_at: '2026-02-01T07:59:59+08:00' });
    expect(await stats(token)).toEqual({ today_revenue: '100.05', monthly_revenue: '100.05', today_count: 3, today_success_rate: 66.7 });

    clock.set('2026-02-01T00:00:00Z');
    expect(await stats(token)).toEqual({ today_revenue: '0.00', monthly_revenue: '0.00', today_count: 0, today_success_rate: 0 });
    await createOrder(api, token, { status: 'paid', amount: '7.5' });
    // Paid on Jan 15: counts in that day's and month's revenue, but is created (and paid) today.
    await createOrder(api, token, { status: 'paid', amount: '1000', paid_at: '2026-01-15T10:00:00Z' });
    await createOrder(api, token, { status: 'failed', amount: '3' });
    expect(await stats(token)).toEqual({ today_revenue: '7.50', monthly_revenue: '7.50', today_count: 3, today_success_rate: 66.7 });

    clock.set('2026-01-31T12:00:00Z');
    expect(await stats(token)).toEqual({ today_revenue: '100.05', monthly_revenue: '1100.05', today_count: 3, today_success_rate: 66.7 });
    clock.set('2026-01-15T00:00:00Z');
    expect(await stats(token)).toEqual({ today_revenue: '1000.00', monthly_revenue: '1100.05', today_count: 0, today_success_rate: 0 });
    clock.set('2026-02-28T23:59:59Z');
    expect(await stats(token)).toEqual({ today_revenue: '0.00', monthly_revenue: '7.50', today_count: 0, today_success_rate: 0 });
    clock.set('2026-03-01T00:00:00Z');
    expect(await stats(token)).toEqual({ today_revenue: '0.00', monthly_revenue: '0.00', today_count: 0, today_success_rate: 0 });
  });

  it('success rate is paid ÷ created today, rounded to one decimal', async () => {
    fixedClock('2026-04-10T12:00:00Z');
    const { token } = await newMerchant();
    expect((await stats(token)).today_success_rate).toBe(0);
    const a = await createOrder(api, token, { status: 'paid', amount: '1' });
    await createOrder(api, token, { status: 'pending', amount: '1' });
    await createOrder(api, token, { status: 'cancelled', amount: '1' });
    expect((await stats(token)).today_success_rate).toBe(33.3);
    const b = await createOrder(api, token, { status: 'pending', amount: '1' });
    expect((await stats(token)).today_success_rate).toBe(25);
    await api.patch(`/orders/${b.order_no}`, token, { status: 'paid' });
    expect((await stats(token)).today_success_rate).toBe(50);
    for (let i = 0; i < 2; i++) await createOrder(api, token, { status: 'paid', amount: '1' });
    expect(await stats(token)).toMatchObject({ today_count: 6, today_success_rate: 66.7 });
    await api.patch(`/orders/${a.order_no}`, token, { status: 'refunded' });
    expect(await stats(token)).toMatchObject({ today_count: 6, today_success_rate: 50 });
  });

  it('currency selects the revenue only; the default is the reporting currency', async () => {
    fixedClock('2026-05-20T06:00:00Z');
    const { token } = await newMerchant();
    await createOrder(api, token, { status: 'paid', amount: '10', currency: 'TWD' });
    await createOrder(api, token, { status: 'paid', amount: '5.25', currency: 'usd' });
    await createOrder(api, token, { status: 'paid', amount: '2', currency: 'USD', paid_at: '2026-05-01T00:00:00Z' });
    await createOrder(api, token, { status: 'pending', amount: '99', currency: 'USD' });
    const twd = await stats(token);
    expect(twd).toEqual({ today_revenue: '10.00', monthly_revenue: '10.00', today_count: 4, today_success_rate: 75 });
    expect(await stats(token, '?currency=TWD')).toEqual(twd);
    expect(await stats(token, '?currency=usd')).toEqual({
      today_revenue: '5.25',
      monthly_revenue: '7.25',
      today_count: 4,
      today_success_rate: 75,
    });
    expect(await stats(token, '?currency=JPY')).toEqual({
      today_revenue: '0.00',
      monthly_revenue: '0.00',
      today_count: 4,
      today_success_rate: 75,
    });

    const usdMerchant = await newMerchant(undefined, 'USD');
    await createOrder(api, usdMerchant.token, { status: 'paid', amount: '3', currency: 'USD' });
    await createOrder(api, usdMerchant.token, { status: 'paid', amount: '4', currency: 'TWD' });
    expect(await stats(usdMerchant.token)).toMatchObject({ today_revenue: '3.00', monthly_revenue: '3.00' });

    for (const bad of ['XXX', 'US', 'usdd', '']) expect422(await api.get(`/orders/stats?currency=${bad}`, token), 'currency');
  });

  it('refunding moves revenue out of the day and month of paid_at', async () => {
    const clock = fixedClock('2026-06-10T10:00:00Z');
    const { token } = await newMerchant();
    const a = await createOrder(api, token, { status: 'paid', amount: '40' });
    const old = await createOrder(api, token, { status: 'paid', amount: '8', paid_at: '2026-06-02T10:00:00Z' });
    await createOrder(api, token, { status: 'paid', amount: '2' });
    expect(await stats(token)).toMatchObject({ today_revenue: '42.00', monthly_revenue: '50.00' });
    clock.set('2026-07-01T00:00:00Z'); // refunded next month: June's revenue still loses it
    await api.patch(`/orders/${a.order_no}`, token, { status: 'refunded' });
    await api.patch(`/orders/${old.order_no}`, token, { status: 'refunded' });
    expect(await stats(token)).toEqual({ today_revenue: '0.00', monthly_revenue: '0.00', today_count: 0, today_success_rate: 0 });
    clock.set('2026-06-10T10:00:00Z');
    expect(await stats(token)).toEqual({ today_revenue: '2.00', monthly_revenue: '2.00', today_count: 3, today_success_rate: 33.3 });
  });

  it('paying an order later counts its revenue on the day it is paid', async () => {
    const clock = fixedClock('2026-09-01T10:00:00Z');
    const { token } = await newMerchant();
    const o = await createOrder(api, token, { status: 'pending', amount: '12.34' });
    clock.set('2026-09-02T10:00:00Z');
    await api.patch(`/orders/${o.order_no}`, token, { status: 'paid' });
    expect(await stats(token)).toEqual({ today_revenue: '12.34', monthly_revenue: '12.34', today_count: 0, today_success_rate: 0 });
    clock.set('2026-09-01T10:00:00Z');
    // created on Sep 1 and now paid: the rate of that day counts it
    expect(await stats(token)).toEqual({ today_revenue: '0.00', monthly_revenue: '12.34', today_count: 1, today_success_rate: 100 });
  });
});
