import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { timestampPlusMonths } from '#lib/shared/time';
import { runRenewalChecks } from '../support/renewals.ts';
import { newMerchant, useApi } from '../support/api.ts';

/** Parameters (422 on the one at fault), defaults, interval boundaries, abilities and merchant isolation. */
const api = useApi();
afterEach(() => resetClock());

const INVALID = 'The given data was invalid.';
const expect422 = async (token: string, path: string, field: string) => {
  const r = await api.get(path, token);
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(422);
  expect(r.body.message).toBe(INVALID);
  expect(Object.keys(r.body.errors), path).toEqual([field]);
  return r.body.errors[field][0] as string;
};
const get = async (token: string, path: string) => {
  const r = await api.get(path, token);
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
};

describe('GET /metrics/mrr parameters', () => {
  it('a date-time is taken as its UTC day (docs/api-conventions.md: offsets converted to UTC)', async () => {
    fixedClock('2026-03-15T12:00:00Z');
    const { token } = await newMerchant();
    const days = async (q: string) => (await get(token, `/metrics/mrr?interval=day&${q}`)).data.map((e: { date: string }) => e.date);
    expect(
      await days(
        `start_date=${encodeURIComponent('2025-01-01T10:00:00+08:00')}&end_date=${encodeURIComponent('2025-01-02T23:30:00-05:00')}`,
      ),
    ).toEqual(['2025-01-01', '2025-01-02', '2025-01-03']);
    expect(await days('start_date=2025-01-01T00:00:00Z&end_date=2025-01-01')).toEqual(['2025-01-01']);
  });

  it('every bad value is a 422 on its parameter', async () => {
    fixedClock('2026-03-15T12:00:00Z');
    const { token } = await newMerchant();
    for (const bad of ['2025-02-30', '2025/01/01', '2025-1-01', '2025-01-01T25:00:00Z', '2025-01-01T00:00:00', '', 'today', '0000-01-01']) {
      expect(await expect422(token, `/metrics/mrr?start_date=${encodeURIComponent(bad)}`, 'start_date')).toBe(
        'The start date field must be a valid date (YYYY-MM-DD).',
      );
      await expect422(token, `/metrics/mrr?end_date=${encodeURIComponent(bad)}`, 'end_date');
    }
    for (const bad of ['years', 'DAY', '', 'weeks', 'Q1']) {
      expect(await expect422(token, `/metrics/mrr?interval=${bad}`, 'interval')).toBe(
        'The selected interval is invalid. Allowed: day, week, month, quarter, year.',
      );
    }
    expect(await expect422(token, '/metrics/mrr?start_date=2025-02-01&end_date=2025-01-31', 'end_date')).toBe(
      'The end date field must be a date after or equal to the start date.',
    );
    // Only start_date given and after today (the default end): the start is at fault.
    await expect422(token, '/metrics/mrr?start_date=2026-03-16', 'start_date');
    // day: at most 731 points (2024-01-01 … 2025-12-31 is 731 days: a leap year and another).
    expect((await get(token, '/metrics/mrr?start_date=2024-01-01&end_date=2025-12-31&interval=day')).data).toHaveLength(731);
    expect(await expect422(token, '/metrics/mrr?start_date=2024-01-01&end_date=2026-01-01&interval=day', 'end_date')).toBe(
      'The range must not have more than 731 days for the day interval.',
    );
    // week and month: at most 10 years.
    expect((await get(token, '/metrics/mrr?start_date=2015-01-01&end_date=2024-12-31&interval=month')).data).toHaveLength(120);
    expect((await get(token, '/metrics/mrr?start_date=2015-01-01&end_date=2024-12-31&interval=week')).data).toHaveLength(523); // Thu 2015-01-01 … Sun 01-04, then 522 Mondays
    // No projections: an end after today (the merchant's clock says 2026-03-15).
    expect(await expect422(token, '/metrics/mrr?end_date=2026-03-16', 'end_date')).toBe(
      'The end date field must be a date before or equal to today.',
    );
    expect(await expect422(token, '/metrics/mrr?start_date=2026-03-01&end_date=2026-04-01&interval=day', 'end_date')).toBe(
      'The end date field must be a date before or equal to today.',
    );
    expect((await get(token, '/metrics/mrr?end_date=2026-03-15&interval=day&start_date=2026-03-15')).data).toHaveLength(1);
    // The last representable days (the loop must not run past 9999-12-31), on the last day there is.
    fixedClock('9999-12-31T23:59:59Z');
    expect((await get(token, '/metrics/mrr?start_date=9999-12-01&end_date=9999-12-31&interval=day')).data).toHaveLength(31);
    expect((await get(token, '/metrics/mrr?start_date=9990-01-01&end_date=9999-12-31&interval=week')).data.at(-1).date).toBe('9999-12-27');
    expect((await get(token, '/metrics/mrr?start_date=0001-01-01&end_date=0001-01-31&interval=week')).data[0].date).toBe('0001-01-01');
    expect((await get(token, '/metrics/cohorts?start_month=9999-01&end_month=9999-12')).data).toHaveLength(12);
    for (const interval of ['week', 'month']) {
      expect(await expect422(token, `/metrics/mrr?start_date=2015-01-01&end_date=2025-01-01&interval=${interval}`, 'end_date')).toBe(
        'The range must not be longer than 10 years.',
      );
    }
  });

  it('repeated filters are bounded: at most 20 plans and 10 metadata filters, the excess a 422 naming the parameter', async () => {
    const { token } = await newMerchant();
    const plans = (n: number) => Array.from({ length: n }, (_, i) => `plan=P${i}`).join('&');
    expect((await api.get(`/metrics/mrr?${plans(20)}`, token)).status).toBe(200);
    expect(await expect422(token, `/metrics/mrr?${plans(21)}`, 'plan')).toBe('The plan parameter may be given at most 20 times.');
    const metadata = (n: number) => Array.from({ length: n }, (_, i) => `metadata.k${i % 4}=v${i}`).join('&');
    expect((await api.get(`/metrics/summary?${metadata(10)}`, token)).status).toBe(200);
    expect(await expect422(token, `/metrics/cohorts?${metadata(11)}`, 'metadata.k3')).toBe(
      'A query may hold at most 10 metadata.<key> filters, repeats included.',
    );
  });

  it('defaults: month interval, the 12 months up to today', async () => {
    fixedClock('2026-03-15T12:00:00Z');
    const { token } = await newMerchant();
    const r = await get(token, '/metrics/mrr');
    expect(r.data.map((e: { date: string }) => e.date)).toEqual([
      '2025-04-01',
      '2025-05-01',
      '2025-06-01',
      '2025-07-01',
      '2025-08-01',
      '2025-09-01',
      '2025-10-01',
      '2025-11-01',
      '2025-12-01',
      '2026-01-01',
      '2026-02-01',
      '2026-03-01',
    ]);
    expect(r.summary).toEqual({
      current_mrr: '0.00',
      arr: '0.00',
      arpa: null,
      customer_churn_rate: null,
      mrr_churn_rate: null,
      unconverted: {},
    });
  });
});

describe('GET /metrics/cohorts parameters', () => {
  it('every bad value is a 422 on its parameter; at most 36 months', async () => {
    fixedClock('2026-03-15T12:00:00Z');
    const { token } = await newMerchant();
    for (const bad of ['2025-13', '2025-00', '2025-1', '2025-01-01', '0000-01', '', 'x']) {
      expect(await expect422(token, `/metrics/cohorts?start_month=${bad}`, 'start_month')).toBe(
        'The start month field must be a valid month (YYYY-MM).',
      );
      await expect422(token, `/metrics/cohorts?end_month=${bad}`, 'end_month');
    }
    await expect422(token, '/metrics/cohorts?start_month=2025-02&end_month=2025-01', 'end_month');
    await expect422(token, '/metrics/cohorts?start_month=2026-04', 'start_month');
    expect((await get(token, '/metrics/cohorts?start_month=2023-01&end_month=2025-12')).data).toHaveLength(36);
    expect(await expect422(token, '/metrics/cohorts?start_month=2023-01&end_month=2026-01', 'end_month')).toBe(
      'The range must not have more than 36 months.',
    );
    const d = (await get(token, '/metrics/cohorts')).data;
    expect(d.map((c: { cohort: string }) => c.cohort)).toEqual([
      '2025-04',
      '2025-05',
      '2025-06',
      '2025-07',
      '2025-08',
      '2025-09',
      '2025-10',
      '2025-11',
      '2025-12',
      '2026-01',
      '2026-02',
      '2026-03',
    ]);
    expect(d[11]).toEqual({
      cohort: '2026-03',
      customers: 0,
      mrr: '0.00',
      retention: [{ month: '2026-03', customers: 0, mrr: '0.00', customer_retention: null, mrr_retention: null }],
    });
  });
});

describe('abilities and isolation', () => {
  it('analytics:read is needed (403 otherwise, 401 without a token); another merchant sees none of the figures', async () => {
    fixedClock('2026-03-15T12:00:00Z');
    const a = await newMerchant();
    const c = await api.post('/customers', a.token, { email: 'iso@metrics.test', name: 'I' });
    expect(
      (await api.post('/subscriptions', a.token, { customer_id: c.body.data.id, plan_name: 'P', mrr: '42', billing_cycle: 'monthly' }))
        .status,
    ).toBe(201);
    const others = await newMerchant(['customers:read', 'orders:read', 'subscriptions:read', 'subscriptions:write']);
    for (const path of ['/metrics/mrr', '/metrics/summary', '/metrics/cohorts']) {
      expect((await api.get(path, others.token)).status).toBe(403);
      expect((await api.get(path, null)).status).toBe(401);
    }
    expect((await get(a.token, '/metrics/summary')).data.current_mrr).toBe('42.00');
    const b = await newMerchant();
    expect((await get(b.token, '/metrics/summary')).data).toMatchObject({
      current_mrr: '0.00',
      active_customers: 0,
      active_subscriptions: 0,
    });
    expect((await get(b.token, '/metrics/mrr')).data.every((e: { mrr: string }) => e.mrr === '0.00')).toBe(true);
    expect((await get(b.token, '/metrics/cohorts')).data.every((e: { customers: number }) => e.customers === 0)).toBe(true);
  });
});

describe('interval boundaries (UTC)', () => {
  it('weeks start on Monday; month ends and leap days split where they should', async () => {
    const clock = fixedClock('2024-01-31T23:59:59Z');
    const { token, merchantId } = await newMerchant();
    const customer = async (email: string) => (await api.post('/customers', token, { email, name: email })).body.data.id as number;
    const [c1, c2] = [await customer('b1@metrics.test'), await customer('b2@metrics.test')];
    // The last second of January, and the first of February.
    expect((await api.post('/subscriptions', token, { customer_id: c1, plan_name: 'P', mrr: '10', billing_cycle: 'monthly' })).status).toBe(
      201,
    );
    clock.set('2024-02-01T00:00:00Z');
    expect((await api.post('/subscriptions', token, { customer_id: c2, plan_name: 'P', mrr: '20', billing_cycle: 'monthly' })).status).toBe(
      201,
    );
    // A monthly order paid on Jan 31 ends on the leap day (Feb 29).
    expect(
      (
        await api.post('/orders', token, {
          order_no: 'LEAP',
          amount: '30',
          customer_email: 'b3@metrics.test',
          status: 'paid',
          billing_cycle: 'monthly',
          paid_at: '2024-01-31T12:00:00Z',
        })
      ).status,
    ).toBe(201);
    // Read once the range has passed (no projections), and the order's renewal grace (to 03-30) with it.
    clock.set('2024-04-01T00:00:00Z');
    await runRenewalChecks(merchantId);

    const months = (await get(token, '/metrics/mrr?start_date=2024-01-01&end_date=2024-03-31')).data;
    expect(months.map((e: any) => [e.date, e.new, e.churn, e.mrr])).toEqual([
      ['2024-01-01', '40.00', '0.00', '40.00'],
      ['2024-02-01', '20.00', '-30.00', '30.00'],
      ['2024-03-01', '0.00', '0.00', '30.00'],
    ]);
    const days = (await get(token, '/metrics/mrr?start_date=2024-02-28&end_date=2024-03-01&interval=day')).data;
    expect(days.map((e: any) => [e.date, e.churn, e.mrr])).toEqual([
      ['2024-02-28', '0.00', '60.00'],
      ['2024-02-29', '-30.00', '30.00'],
      ['2024-03-01', '0.00', '30.00'],
    ]);
    // 2024-01-28 is a Sunday, 2024-01-29 a Monday.
    const weeks = (await get(token, '/metrics/mrr?start_date=2024-01-28&end_date=2024-02-12&interval=week')).data;
    expect(weeks.map((e: any) => [e.date, e.new, e.mrr])).toEqual([
      ['2024-01-28', '0.00', '0.00'],
      ['2024-01-29', '60.00', '60.00'],
      ['2024-02-05', '0.00', '60.00'],
      ['2024-02-12', '0.00', '60.00'],
    ]);
    expect(timestampPlusMonths('2024-01-31T10:00:00Z', 1)).toBe('2024-02-29T10:00:00Z');
    expect(timestampPlusMonths('2023-01-31T10:00:00Z', 1)).toBe('2023-02-28T10:00:00Z');
    expect(timestampPlusMonths('2024-11-30T10:00:00Z', 3)).toBe('2025-02-28T10:00:00Z');
    expect(timestampPlusMonths('2024-02-29T00:00:00Z', 12)).toBe('2025-02-28T00:00:00Z');
  });
});

describe('order moves in imports', () => {
  it('a re-linked order takes its line to the new customer; a currency or cycle change erases its past', async () => {
    const clock = fixedClock('2025-03-01T00:00:00Z');
    const { token } = await newMerchant();
    const post = async (orders: unknown[]) => {
      const r = await api.post('/orders/batch', token, { orders });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.data.failed, JSON.stringify(r.body.data.results.failed)).toBe(0);
    };
    await post([
      {
        order_no: 'M-1',
        amount: '90',
        customer_email: 'x@moves.test',
        status: 'paid',
        billing_cycle: 'quarterly',
        paid_at: '2025-02-01T00:00:00Z',
      },
      {
        order_no: 'M-2',
        amount: '50',
        customer_email: 'x@moves.test',
        status: 'paid',
        billing_cycle: 'monthly',
        paid_at: '2025-02-20T00:00:00Z',
      },
    ]);
    const month = async (m: string) => (await get(token, `/metrics/mrr?start_date=${m}-01&end_date=${m}-28`)).data[0];
    expect(await month('2025-02')).toMatchObject({ mrr: '80.00', new: '30.00', expansion: '50.00', active_customers: 1 });
    clock.set('2025-03-10T00:00:00Z');
    // M-1 moves to y: x's February becomes 50 new only, y is new with 30 from Feb 1.
    await post([{ order_no: 'M-1', customer_email: 'y@moves.test' }]);
    expect(await month('2025-02')).toMatchObject({ mrr: '80.00', new: '80.00', expansion: '0.00', active_customers: 2 });
    // M-2 becomes USD: every figure, February's included, is as if it had never counted (no churn today).
    await post([{ order_no: 'M-2', currency: 'USD' }]);
    expect(await month('2025-02')).toMatchObject({ mrr: '30.00', new: '30.00', expansion: '0.00', churn: '0.00', active_customers: 1 });
    const march = await get(token, '/metrics/mrr?start_date=2025-03-01&end_date=2025-03-10&interval=day');
    expect(
      march.data.every((e: any) => e.churn === '0.00' && e.mrr === '30.00'),
      JSON.stringify(march.data),
    ).toBe(true);
    // M-1 becomes one-time: nothing ever counted.
    clock.set('2025-03-15T00:00:00Z');
    await post([{ order_no: 'M-1', billing_cycle: 'one-time' }]);
    expect(await month('2025-02')).toMatchObject({ mrr: '0.00', new: '0.00', churn: '0.00', active_customers: 0 });
    expect((await get(token, '/metrics/mrr?start_date=2025-03-15&end_date=2025-03-15&interval=day')).data[0]).toMatchObject({
      churn: '0.00',
      mrr: '0.00',
      active_customers: 0,
    });
    expect((await get(token, '/metrics/summary')).data).toMatchObject({ current_mrr: '0.00', active_customers: 0 });
    expect((await get(token, '/metrics/cohorts?start_month=2025-02&end_month=2025-03')).data.map((c: any) => c.customers)).toEqual([0, 0]);
  });

  it('the OpenAPI document describes the metrics routes and their segment filters', async () => {
    const doc = (await api.get('/openapi.json', null)).body;
    for (const path of ['/metrics/mrr', '/metrics/summary', '/metrics/cohorts', '/metrics/plans', '/metrics/churn-reasons'])
      expect(doc.paths[path]?.get, path).toBeTruthy();
    const names = (path: string) => doc.paths[path].get.parameters.map((p: { name: string }) => p.name).sort();
    expect(names('/metrics/mrr')).toEqual(['billing_cycle', 'currency', 'end_date', 'interval', 'plan', 'start_date']);
    expect(names('/metrics/summary')).toEqual(['billing_cycle', 'currency', 'plan']);
    expect(names('/metrics/cohorts')).toEqual(['billing_cycle', 'currency', 'end_month', 'plan', 'start_month']);
    expect(names('/metrics/plans')).toEqual(['date']);
    expect(names('/metrics/churn-reasons')).toEqual(['end_date', 'start_date']);
  });
});
