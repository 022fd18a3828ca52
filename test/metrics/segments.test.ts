import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { runRenewalChecks } from '../support/renewals.ts';
import { newMerchant, useApi } from '../support/api.ts';

/**
 * Segments, figures per plan and churn by reason (docs/metrics.md): each figure by hand from one
 * small history, so a wrong rule (a plan change counted as churn, a foreign currency in the whole,
 * a reason lost) shows as a wrong number.
 */
const api = useApi();
afterEach(() => resetClock());

type Entry = {
  date: string;
  mrr: string;
  new: string;
  expansion: string;
  churn: string;
  active_customers: number;
  active_subscriptions: number;
};
const pick = (e: Entry) => [e.date, e.mrr, e.new, e.expansion, e.churn, e.active_customers, e.active_subscriptions];

/**
 * A (Pro 100, monthly) and B (Basic 50, yearly) from 2026-01-01; B moves to Pro at 80 on 02-10;
 * A is cancelled on 03-05 ("Too expensive"); C pays a monthly order of 30 USD on 01-15 (reporting
 * currency TWD); D subscribes to Basic 40 monthly on 01-20, cancelled on 01-25 without a reason.
 */
const history = async () => {
  const clock = fixedClock('2026-01-01T00:00:00Z');
  const { token, merchantId } = await newMerchant();
  const customer = async (email: string) => (await api.post('/customers', token, { email })).body.data.id as number;
  const [a, b, c, d] = [
    await customer('a@seg.test'),
    await customer('b@seg.test'),
    await customer('c@seg.test'),
    await customer('d@seg.test'),
  ];
  const sub = async (customer_id: number, plan_name: string, mrr: string, billing_cycle: string) => {
    const r = await api.post('/subscriptions', token, { customer_id, plan_name, mrr, billing_cycle });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.data.id as number;
  };
  const subA = await sub(a, 'Pro', '100', 'monthly');
  const subB = await sub(b, 'Basic', '50', 'yearly');
  clock.set('2026-01-15T00:00:00Z');
  const order = {
    order_no: 'USD-1',
    amount: '30',
    currency: 'USD',
    billing_cycle: 'monthly',
    status: 'paid',
    customer_email: 'c@seg.test',
  };
  expect((await api.post('/orders', token, order)).status).toBe(201);
  expect(c).toBeGreaterThan(0);
  clock.set('2026-01-20T00:00:00Z');
  const subD = await sub(d, 'Basic', '40', 'monthly');
  clock.set('2026-01-25T00:00:00Z');
  expect((await api.put(`/subscriptions/${subD}/cancel`, token, {})).status).toBe(200);
  clock.set('2026-02-10T00:00:00Z');
  const moved = await api.put(`/subscriptions/${subB}`, token, { plan_name: 'Pro', mrr: '80' });
  expect(moved.status, JSON.stringify(moved.body)).toBe(200);
  clock.set('2026-03-05T00:00:00Z');
  expect((await api.put(`/subscriptions/${subA}/cancel`, token, { reason: 'Too expensive' })).status).toBe(200);
  clock.set('2026-03-31T12:00:00Z');
  // The USD order's renewal grace ran out on 03-17: the scheduler has settled it by now.
  await runRenewalChecks(merchantId);
  return { token, merchantId };
};

const series = async (token: string, filter: string) => {
  const r = await api.get(`/metrics/mrr?start_date=2026-01-01&end_date=2026-03-31&interval=month${filter}`, token);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body.data as Entry[]).map(pick);
};

describe('segments: the figures over only the matching lines', () => {
  it('by plan, billing cycle and currency; the whole stays in the reporting currency', { timeout: 60_000 }, async () => {
    const { token } = await history();
    // The whole: A, B, D in TWD (the USD order is left out).
    expect(await series(token, '')).toEqual([
      ['2026-01-01', '150.00', '190.00', '0.00', '-40.00', 2, 2],
      ['2026-02-01', '180.00', '0.00', '30.00', '0.00', 2, 2],
      ['2026-03-01', '80.00', '0.00', '0.00', '-100.00', 1, 1],
    ]);
    // Pro: A from January; B joins it in February (new there), A churns in March.
    expect(await series(token, '&plan=Pro')).toEqual([
      ['2026-01-01', '100.00', '100.00', '0.00', '0.00', 1, 1],
      ['2026-02-01', '180.00', '80.00', '0.00', '0.00', 2, 2],
      ['2026-03-01', '80.00', '0.00', '0.00', '-100.00', 1, 1],
    ]);
    // Basic: B and D in January, D cancelled; B leaves it in February (its MRR there goes to 0).
    expect(await series(token, '&plan=Basic')).toEqual([
      ['2026-01-01', '50.00', '90.00', '0.00', '-40.00', 1, 1],
      ['2026-02-01', '0.00', '0.00', '0.00', '-50.00', 0, 0],
      ['2026-03-01', '0.00', '0.00', '0.00', '0.00', 0, 0],
    ]);
    // Yearly: B all along, its plan change an expansion.
    expect(await series(token, '&billing_cycle=yearly')).toEqual([
      ['2026-01-01', '50.00', '50.00', '0.00', '0.00', 1, 1],
      ['2026-02-01', '80.00', '0.00', '30.00', '0.00', 1, 1],
      ['2026-03-01', '80.00', '0.00', '0.00', '0.00', 1, 1],
    ]);
    // USD: only the order, in USD, from its paid_at to the end of its month.
    expect(await series(token, '&currency=USD')).toEqual([
      ['2026-01-01', '30.00', '30.00', '0.00', '0.00', 1, 0],
      ['2026-02-01', '0.00', '0.00', '0.00', '-30.00', 0, 0],
      ['2026-03-01', '0.00', '0.00', '0.00', '0.00', 0, 0],
    ]);
    // Without a USD rate, the reporting currency's own lines give the whole's figures (the USD order is left out of both).
    expect(await series(token, '&currency=twd')).toEqual(await series(token, ''));
    // A plan change is no customer churn in the plan left: only A's cancellation churns a customer of Pro.
    const basic = (await api.get('/metrics/mrr?start_date=2026-02-01&end_date=2026-03-31&interval=month&plan=Basic', token)).body.data;
    expect(basic[0].customer_churn_rate).toBe(0);
    expect(basic[0].mrr_churn_rate).toBe(100);

    const summary = (await api.get('/metrics/summary?plan=Pro', token)).body.data;
    expect(summary).toMatchObject({ current_mrr: '80.00', active_customers: 1, active_subscriptions: 1, customer_churn_rate: 50 });
    const cohorts = (await api.get('/metrics/cohorts?start_month=2026-01&end_month=2026-03&plan=Pro', token)).body.data;
    expect(cohorts.map((c: { cohort: string; customers: number; mrr: string }) => [c.cohort, c.customers, c.mrr])).toEqual([
      ['2026-01', 1, '100.00'],
      ['2026-02', 1, '80.00'],
      ['2026-03', 0, '0.00'],
    ]);
  });

  it('GET /metrics/plans: MRR, active subscriptions and customers per plan at the end of a day', { timeout: 60_000 }, async () => {
    const { token } = await history();
    const at = async (date: string) => {
      const r = await api.get(`/metrics/plans${date ? `?date=${date}` : ''}`, token);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    expect(await at('2026-01-22')).toEqual({
      date: '2026-01-22',
      data: [
        { plan: 'Pro', mrr: '100.00', subscriptions: 1, customers: 1 },
        { plan: 'Basic', mrr: '90.00', subscriptions: 2, customers: 2 },
      ],
    });
    expect((await at('2026-02-20')).data).toEqual([{ plan: 'Pro', mrr: '180.00', subscriptions: 2, customers: 2 }]);
    expect(await at('')).toEqual({ date: '2026-03-31', data: [{ plan: 'Pro', mrr: '80.00', subscriptions: 1, customers: 1 }] });
    expect((await at('2025-12-31')).data).toEqual([]);
    const ahead = await api.get('/metrics/plans?date=2026-04-01', token);
    expect(ahead.status).toBe(422);
    expect(ahead.body.errors.date).toEqual(['The date field must be a date before or equal to today.']);
  });

  it('GET /metrics/churn-reasons: churned MRR and customers per cancellation reason', { timeout: 60_000 }, async () => {
    const { token } = await history();
    const reasons = async (q: string) => {
      const r = await api.get(`/metrics/churn-reasons${q}`, token);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.data;
    };
    expect(await reasons('?start_date=2026-01-01&end_date=2026-03-31')).toEqual([
      { reason: 'Too expensive', churned_mrr: '100.00', churned_customers: 1 },
      { reason: null, churned_mrr: '40.00', churned_customers: 1 },
    ]);
    // Partial months: only the days in the range count.
    expect(await reasons('?start_date=2026-01-26&end_date=2026-03-04')).toEqual([]);
    expect(await reasons('?start_date=2026-03-05&end_date=2026-03-05')).toEqual([
      { reason: 'Too expensive', churned_mrr: '100.00', churned_customers: 1 },
    ]);
    // Defaults: the 12 months up to today.
    expect((await reasons('')).length).toBe(2);
    const csv = await api.get('/metrics/churn-reasons?start_date=2026-01-01&end_date=2026-03-31', token, { accept: 'text/csv' });
    expect(csv.status).toBe(200);
    expect(String(csv.body).split('\r\n').slice(0, 3)).toEqual([
      'reason,churned_mrr,churned_customers',
      'Too expensive,100.00,1',
      ',40.00,1',
    ]);
  });

  it('every bad filter is a 422 on it, naming what is allowed', async () => {
    fixedClock('2026-03-31T12:00:00Z');
    const { token } = await newMerchant();
    const bad = async (q: string, field: string, message: string) => {
      const r = await api.get(`/metrics/mrr?${q}`, token);
      expect(r.status, q).toBe(422);
      expect(r.body.errors[field], q).toEqual([message]);
    };
    await bad(
      'plann=Pro',
      'plann',
      'The plann parameter is not supported. Allowed: start_date, end_date, interval, plan, billing_cycle, currency, metadata.<key>.',
    );
    await bad(
      'billing_cycle=weekly',
      'billing_cycle',
      'The selected billing cycle is invalid. Allowed: monthly, quarterly, semi-annual, yearly.',
    );
    await bad('currency=XYZ', 'currency', 'The currency field must be a valid ISO 4217 currency code.');
    await bad('plan=', 'plan', 'The plan field is required.');
    await bad('billing_cycle=monthly&currency=USD', 'currency', 'Give one segment filter at a time: plan, billing_cycle or currency.');
    const summary = await api.get('/metrics/summary?interval=day', token);
    expect(summary.status).toBe(422);
    expect(Object.keys(summary.body.errors)).toEqual(['interval']);
    const cohorts = await api.get('/metrics/cohorts?currency=USD&billing_cycle=monthly', token);
    expect(cohorts.status).toBe(422);
  });
});
