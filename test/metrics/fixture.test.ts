import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { runRenewalChecks } from '../support/renewals.ts';
import { newMerchant, ok, useApi } from '../support/api.ts';

/**
 * The scripted merchant of docs/metrics.md ("Worked example"): every figure below is worked
 * out by hand from the history (reporting currency TWD).
 *
 * | when (2025, UTC)  | write                                                         | movement (customer)                 |
 * |-------------------|---------------------------------------------------------------|-------------------------------------|
 * | 01-10             | A subscribes 100                                              | new +100 (A) → after the import: reactivation |
 * | 01-20             | B subscribes 200                                              | new +200 (B)                        |
 * | 02-05             | A upgrades to 150                                             | expansion +50                       |
 * | 02-15             | B downgrades to 120                                           | contraction −80                     |
 * | 03-01 / 03-20     | A pauses / resumes                                            | churn −150 / reactivation +150      |
 * | 04-10             | B cancels                                                     | churn −120, customer churn (B)      |
 * | 05-05             | B's subscription reactivated                                  | reactivation +120                   |
 * | 05-10             | C (new customer) pays a quarterly order of 300 TWD            | new +100; churn −100 on 08-10 (its cycle ends), once its 30-day renewal grace ran out (09-09) |
 * | 06-01 / 06-15     | D pays a yearly order of 1200 TWD / it is refunded            | none: a refunded order never counted |
 * | 06-20             | G imports a monthly USD order and a one-time TWD order (batch)| none (another currency; one-time); the USD order unconverted until its grace ran out (08-19) |
 * | 07-01 / 07-20     | E subscribes 50 / cancels back-dated to 07-05                 | new +50 / churn −50 on 07-05, customer churn (E) |
 * | 07-25             | A's history imported: 0 → 30 on 2024-12-01, 30 → 0 on 2024-12-31 | new +30, churn −30 (Dec 2024), customer churn (A); A's 01-10 becomes a reactivation |
 */
const api = useApi();
let token = '';
let merchant = '';
const ids: Record<string, number> = {};

const series = async (query: string) => ok(api.get(`/metrics/mrr?${query}`, token));

/**
 * One point's rates, worked by hand: arpa at its end; customer churn, MRR churn, net and gross MRR
 * retention against the levels just before it (null on a zero base).
 */
type Rates = [
  arpa: string | null,
  customerChurn: number | null,
  mrrChurn: number | null,
  netRetention: number | null,
  grossRetention: number | null,
];
const entry = (
  date: string,
  mrr: string,
  moves: Partial<Record<'new' | 'expansion' | 'contraction' | 'churn' | 'reactivation', string>>,
  subs: number,
  customers: number,
  rates: Rates,
  /** G's monthly USD order (06-20 – 07-20) has no rate: left out, and said so. */
  unconverted: Record<string, string> = {},
) => {
  const m = { new: '0.00', expansion: '0.00', contraction: '0.00', churn: '0.00', reactivation: '0.00', ...moves };
  const net = Object.values(m).reduce((a, v) => a + Math.round(Number(v) * 100), 0) / 100;
  const [arpa, customer_churn_rate, mrr_churn_rate, net_mrr_retention, gross_mrr_retention] = rates;
  return {
    date,
    mrr,
    ...m,
    // No failed renewals here: all churn is voluntary, nothing past due.
    voluntary_churn: m.churn,
    delinquent_churn: '0.00',
    net_change: net.toFixed(2),
    past_due_mrr: '0.00',
    active_subscriptions: subs,
    active_customers: customers,
    arpa,
    customer_churn_rate,
    mrr_churn_rate,
    net_mrr_retention,
    gross_mrr_retention,
    unconverted,
  };
};
const G_USD = { USD: '99.00' };
/** Nothing before the point: every rate's base is 0. */
const noBase = (arpa: string | null): Rates => [arpa, null, null, null, null];

let janBeforeImport: any;

beforeAll(async () => {
  const clock = fixedClock('2025-01-10T09:00:00Z');
  ({ token, merchantId: merchant } = await newMerchant());
  for (const name of ['A', 'B', 'D', 'E']) {
    ids[name] = (await ok(api.post('/customers', token, { email: `${name.toLowerCase()}@fixture.test`, name }), 201)).data.id;
  }
  const subscribe = async (who: string, mrr: string) =>
    (await ok(api.post('/subscriptions', token, { customer_id: ids[who], plan_name: 'Plan', mrr, billing_cycle: 'monthly' }), 201)).data
      .id as number;
  const at = (iso: string) => clock.set(iso);

  const subA = await subscribe('A', '100');
  at('2025-01-20T09:00:00Z');
  const subB = await subscribe('B', '200');
  at('2025-02-05T09:00:00Z');
  await ok(api.put(`/subscriptions/${subA}`, token, { mrr: '150' }));
  at('2025-02-15T09:00:00Z');
  await ok(api.put(`/subscriptions/${subB}`, token, { mrr: '120' }));
  at('2025-03-01T09:00:00Z');
  await ok(api.put(`/subscriptions/${subA}/pause`, token, {}));
  at('2025-03-20T09:00:00Z');
  await ok(api.put(`/subscriptions/${subA}/reactivate`, token, {}));
  at('2025-04-10T09:00:00Z');
  await ok(api.put(`/subscriptions/${subB}/cancel`, token, {}));
  at('2025-05-05T09:00:00Z');
  await ok(api.put(`/subscriptions/${subB}/reactivate`, token, {}));
  at('2025-05-10T09:00:00Z');
  const c = await ok(
    api.post('/orders', token, {
      order_no: 'C-Q1',
      amount: '300',
      customer_email: 'c@fixture.test',
      customer_name: 'C',
      status: 'paid',
      billing_cycle: 'quarterly',
    }),
    201,
  );
  ids.C = c.data.customer_id;
  at('2025-06-01T09:00:00Z');
  await ok(
    api.post('/orders', token, {
      order_no: 'D-Y1',
      amount: '1200',
      customer_email: 'd@fixture.test',
      status: 'paid',
      billing_cycle: 'yearly',
    }),
    201,
  );
  at('2025-06-15T09:00:00Z');
  await ok(api.patch('/orders/D-Y1', token, { status: 'refunded' }));
  at('2025-06-20T09:00:00Z');
  const batch = await ok(
    api.post('/orders/batch', token, {
      orders: [
        { order_no: 'G-USD', amount: '99', currency: 'USD', customer_email: 'g@fixture.test', status: 'paid', billing_cycle: 'monthly' },
        { order_no: 'G-ONCE', amount: '500', customer_email: 'g@fixture.test', status: 'paid', billing_cycle: 'one-time' },
      ],
    }),
  );
  expect(batch.data.created).toBe(2);
  at('2025-07-01T09:00:00Z');
  const subE = await subscribe('E', '50');
  at('2025-07-20T09:00:00Z');
  await ok(api.put(`/subscriptions/${subE}/cancel`, token, { cancelled_at: '2025-07-05T00:00:00Z' }));
  janBeforeImport = (await series('start_date=2025-01-01&end_date=2025-01-31')).data[0];
  at('2025-07-25T09:00:00Z');
  await ok(
    api.post('/subscriptions/events', token, {
      customer_id: ids.A,
      event_type: 'created',
      old_amount: '0',
      new_amount: '30',
      occurred_at: '2024-12-01T00:00:00Z',
    }),
    201,
  );
  await ok(
    api.post('/subscriptions/events', token, {
      customer_id: ids.A,
      event_type: 'cancel',
      old_amount: '30',
      new_amount: '0',
      occurred_at: '2024-12-31T00:00:00Z',
    }),
    201,
  );
});
/**
 * The reading day of each test below: series reaching past July 25 are read once August and C's
 * renewal grace have passed (no projections); the scheduler has settled every grace run out by then.
 */
const readOn = async (iso: string) => {
  fixedClock(iso);
  await runRenewalChecks(merchant);
};
afterAll(() => resetClock());

describe('the scripted merchant (figures worked by hand)', () => {
  it('monthly series Dec 2024 – Aug 2025: every movement per change, never netted; the end of an order cycle included', async () => {
    await readOn('2025-09-10T09:00:00Z');
    const r = await series('start_date=2024-12-01&end_date=2025-08-31&interval=month');
    expect(r.data).toEqual([
      entry('2024-12-01', '0.00', { new: '30.00', churn: '-30.00' }, 0, 0, noBase(null)),
      entry('2025-01-01', '300.00', { new: '200.00', reactivation: '100.00' }, 2, 2, noBase('150.00')),
      entry('2025-02-01', '270.00', { expansion: '50.00', contraction: '-80.00' }, 2, 2, ['135.00', 0, 26.67, 90, 73.33]),
      entry('2025-03-01', '270.00', { churn: '-150.00', reactivation: '150.00' }, 2, 2, ['135.00', 0, 55.56, 44.44, 44.44]), // a pause is MRR churn, not customer churn
      entry('2025-04-01', '150.00', { churn: '-120.00' }, 1, 1, ['150.00', 50, 44.44, 55.56, 55.56]),
      entry('2025-05-01', '370.00', { new: '100.00', reactivation: '120.00' }, 2, 3, ['123.33', 0, 0, 100, 100]),
      entry('2025-06-01', '370.00', {}, 2, 3, ['123.33', 0, 0, 100, 100], G_USD), // D's refunded order never counted
      entry('2025-07-01', '370.00', { new: '50.00', churn: '-50.00' }, 2, 3, ['123.33', 33.33, 13.51, 86.49, 86.49]),
      entry('2025-08-01', '270.00', { churn: '-100.00' }, 2, 2, ['135.00', 0, 27.03, 72.97, 72.97]),
    ]);
    // No MRR and no customers at the start: both rates have no base.
    expect(r.summary).toEqual({
      current_mrr: '270.00',
      arr: '3240.00',
      arpa: '135.00',
      customer_churn_rate: null,
      mrr_churn_rate: null,
      unconverted: {},
    });
  });

  it('quarterly and yearly series: calendar quarters and years, clamped to the range; rates against the level before each', async () => {
    await readOn('2025-09-10T09:00:00Z');
    const quarters = await series('start_date=2024-12-01&end_date=2025-08-31&interval=quarter');
    expect(quarters.data).toEqual([
      entry('2024-12-01', '0.00', { new: '30.00', churn: '-30.00' }, 0, 0, noBase(null)),
      entry(
        '2025-01-01',
        '270.00',
        { new: '200.00', expansion: '50.00', contraction: '-80.00', churn: '-150.00', reactivation: '250.00' },
        2,
        2,
        noBase('135.00'),
      ),
      entry(
        '2025-04-01',
        '370.00',
        { new: '100.00', churn: '-120.00', reactivation: '120.00' },
        2,
        3,
        ['123.33', 50, 44.44, 55.56, 55.56],
        G_USD,
      ),
      entry('2025-07-01', '270.00', { new: '50.00', churn: '-150.00' }, 2, 2, ['135.00', 33.33, 40.54, 59.46, 59.46]),
    ]);
    const years = await series('start_date=2024-12-01&end_date=2025-08-31&interval=year');
    expect(years.data).toEqual([
      entry('2024-12-01', '0.00', { new: '30.00', churn: '-30.00' }, 0, 0, noBase(null)),
      entry(
        '2025-01-01',
        '270.00',
        { new: '350.00', expansion: '50.00', contraction: '-80.00', churn: '-420.00', reactivation: '370.00' },
        2,
        2,
        noBase('135.00'),
      ),
    ]);
    // The range summary does not depend on the interval.
    expect(quarters.summary).toEqual(years.summary);
    expect(years.summary).toEqual((await series('start_date=2024-12-01&end_date=2025-08-31&interval=month')).summary);
  });

  it('the back-dated import reclassified January: A was new there before, a reactivation after', () => {
    expect(janBeforeImport).toEqual(entry('2025-01-01', '300.00', { new: '300.00' }, 2, 2, noBase('150.00')));
  });

  it('range summary Feb – Jul 2025: churn rates over the MRR and customers at its start', async () => {
    await readOn('2025-08-01T09:00:00Z');
    const r = await series('start_date=2025-02-01&end_date=2025-07-31');
    // Start: MRR 300, 2 customers. Churned customers: B (Apr) and E (Jul); A's pause is not a cancellation.
    // MRR churn: (150 + 120 + 50) churn + 80 contraction = 400 of 300 (D's refunded order never counted).
    expect(r.summary).toEqual({
      current_mrr: '370.00',
      arr: '4440.00',
      arpa: '123.33',
      customer_churn_rate: 100,
      mrr_churn_rate: 133.33,
      // G's USD month ended on 07-20 and is in its renewal grace until 08-19: it still counts, without a rate.
      unconverted: G_USD,
    });
    expect(r.data).toHaveLength(6);
  });

  it('daily and weekly series add up to the same movements', async () => {
    await readOn('2025-07-25T09:00:00Z');
    const daily = await series('start_date=2025-06-26&end_date=2025-07-25&interval=day');
    expect(daily.data).toHaveLength(30);
    const byDate = Object.fromEntries(daily.data.map((e: any) => [e.date, e]));
    expect(byDate['2025-07-01']).toEqual(entry('2025-07-01', '420.00', { new: '50.00' }, 3, 4, ['105.00', 0, 0, 100, 100], G_USD));
    expect(byDate['2025-07-05']).toEqual(entry('2025-07-05', '370.00', { churn: '-50.00' }, 2, 3, ['123.33', 25, 11.9, 88.1, 88.1], G_USD));
    // G's USD month ended on 07-20: in its renewal grace it still counts (past due), still without a rate.
    expect(byDate['2025-07-20'].unconverted).toEqual(G_USD);
    const weekly = await series('start_date=2025-06-26&end_date=2025-07-25&interval=week');
    // Thursday 06-26 (clamped start), then Mondays 06-30, 07-07, 07-14, 07-21.
    expect(weekly.data.map((e: any) => e.date)).toEqual(['2025-06-26', '2025-06-30', '2025-07-07', '2025-07-14', '2025-07-21']);
    expect(weekly.data[1]).toEqual(
      entry('2025-06-30', '370.00', { new: '50.00', churn: '-50.00' }, 2, 3, ['123.33', 33.33, 13.51, 86.49, 86.49], G_USD),
    );
    expect(weekly.summary).toEqual(daily.summary);
  });

  it('GET /metrics/summary on 2025-07-25: the last 30 days (06-26 … 07-25)', async () => {
    await readOn('2025-07-25T09:00:00Z');
    const s = await ok(api.get('/metrics/summary', token));
    // 30 days ago: MRR 370, customers A, B, C. In the window: E new +50 and churned −50 (a cancellation).
    expect(s.data).toEqual({
      current_mrr: '370.00',
      arr: '4440.00',
      arpa: '123.33',
      active_subscriptions: 2,
      active_customers: 3,
      customer_churn_rate: 33.33,
      mrr_churn_rate: 13.51,
      net_mrr_churn_rate: 13.51,
      quick_ratio: 1,
      ltv: '370.00',
      unconverted: G_USD, // G's USD order in its renewal grace
    });
  });

  it('cohorts Dec 2024 – Aug 2025 (retention up to the current month, July)', async () => {
    await readOn('2025-07-25T09:00:00Z');
    const r = await ok(api.get('/metrics/cohorts?start_month=2024-12&end_month=2025-08', token));
    const ret = (month: string, customers: number, mrr: string, cr: number | null, mr: number | null) => ({
      month,
      customers,
      mrr,
      customer_retention: cr,
      mrr_retention: mr,
    });
    const months = ['2025-01', '2025-02', '2025-03', '2025-04', '2025-05', '2025-06', '2025-07'];
    const empty = (cohort: string) => ({
      cohort,
      customers: 0,
      mrr: '0.00',
      retention: months.filter((m) => m >= cohort).map((m) => ret(m, 0, '0.00', null, null)),
    });
    expect(r.data).toEqual([
      // A cohort starts at 100 %: its members and their MRR right after joining (A: 30 on 2024-12-01).
      {
        cohort: '2024-12',
        customers: 1,
        mrr: '30.00',
        retention: [
          ret('2024-12', 1, '30.00', 100, 100),
          ret('2025-01', 1, '100.00', 100, 333.33),
          ...months.slice(1).map((m) => ret(m, 1, '150.00', 100, 500)),
        ],
      },
      {
        cohort: '2025-01',
        customers: 1,
        mrr: '200.00',
        retention: [
          ret('2025-01', 1, '200.00', 100, 100),
          ret('2025-02', 1, '120.00', 100, 60),
          ret('2025-03', 1, '120.00', 100, 60),
          ret('2025-04', 0, '0.00', 0, 0),
          ...['2025-05', '2025-06', '2025-07'].map((m) => ret(m, 1, '120.00', 100, 60)),
        ],
      },
      empty('2025-02'),
      empty('2025-03'),
      empty('2025-04'),
      {
        cohort: '2025-05',
        customers: 1,
        mrr: '100.00',
        retention: ['2025-05', '2025-06', '2025-07'].map((m) => ret(m, 1, '100.00', 100, 100)),
      },
      empty('2025-06'), // D's refunded order never counted: D never had MRR
      { cohort: '2025-07', customers: 1, mrr: '50.00', retention: [ret('2025-07', 1, '50.00', 100, 100)] }, // E joined with 50 (gone by the month's end)
      { cohort: '2025-08', customers: 0, mrr: '0.00', retention: [] },
    ]);
  });
});
