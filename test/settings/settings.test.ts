import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { backofficeJwt } from '../backoffice/support.ts';
import { createOrder, orderBody } from '../orders/helpers.ts';

/** The merchant's settings (reporting time zone) and the stats that follow it (docs/settings.md, docs/orders.md). */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const api = useApi();
afterEach(() => resetClock());

const TIMEZONE_MESSAGE = 'The timezone field must be an IANA time zone name, such as UTC, Asia/Taipei or America/New_York.';

const putSettings = (jwt: string, body: unknown) => api.request('PUT', '/settings', { headers: { authorization: `Bearer ${jwt}` }, body });

const stats = async (token: string) => {
  const r = await api.get('/orders/stats', token);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
};

const zoned = async (zone: string) => {
  const merchant = await newMerchant();
  const admin = await backofficeJwt(merchant.merchantId, 'admin');
  const r = await putSettings(admin, { timezone: zone });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { ...merchant, admin };
};

describe('GET and PUT /settings', () => {
  it('UTC by default; an admin sets the zone (canonical spelling), read back with the token and by the back office', async () => {
    const { merchantId, token } = await newMerchant();
    // Never a recount yet: done, with no times.
    expect((await api.get('/settings', token)).body).toEqual({
      data: {
        timezone: 'UTC',
        reporting_currency: 'TWD',
        delinquency_days: 30,
        recount: { status: 'done', requested_at: null, switched_at: null },
      },
    });
    const admin = await backofficeJwt(merchantId, 'admin');
    const user = await backofficeJwt(merchantId, 'user');

    const put = await putSettings(admin, { timezone: 'asia/taipei', reporting_currency: 'USD' });
    expect(put.status).toBe(200);
    // Unknown fields are ignored: the reporting currency stays fixed. The zone is stored at once; its recount runs in the background.
    expect(put.body).toEqual({
      data: {
        timezone: 'Asia/Taipei',
        reporting_currency: 'TWD',
        delinquency_days: 30,
        recount: { status: 'pending', requested_at: expect.any(String), switched_at: null },
      },
    });
    expect(put.headers.get('recount-pending')).toBe('true');
    // The test client ran the recount to its switch (the worker's job) before handing the answer over.
    const read = await api.get('/settings', token);
    expect(read.body.data).toEqual({
      timezone: 'Asia/Taipei',
      reporting_currency: 'TWD',
      delinquency_days: 30,
      recount: { status: 'done', requested_at: put.body.data.recount.requested_at, switched_at: expect.any(String) },
    });
    expect(read.headers.get('recount-pending')).toBeNull();
    expect((await api.get('/settings', user)).body.data.timezone).toBe('Asia/Taipei');
    expect((await api.get('/backoffice/me', user)).body.data).toMatchObject({ timezone: 'Asia/Taipei', role: 'user' });

    // A regenerated token carries the zone too.
    const regenerated = await api.request('POST', '/backoffice/api-token/regenerate', { headers: { authorization: `Bearer ${admin}` } });
    expect(regenerated.status).toBe(200);
    expect((await api.get('/settings', regenerated.body.data.token)).body.data.timezone).toBe('Asia/Taipei');
    // And back to UTC.
    expect((await putSettings(admin, { timezone: 'UTC' })).body.data.timezone).toBe('UTC');
    expect((await api.get('/settings', regenerated.body.data.token)).body.data.timezone).toBe('UTC');
  });

  it('refuses a user (403), a bad zone (422 naming examples) and stores nothing', async () => {
    const { merchantId, token } = await newMerchant();
    const admin = await backofficeJwt(merchantId, 'admin');
    const user = await backofficeJwt(merchantId, 'user');
    const refused = await putSettings(user, { timezone: 'Asia/Taipei' });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ message: 'This action is unauthorized.' });
    for (const [body, message] of [
      [{}, 'The timezone field is required.'],
      [{ timezone: null }, 'The timezone field is required.'],
      [{ timezone: 8 }, 'The timezone field must be a string.'],
      [{ timezone: '+08:00' }, TIMEZONE_MESSAGE],
      [{ timezone: 'Asia/Atlantis' }, TIMEZONE_MESSAGE],
      [{ timezone: '' }, TIMEZONE_MESSAGE],
    ] as const) {
      const r = await putSettings(admin, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body, JSON.stringify(body)).toEqual({ message: 'The given data was invalid.', errors: { timezone: [message] } });
    }
    expect((await api.get('/settings', token)).body.data.timezone).toBe('UTC');
    // The API token cannot change settings; reading them needs analytics:read.
    expect((await api.request('PUT', '/settings', { token, body: { timezone: 'UTC' } })).status).toBe(401);
    const reader = await newMerchant(['orders:read']);
    expect((await api.get('/settings', reader.token)).status).toBe(403);
  });
});

describe('delinquency_days', () => {
  it('an admin sets it (1–90); the token carries it at once: a past-due subscription reads as delinquent from the new deadline; the figures are recounted (order renewals)', async () => {
    const clock = fixedClock('2026-03-01T00:00:00Z');
    const { merchantId, token } = await newMerchant();
    const admin = await backofficeJwt(merchantId, 'admin');
    const customer = (await api.post('/customers', token, { email: 'late@settings.test' })).body.data;
    const sub = (
      await api.post('/subscriptions', token, { customer_id: customer.id, plan_name: 'Pro', mrr: '50', billing_cycle: 'monthly' })
    ).body.data;
    await api.put(`/subscriptions/${sub.id}/past-due`, token, { failed_at: '2026-03-01T00:00:00Z' });
    for (const bad of [0, 91, 1.5, '10', null]) {
      const r = await putSettings(admin, { delinquency_days: bad });
      expect(r.status, JSON.stringify(bad)).toBe(422);
      expect(r.body.errors).toEqual({ delinquency_days: ['The delinquency days field must be an integer between 1 and 90.'] });
    }
    const put = await putSettings(admin, { delinquency_days: 7 });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    // Answered at once, the recount of the order renewals under way (the test's client runs it to its switch after the answer).
    expect(put.body.data).toMatchObject({ timezone: 'UTC', delinquency_days: 7, recount: { status: 'pending' } });
    expect(put.headers.get('recount-pending')).toBe('true');
    expect((await api.get('/settings', token)).body.data).toMatchObject({ delinquency_days: 7, recount: { status: 'done' } });
    // The same number again changes nothing and starts no recount.
    const again = await putSettings(admin, { delinquency_days: 7 });
    expect(again.headers.get('recount-pending')).toBeNull();
    expect(again.body.data.recount.requested_at).toBe(put.body.data.recount.requested_at);
    clock.set('2026-03-08T00:00:01Z');
    expect((await api.get(`/subscriptions/${sub.id}`, token)).body.data).toMatchObject({
      status: 'cancelled',
      cancelled_at: '2026-03-08T00:00:00Z',
      cancel_reason: 'delinquent',
    });
  });
});

describe('GET /orders/stats in the merchant time zone', () => {
  it('today and this month start at local midnight (Asia/Taipei, UTC+8), from the next request on', async () => {
    fixedClock('2026-11-26T17:00:00Z'); // 01:00 on 27 November in Taipei
    const { merchantId, token } = await newMerchant();
    await createOrder(api, token, { status: 'paid', amount: '1', paid_at: '2026-11-26T15:59:59Z' }); // 26 Nov 23:59:59 local
    await createOrder(api, token, { status: 'paid', amount: '10', paid_at: '2026-11-26T16:00:00Z' }); // 27 Nov 00:00 local
    await createOrder(api, token, { status: 'paid', amount: '100', paid_at: '2026-10-31T16:10:00Z' }); // 1 Nov local
    await createOrder(api, token, { status: 'paid', amount: '1000', paid_at: '2026-11-30T15:59:00Z' }); // 30 Nov local
    await createOrder(api, token, { status: 'paid', amount: '10000', paid_at: '2026-11-30T16:00:00Z' }); // 1 Dec local
    await createOrder(api, token, { status: 'pending', amount: '5' });
    expect(await stats(token)).toEqual({ today_revenue: '11.00', monthly_revenue: '11011.00', today_count: 6, today_success_rate: 83.3 });

    const admin = await backofficeJwt(merchantId, 'admin');
    expect((await putSettings(admin, { timezone: 'Asia/Taipei' })).status).toBe(200);
    expect(await stats(token)).toEqual({ today_revenue: '10.00', monthly_revenue: '1111.00', today_count: 6, today_success_rate: 83.3 });
    // The back office's dashboard reads the same.
    expect((await api.get('/orders/stats', admin)).body.data.today_revenue).toBe('10.00');
  });

  it('a quarter-hour zone (Asia/Kathmandu, UTC+5:45) and a negative one (America/Los_Angeles)', async () => {
    fixedClock('2026-06-15T18:20:00Z'); // 16 June 00:05 in Kathmandu; 15 June 11:20 in Los Angeles
    const kathmandu = await zoned('Asia/Kathmandu');
    await createOrder(api, kathmandu.token, { status: 'paid', amount: '1', paid_at: '2026-06-15T18:14:59Z' });
    await createOrder(api, kathmandu.token, { status: 'paid', amount: '2', paid_at: '2026-06-15T18:15:00Z' });
    await createOrder(api, kathmandu.token, { status: 'paid', amount: '4', paid_at: '2026-05-31T18:15:00Z' });
    expect(await stats(kathmandu.token)).toMatchObject({ today_revenue: '2.00', monthly_revenue: '7.00' });

    const la = await zoned('America/Los_Angeles');
    await createOrder(api, la.token, { status: 'paid', amount: '1', paid_at: '2026-06-15T06:59:59Z' }); // 14 June 23:59:59 PDT
    await createOrder(api, la.token, { status: 'paid', amount: '2', paid_at: '2026-06-15T07:00:00Z' }); // 15 June 00:00 PDT
    await createOrder(api, la.token, { status: 'paid', amount: '4', paid_at: '2026-06-16T06:59:00Z' }); // 15 June 23:59 PDT
    await createOrder(api, la.token, { status: 'paid', amount: '8', paid_at: '2026-07-01T06:59:00Z' }); // 30 June 23:59 PDT
    await createOrder(api, la.token, { status: 'paid', amount: '16', paid_at: '2026-06-01T06:59:00Z' }); // 31 May 23:59 PDT
    expect(await stats(la.token)).toMatchObject({ today_revenue: '6.00', monthly_revenue: '15.00' });
  });

  it('a 23-hour day (America/New_York, spring forward) and today_count by local creation time', async () => {
    const clock = fixedClock('2026-03-08T04:30:00Z'); // 7 March 23:30 EST
    const ny = await zoned('America/New_York');
    await createOrder(api, ny.token, { status: 'paid', amount: '1' }); // created and paid 7 March local
    clock.set('2026-03-08T05:00:00Z'); // 8 March 00:00 EST; 03:00 EDT follows 01:59 EST
    await createOrder(api, ny.token, { status: 'paid', amount: '2' });
    await createOrder(api, ny.token, { status: 'pending', amount: '3', paid_at: undefined });
    await createOrder(api, ny.token, { status: 'paid', amount: '4', paid_at: '2026-03-09T03:59:59Z' }); // 8 March 23:59:59 EDT
    await createOrder(api, ny.token, { status: 'paid', amount: '8', paid_at: '2026-03-09T04:00:00Z' }); // 9 March 00:00 EDT
    expect(await stats(ny.token)).toEqual({ today_revenue: '6.00', monthly_revenue: '15.00', today_count: 4, today_success_rate: 75 });
    clock.set('2026-03-09T03:59:59Z');
    expect(await stats(ny.token)).toMatchObject({ today_revenue: '6.00', today_count: 4 });
    clock.set('2026-03-09T04:00:00Z');
    expect(await stats(ny.token)).toEqual({ today_revenue: '8.00', monthly_revenue: '15.00', today_count: 0, today_success_rate: 0 });
  });

  it('costs the same requests for 10 orders as for 300, in UTC and in another zone', async () => {
    fixedClock('2026-11-26T17:00:00Z');
    const counts: number[][] = [];
    for (const n of [10, 300]) {
      const merchant = await newMerchant();
      const paidAt = (i: number) =>
        `2026-11-${String(1 + (i % 26)).padStart(2, '0')}T${String(i % 24).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}:00Z`;
      // Imported 100 at a time (300 single creates took most of the test's time on a loaded machine).
      for (let i = 0; i < n; i += 100) {
        const orders = Array.from({ length: Math.min(100, n - i) }, (_, j) =>
          orderBody({ status: 'paid', amount: '1', paid_at: paidAt(i + j) }),
        );
        const r = await api.post('/orders/batch', merchant.token, { orders });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
      }
      const utc = await api.counted('GET', '/orders/stats', { token: merchant.token });
      const admin = await backofficeJwt(merchant.merchantId, 'admin');
      await putSettings(admin, { timezone: 'Asia/Taipei' });
      const taipei = await api.counted('GET', '/orders/stats', { token: merchant.token });
      expect(utc.res.body.data.monthly_revenue).toBe(`${n}.00`);
      counts.push([utc.requests, taipei.requests]);
    }
    expect(counts[0]).toEqual(counts[1]);
    expect(counts[0][0]).toBeLessThanOrEqual(3);
    // A whole-hour zone: today's two UTC days, the next month's first and the month, read shard
    // group by shard group in TransactGetItems of at most 100 items (docs/orders.md).
    expect(counts[0][1]).toBeLessThanOrEqual(5);
  });
});
