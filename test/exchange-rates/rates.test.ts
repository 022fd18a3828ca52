import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { runRenewalChecks } from '../support/renewals.ts';
import { honouringRetryAfter, newMerchant, ok, useApi } from '../support/api.ts';
import { backofficeJwt } from '../backoffice/support.ts';
import { WriteSet } from '#lib/db/writes';
import { addRateTablePut, readRateTable } from '#lib/exchange-rates/store';
import { keys } from '#lib/db/keys';
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { repairCustomer } from '#lib/customers/repair';
import { rebuildMerchantAggregates } from '#lib/metrics/rebuild';
import { addTimelineChange, readTimeline } from '#lib/metrics/store';
import { setFrom } from '#lib/metrics/timeline';
import { getMerchant } from '#lib/merchants/store';

/**
 * Exchange rates (docs/exchange-rates.md): the reporting currency's figures count other currencies'
 * points at the rate of their month, leave them out without one (and say how much), and a rate
 * change moves what was written before from the next request on.
 */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const api = useApi();
afterEach(() => resetClock());

type Entry = Record<'date' | 'mrr' | 'new' | 'expansion' | 'churn', string> & {
  active_customers: number;
  unconverted: Record<string, string>;
};

const putRates = (token: string, currency: string, rates: { month: string; rate: string | number | null }[]) =>
  api.request('PUT', `/exchange-rates/${currency}`, { token, body: { rates } });

let imported = 0;
/** Imports subscriptions on plan Pro, monthly, in USD unless told. */
const importDollars = async (token: string, subs: { customer_id: number; mrr: string; started_at: string; currency?: string }[]) => {
  for (let i = 0; ; i++) {
    const failed = await importOnce(token, subs);
    // Items refused while the figures are recounted for a rate change are sent again (nothing of them was stored).
    if (!failed.length || i >= 40 || failed.some((f) => f.reason !== 'conflict')) {
      expect(failed).toEqual([]);
      return;
    }
    subs = failed.map((f) => subs[f.index]);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
};
const importOnce = async (
  token: string,
  subs: { customer_id: number; mrr: string; started_at: string; currency?: string }[],
): Promise<{ index: number; reason: string }[]> => {
  const res = await ok(
    api.post(
      '/subscriptions/batch',
      token,
      {
        subscriptions: subs.map((s) => ({
          external_id: `imp-${++imported}`,
          plan_name: 'Pro',
          billing_cycle: 'monthly',
          currency: 'USD',
          ...s,
        })),
      },
      { 'idempotency-key': `rates-${imported}-${Math.random()}` },
    ),
  );
  return (res.data ?? res).results.failed;
};

/** A TWD merchant with one customer on a USD subscription of 100 from 15 January 2026; today is 10 March. */
const inDollars = async () => {
  fixedClock('2026-03-10T12:00:00Z');
  const merchant = await newMerchant();
  const customer = (await ok(api.post('/customers', merchant.token, { email: 'usd@rates.test', name: 'U' }), 201)).data;
  // Subscriptions in another currency come in by import (POST /subscriptions is in the reporting currency).
  await importDollars(merchant.token, [{ customer_id: customer.id, mrr: '100', started_at: '2026-01-15T00:00:00Z' }]);
  const [sub] = (await ok(api.get(`/subscriptions?customer_id=${customer.id}`, merchant.token))).data;
  return { ...merchant, customer, sub };
};

const months = async (token: string, query = '') =>
  (await ok(api.get(`/metrics/mrr?start_date=2026-01-01&end_date=2026-03-10&interval=month${query}`, token))) as {
    data: Entry[];
    summary: { current_mrr: string; unconverted: Record<string, string> };
    unconverted: Record<string, string>;
  };
const brief = (e: Entry) => [e.date, e.mrr, e.unconverted];

describe('exchange rates', () => {
  it('without a rate the figures leave the other currency out and say how much; with one they count it at its month’s rate', async () => {
    const { token, customer } = await inDollars();
    const before = await months(token);
    expect(before.data.map(brief)).toEqual([
      ['2026-01-01', '0.00', { USD: '100.00' }],
      ['2026-02-01', '0.00', { USD: '100.00' }],
      ['2026-03-01', '0.00', { USD: '100.00' }],
    ]);
    expect(before.summary).toMatchObject({ current_mrr: '0.00', unconverted: { USD: '100.00' } });
    // The answer says it at its top level too.
    expect(before.unconverted).toEqual({ USD: '100.00' });
    expect((await ok(api.get('/metrics/summary', token))).unconverted).toEqual({ USD: '100.00' });
    expect((await ok(api.get('/metrics/summary', token))).data).toMatchObject({ current_mrr: '0.00', unconverted: { USD: '100.00' } });
    // The currency's own segment is in dollars, unconverted.
    expect((await months(token, '&currency=USD')).data.map((e) => e.mrr)).toEqual(['100.00', '100.00', '100.00']);

    const put = await ok(putRates(token, 'USD', [{ month: '2026-01', rate: '31.50' }]));
    expect(put).toEqual({ data: { currency: 'USD', rates: [{ month: '2026-01', rate: '31.5' }] } });
    const after = await months(token);
    expect(after.data.map(brief)).toEqual([
      ['2026-01-01', '3150.00', {}],
      ['2026-02-01', '3150.00', {}],
      ['2026-03-01', '3150.00', {}],
    ]);
    expect(after.data[0].new).toBe('3150.00');
    expect((await ok(api.get('/metrics/summary', token))).data).toMatchObject({ current_mrr: '3150.00', arr: '37800.00', unconverted: {} });
    expect((await ok(api.get(`/customers/${customer.id}`, token))).data.mrr).toBe('3150.00');
    // The segments in the reporting currency convert too; the currency's own stays in dollars.
    expect((await months(token, '&plan=Pro')).data.map((e) => e.mrr)).toEqual(['3150.00', '3150.00', '3150.00']);
    expect((await months(token, '&currency=USD')).data.map((e) => e.mrr)).toEqual(['100.00', '100.00', '100.00']);

    // A changed rate moves what was written before.
    await ok(putRates(token, 'USD', [{ month: '2026-01', rate: 32 }]));
    expect((await months(token)).data.map((e) => e.mrr)).toEqual(['3200.00', '3200.00', '3200.00']);
    expect((await ok(api.get('/exchange-rates', token))).data).toEqual([{ currency: 'USD', rates: [{ month: '2026-01', rate: '32' }] }]);
  });

  it('currency=<the reporting currency> counts its own lines only, in it: converted lines stay out, and nothing is left unconverted', async () => {
    const { token, customer, merchantId } = await inDollars();
    await ok(putRates(token, 'USD', [{ month: '2026-01', rate: '30' }]));
    // The dollar customer also pays a monthly TWD order in February; a second customer pays in TWD only.
    fixedClock('2026-02-10T00:00:00Z');
    const paid = (order_no: string, amount: string, customer_email: string) =>
      ok(api.post('/orders', token, { order_no, amount, currency: 'TWD', billing_cycle: 'monthly', status: 'paid', customer_email }), 201);
    await paid('TWD-1', '500', customer.email);
    await paid('TWD-2', '200', 'twd@rates.test');
    // Read once the orders' month (to 03-10) and their renewal grace have passed, settled by the scheduler.
    fixedClock('2026-04-10T12:00:00Z');
    await runRenewalChecks(merchantId);

    // The whole: 3,000 converted from January, and both orders for February.
    expect((await months(token)).data.map((e) => [e.mrr, e.new, e.expansion])).toEqual([
      ['3000.00', '3000.00', '0.00'],
      ['3700.00', '200.00', '500.00'],
      ['3000.00', '0.00', '0.00'],
    ]);
    // TWD alone: the dollar customer is new there in February with its order, not an expansion.
    const own = await months(token, '&currency=TWD');
    expect(own.data.map((e) => [e.mrr, e.new, e.expansion, e.churn, e.active_customers, e.unconverted])).toEqual([
      ['0.00', '0.00', '0.00', '0.00', 0, {}],
      ['700.00', '700.00', '0.00', '0.00', 2, {}],
      ['0.00', '0.00', '0.00', '-700.00', 0, {}],
    ]);
    expect(own.unconverted).toEqual({});
    // Named in lower case, it is the same segment; its summary and cohorts follow.
    expect(await months(token, '&currency=twd')).toEqual(own);
    expect((await ok(api.get('/metrics/summary?currency=TWD', token))).data).toMatchObject({ current_mrr: '0.00', unconverted: {} });
    const cohorts = (await ok(api.get('/metrics/cohorts?start_month=2026-01&end_month=2026-03&currency=TWD', token))).data;
    expect(cohorts.map((c: { cohort: string; customers: number }) => [c.cohort, c.customers])).toEqual([
      ['2026-01', 0],
      ['2026-02', 2],
      ['2026-03', 0],
    ]);
    // A rate change moves the whole, never the reporting currency's own lines.
    await ok(putRates(token, 'USD', [{ month: '2026-01', rate: '31' }]));
    expect((await months(token)).data.map((e) => e.mrr)).toEqual(['3100.00', '3800.00', '3100.00']);
    expect(await months(token, '&currency=TWD')).toEqual(own);
  });

  it("GET /orders/stats counts other currencies' revenue at this month's rate, names those without one, and costs one read more only then", async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const { token } = await newMerchant();
    const paid = (order_no: string, amount: string, currency: string, paid_at: string) =>
      ok(api.post('/orders', token, { order_no, amount, currency, status: 'paid', paid_at, customer_email: 'stats@rates.test' }), 201);
    await paid('T-1', '1000', 'TWD', '2026-03-10T01:00:00Z');
    const twdOnly = await api.counted('GET', '/orders/stats', { token });
    expect(twdOnly.res.body).toEqual({
      data: { today_revenue: '1000.00', monthly_revenue: '1000.00', today_count: 1, today_success_rate: 100 },
      unconverted: {},
    });
    await paid('U-1', '10.05', 'USD', '2026-03-10T02:00:00Z');
    await paid('U-2', '10', 'USD', '2026-03-02T00:00:00Z');
    // A rate for another month is not this month's.
    await ok(putRates(token, 'USD', [{ month: '2026-02', rate: '30' }]));
    const left = await api.counted('GET', '/orders/stats', { token });
    expect(left.res.body.data).toMatchObject({ today_revenue: '1000.00', monthly_revenue: '1000.00' });
    expect(left.res.body.unconverted).toEqual({ USD: { today_revenue: '10.05', monthly_revenue: '20.05' } });
    expect(left.requests).toBe(twdOnly.requests + 1);

    await ok(putRates(token, 'USD', [{ month: '2026-03', rate: '31.555' }]));
    // 1000 + 10.05 × 31.555 = 1317.12775; 1000 + 20.05 × 31.555 = 1632.67775: exact, rounded half up once.
    expect(await ok(api.get('/orders/stats', token))).toEqual({
      data: { today_revenue: '1317.13', monthly_revenue: '1632.68', today_count: 3, today_success_rate: 100 },
      unconverted: {},
    });
    // A currency named is its own money alone, the reporting currency too: nothing converted, nothing left out.
    expect((await ok(api.get('/orders/stats?currency=USD', token))).data).toMatchObject({
      today_revenue: '10.05',
      monthly_revenue: '20.05',
    });
    expect(await ok(api.get('/orders/stats?currency=TWD', token))).toEqual({
      data: { today_revenue: '1000.00', monthly_revenue: '1000.00', today_count: 3, today_success_rate: 100 },
      unconverted: {},
    });
  });

  it("a customer's ltv counts paid orders in other currencies at their month's rate, in the zone as it is now; a refund takes them out", async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const { merchantId, token } = await newMerchant();
    const pay = (order_no: string, amount: string, currency: string, paid_at: string) =>
      ok(api.post('/orders', token, { order_no, amount, currency, status: 'paid', paid_at, customer_email: 'ltv@rates.test' }), 201);
    await pay('T-1', '1000', 'TWD', '2026-01-05T00:00:00Z');
    const id = (await pay('U-1', '10.05', 'USD', '2026-02-10T00:00:00Z')).data.customer_id;
    // 28 February 20:00 UTC: February in UTC, 1 March in Taipei.
    await pay('U-2', '20', 'USD', '2026-02-28T20:00:00Z');
    const customer = async () => (await ok(api.get(`/customers/${id}`, token))).data;
    const plain = await api.counted('GET', `/customers/${id}`, { token });
    expect(plain.res.body.data).toMatchObject({ ltv: '1000.00', ltv_by_currency: { TWD: '1000.00', USD: '30.05' }, order_count: 3 });

    await ok(putRates(token, 'USD', [{ month: '2026-02', rate: '30.5' }]));
    // 1000 + 30.05 × 30.5 = 1916.525 → 1916.53 (half up, once); the list shows the same.
    const converted = await api.counted('GET', `/customers/${id}`, { token });
    expect(converted.res.body.data).toMatchObject({ ltv: '1916.53', ltv_by_currency: { TWD: '1000.00', USD: '30.05' } });
    expect((await ok(api.get('/customers', token))).data.find((c: { id: number }) => c.id === id).ltv).toBe('1916.53');
    // A customer with other currencies reads the rate tables (one request); once they have rates, its parts too (one more).
    expect(converted.requests).toBe(plain.requests + 1);

    // In Taipei the second payment is March's, which has no rate yet: 1000 + 10.05 × 30.5 = 1306.525.
    await ok(
      api.request('PUT', '/settings', {
        headers: { authorization: `Bearer ${await backofficeJwt(merchantId, 'admin')}` },
        body: { timezone: 'Asia/Taipei' },
      }),
    );
    expect((await customer()).ltv).toBe('1306.53');
    await ok(putRates(token, 'USD', [{ month: '2026-03', rate: '31' }]));
    expect((await customer()).ltv).toBe('1926.53');
    // A refund takes the order out of ltv as if it had never been paid.
    await ok(api.patch('/orders/U-2', token, { status: 'refunded' }));
    expect((await customer()).ltv).toBe('1306.53');
    expect((await customer()).ltv_by_currency).toEqual({ TWD: '1000.00', USD: '10.05' });
  });

  it('ops metrics rebuild gives orders paid before LTV parts existed their parts, and removes a part no order makes', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const { merchantId, token } = await newMerchant();
    const pay = (order_no: string, amount: string, currency: string, paid_at: string) =>
      ok(api.post('/orders', token, { order_no, amount, currency, status: 'paid', paid_at, customer_email: 'old@rates.test' }), 201);
    const id = (await pay('T-1', '1000', 'TWD', '2026-01-05T00:00:00Z')).data.customer_id;
    await pay('U-1', '10.05', 'USD', '2026-02-10T00:00:00Z');
    await pay('U-2', '20', 'USD', '2025-06-01T00:00:00Z');
    await ok(
      putRates(token, 'USD', [
        { month: '2026-02', rate: '30' },
        { month: '2025-06', rate: '31' },
      ]),
    );
    const ltv = async () => (await ok(api.get(`/customers/${id}`, token))).data.ltv;
    // 1000 + 10.05 × 30 + 20 × 31.
    expect(await ltv()).toBe('1921.50');
    // As stored before parts existed, with a stray part besides: the payments in dollars are left out.
    for (const year of ['2026', '2025'])
      await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.customerLtvPart(merchantId, id, 'USD', year) }));
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...keys.customerLtvPart(merchantId, id, 'USD', '2024'), currency: 'USD', year: '2024', m01: 5 },
      }),
    );
    expect(await ltv()).toBe('1000.00');
    expect((await rebuildMerchantAggregates(merchantId, repairCustomer)).ltv_parts_written).toBe(3);
    expect(await ltv()).toBe('1921.50');
    expect((await rebuildMerchantAggregates(merchantId, repairCustomer)).ltv_parts_written).toBe(0);
  });

  it("a change in a month without a rate is left out until that month has one; then it counts at that month's rate", async () => {
    const { token, sub } = await inDollars();
    await ok(putRates(token, 'USD', [{ month: '2026-01', rate: '30' }]));
    fixedClock('2026-03-05T00:00:00Z');
    await ok(api.put(`/subscriptions/${sub.id}`, token, { mrr: '200' }));
    fixedClock('2026-03-10T12:00:00Z');
    const gap = await months(token);
    expect(gap.data.map(brief)).toEqual([
      ['2026-01-01', '3000.00', {}],
      ['2026-02-01', '3000.00', {}],
      ['2026-03-01', '0.00', { USD: '200.00' }],
    ]);
    expect(gap.data[2].churn).toBe('-3000.00');
    await ok(putRates(token, 'USD', [{ month: '2026-03', rate: '31' }]));
    const filled = await months(token);
    expect(filled.data.map(brief)).toEqual([
      ['2026-01-01', '3000.00', {}],
      ['2026-02-01', '3000.00', {}],
      ['2026-03-01', '6200.00', {}],
    ]);
    expect(filled.data[2]).toMatchObject({ expansion: '3200.00', churn: '0.00' });
    // Removing a month's rate (null) leaves it out again.
    expect((await ok(putRates(token, 'USD', [{ month: '2026-01', rate: null }]))).data.rates).toEqual([{ month: '2026-03', rate: '31' }]);
    // A currency whose months are all removed is no longer listed.
    expect((await ok(putRates(token, 'EUR', [{ month: '2026-01', rate: '34' }]))).data.rates).toHaveLength(1);
    expect((await ok(putRates(token, 'EUR', [{ month: '2026-01', rate: null }]))).data).toEqual({ currency: 'EUR', rates: [] });
    expect((await ok(api.get('/exchange-rates', token))).data.map((t: { currency: string }) => t.currency)).toEqual(['USD']);
    expect((await months(token)).data.map(brief)).toEqual([
      ['2026-01-01', '0.00', { USD: '100.00' }],
      ['2026-02-01', '0.00', { USD: '100.00' }],
      ['2026-03-01', '6200.00', {}],
    ]);
  });

  it('refuses what it cannot use with 422 and stores nothing', async () => {
    const { token } = await inDollars();
    const refused = async (currency: string, rates: unknown, field: string, message: RegExp) => {
      const res = await api.request('PUT', `/exchange-rates/${currency}`, { token, body: { rates } });
      expect(res.status, JSON.stringify(rates)).toBe(422);
      expect(res.body.message).toBe('The given data was invalid.');
      expect(res.body.errors[field]?.[0], JSON.stringify(res.body)).toMatch(message);
    };
    await refused('TWD', [{ month: '2026-01', rate: '1' }], 'currency', /must not be the reporting currency \(TWD\)/);
    await refused('XYZ', [{ month: '2026-01', rate: '1' }], 'currency', /valid ISO 4217/);
    await refused('USD', [{ month: '2026-13', rate: '1' }], 'rates.0.month', /month \(YYYY-MM\) from 1970-01 to 2099-12/);
    await refused('USD', [{ month: '1969-12', rate: '1' }], 'rates.0.month', /from 1970-01/);
    await refused('USD', [{ month: '2026-01', rate: '0' }], 'rates.0.rate', /decimal above 0/);
    await refused('USD', [{ month: '2026-01', rate: '-1' }], 'rates.0.rate', /decimal above 0/);
    await refused('USD', [{ month: '2026-01', rate: '1.12345678901' }], 'rates.0.rate', /10 fraction digits/);
    await refused('USD', [{ month: '2026-01', rate: 'abc' }], 'rates.0.rate', /decimal above 0/);
    await refused('USD', [], 'rates', /at least 1 item/);
    await refused(
      'USD',
      [
        { month: '2026-01', rate: '1' },
        { month: '2026-01', rate: '2' },
      ],
      'rates.1.month',
      /repeats 2026-01/,
    );
    expect((await ok(api.get('/exchange-rates', token))).data).toEqual([]);
    expect((await months(token)).summary.unconverted).toEqual({ USD: '100.00' });
  });

  it('back-office admins set rates from the dashboard; users only read them', async () => {
    const { merchantId, token } = await inDollars();
    const as = async (role: 'admin' | 'user') => ({ authorization: `Bearer ${await backofficeJwt(merchantId, role)}` });
    const body = { rates: [{ month: '2026-01', rate: '31' }] };
    expect((await api.request('PUT', '/exchange-rates/USD', { headers: await as('user'), body })).status).toBe(403);
    expect((await api.request('PUT', '/exchange-rates/USD', { headers: await as('admin'), body })).status).toBe(200);
    expect((await api.request('GET', '/exchange-rates', { headers: await as('user') })).body.data).toEqual([
      { currency: 'USD', rates: [{ month: '2026-01', rate: '31' }] },
    ]);
    expect((await months(token)).data.map((e) => e.mrr)).toEqual(['3100.00', '3100.00', '3100.00']);
  });

  it('rate changes amid concurrent writes: after their recount, the stored figures equal those computed from the timelines', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const { token } = await newMerchant();
    const ids: number[] = [];
    for (let i = 0; i < 10; i++)
      ids.push((await ok(api.post('/customers', token, { email: `c${i}@rates.test`, metadata: { team: 'core' } }), 201)).data.id);
    const writes = ids.map((id, i) =>
      importDollars(token, [
        {
          customer_id: id,
          mrr: String(10 + i),
          currency: i % 3 ? 'USD' : 'TWD',
          started_at: `2026-0${1 + (i % 3)}-0${1 + (i % 9)}T00:00:00Z`,
        },
      ]),
    );
    // Two changes at once: each starts a recount (the later supersedes the earlier), or one meets the other's start and is told to come back (409 with Retry-After).
    await Promise.all([
      ...writes,
      ok(honouringRetryAfter(() => putRates(token, 'USD', [{ month: '2026-01', rate: '30' }]))),
      ok(honouringRetryAfter(() => putRates(token, 'USD', [{ month: '2026-02', rate: '31.25' }]))),
    ]);
    const range = 'start_date=2026-01-01&end_date=2026-03-10&interval=day';
    const stored = await ok(api.get(`/metrics/mrr?${range}`, token));
    // The metadata segment (every customer matches) is computed from the timelines at read time.
    const computed = await ok(api.get(`/metrics/mrr?${range}&metadata.team=core`, token));
    expect(stored.data).toEqual(
      computed.data.map((e: Entry) => ({ ...e, unconverted: stored.data.find((s: Entry) => s.date === e.date).unconverted })),
    );
    const last = stored.data.at(-1) as Entry;
    // USD customers started in March (no rate) are left out and reported: 12 + 15 + 18.
    expect(last.unconverted).toEqual({ USD: '45.00' });
  });

  it('adds no request to the unsegmented reads; a write in another currency reads its rates with one request more', async () => {
    const dollars = await inDollars();
    await ok(putRates(dollars.token, 'USD', [{ month: '2026-01', rate: '30' }]));
    fixedClock('2026-03-10T12:00:00Z');
    const plain = await newMerchant();
    const c = (await ok(api.post('/customers', plain.token, { email: 'twd@rates.test' }), 201)).data;
    await importDollars(plain.token, [{ customer_id: c.id, mrr: '100', currency: 'TWD', started_at: '2026-01-15T00:00:00Z' }]);
    for (const path of [
      '/metrics/mrr?start_date=2024-04-01&end_date=2026-03-10&interval=month',
      '/metrics/mrr?start_date=2025-03-01&end_date=2026-03-10&interval=day',
      '/metrics/summary',
    ]) {
      const [a, b] = [await api.counted('GET', path, { token: plain.token }), await api.counted('GET', path, { token: dollars.token })];
      expect(b.res.status, path).toBe(200);
      expect(b.requests, path).toBe(a.requests);
    }
    const [twdSub] = (await ok(api.get('/subscriptions', plain.token))).data;
    const change = (token: string, id: number, mrr: string) => api.counted('PUT', `/subscriptions/${id}`, { token, body: { mrr } });
    // The customer's first write since the rate change (a new generation of the figures) costs what any later one does.
    const first = await change(dollars.token, dollars.sub.id, '110');
    const [twd, usd] = [await change(plain.token, twdSub.id, '120'), await change(dollars.token, dollars.sub.id, '120')];
    expect([first.res.status, usd.res.status]).toEqual([200, 200]);
    // An imported subscription holds a block of event ids like one created alone: its change stays within 5.
    expect(twd.requests, JSON.stringify(twd.byCommand)).toBeLessThanOrEqual(5);
    expect(usd.requests, JSON.stringify([twd.byCommand, usd.byCommand])).toBe(twd.requests + 1);
    expect(first.requests, JSON.stringify([first.byCommand, usd.byCommand])).toBe(usd.requests);
  });

  it("a converting write reads its rates from the generation's settings and checks only the generation copy, never a rate table", async () => {
    const { token, merchantId, customer } = await inDollars();
    await ok(putRates(token, 'USD', [{ month: '2026-01', rate: '30' }]));
    // The table as set changes without a recount (as it never does through the API): the figures keep the generation's rates.
    const table = new WriteSet();
    addRateTablePut(table, merchantId, { ...(await readRateTable(merchantId, 'USD')), rates: { '2026-01': '40' } });
    await table.commit();
    const generation = (await getMerchant(merchantId))!.metrics_generation ?? 0;
    expect(generation).toBeGreaterThan(0);
    const state = await readTimeline(merchantId, customer.id);
    const ws = new WriteSet(3);
    await addTimelineChange(
      ws,
      merchantId,
      { reportingCurrency: 'TWD', timezone: 'UTC', generation },
      customer.id,
      state,
      setFrom(state.timeline, 'S9', '2026-02-01T00:00:00Z', 5, 'a', ['Pro', 'monthly', 'USD']),
    );
    const checks = ws.toTransactItems().flatMap((a) => (a.ConditionCheck ? [String(a.ConditionCheck.Key!.pk)] : []));
    expect(checks).toEqual([keys.generation(merchantId, 3).pk]);
    await ws.commit();
    // January counted at 30 (the generation's), not 40 (the table's as set); February has no rate: its 5 USD are left out and named.
    const after = (await months(token)).data;
    expect(after[0].mrr).toBe('3000.00');
    expect(after[1].unconverted).toEqual({ USD: '5.00' });
  });
});
