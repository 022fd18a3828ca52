import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { tallied } from '#lib/db/client';
import { checkScheduledCancel } from '#lib/subscriptions/schedule';
import { rebuildMerchantAggregates } from '#lib/metrics';
import { repairCustomer } from '#lib/customers/repair';
import { backofficeJwt } from '../backoffice/support.ts';
import { outboxEvents } from '../orders/helpers.ts';
import { newMerchant, useApi } from '../support/api.ts';

/**
 * Renewals of recurring orders (docs/metrics.md, "Renewals"), through the API: a renewal a few days
 * late continues the line (past due over the gap, no churn, no reactivation); one that never comes
 * churns at the end of the last paid period once the grace has run out, restated by the scheduler.
 */
const api = useApi();
afterEach(() => resetClock());

type Point = Record<string, string | number | null>;
const months = async (token: string, from: string, to: string): Promise<Point[]> => {
  const r = await api.get(`/metrics/mrr?start_date=${from}&end_date=${to}&interval=month`, token);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
};
const order = (no: string, paid_at: string, amount = '300', extra: Record<string, unknown> = {}) => ({
  order_no: no,
  amount,
  currency: 'TWD',
  customer_email: 'renew@example.test',
  status: 'paid',
  billing_cycle: 'monthly',
  paid_at,
  ...extra,
});
/** Six monthly orders, each paid 3 days after the period before it ended (1 Jan, 4 Feb, 7 Mar, …). */
const LATE = ['2026-01-01', '2026-02-04', '2026-03-07', '2026-04-10', '2026-05-13', '2026-06-16'].map((d, i) =>
  order(`R${i + 1}`, `${d}T00:00:00Z`),
);
const sum = (pts: Point[], field: string) => pts.reduce((t, p) => t + Number(p[field]), 0);

describe('renewals of recurring orders', () => {
  it('monthly orders renewed 3 days late: no churn, no reactivation; the gaps are past due; a renewal at another amount moves it', async () => {
    fixedClock('2026-06-20T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    for (const o of LATE) expect((await api.post('/orders', token, o)).status).toBe(201);
    const series = await months(token, '2026-01-01', '2026-06-19');
    expect(series.map((p) => [p.date, p.mrr, p.new, p.churn, p.reactivation])).toEqual([
      ['2026-01-01', '300.00', '300.00', '0.00', '0.00'],
      ['2026-02-01', '300.00', '0.00', '0.00', '0.00'],
      ['2026-03-01', '300.00', '0.00', '0.00', '0.00'],
      ['2026-04-01', '300.00', '0.00', '0.00', '0.00'],
      ['2026-05-01', '300.00', '0.00', '0.00', '0.00'],
      ['2026-06-01', '300.00', '0.00', '0.00', '0.00'],
    ]);
    // Past due from the end of a period to the renewal: 2–4 February.
    const days = (await api.get('/metrics/mrr?start_date=2026-02-01&end_date=2026-02-04&interval=day', token)).body.data;
    expect(days.map((p: Point) => [p.date, p.mrr, p.past_due_mrr])).toEqual([
      ['2026-02-01', '300.00', '300.00'],
      ['2026-02-02', '300.00', '300.00'],
      ['2026-02-03', '300.00', '300.00'],
      ['2026-02-04', '300.00', '0.00'],
    ]);
    // One open wait per customer. R5, written last with a grace running, armed the check for its end
    // (07-13); R6 moved the grace later (08-15) and armed nothing: the open wait goes on to it.
    const graces = async () => (await outboxEvents(merchantId)).filter((e) => e.type === 'customer.renewal_grace');
    const [armed] = await graces();
    expect((await graces()).map((e) => e.data.object.grace_ends_at)).toEqual(['2026-07-13T00:00:00Z']);
    const check = {
      merchant_id: merchantId,
      customer_id: armed.data.object.customer_id,
      cancel_at: '2026-07-13T00:00:00Z',
      kind: 'renewal' as const,
    };
    fixedClock('2026-07-13T00:00:01Z');
    expect(await checkScheduledCancel(check)).toEqual({ due: false, wake_at: '2026-08-15T00:00:01Z', far: false });
    // A renewal at 450, 3 days late again: an expansion on the day it is paid; it arms nothing (the wait is open until 08-15).
    fixedClock('2026-07-22T00:00:00Z');
    expect((await api.post('/orders', token, order('R7', '2026-07-19T00:00:00Z', '450'))).status).toBe(201);
    const july = await months(token, '2026-07-01', '2026-07-21');
    expect(july[0]).toMatchObject({ mrr: '450.00', expansion: '150.00', churn: '0.00', reactivation: '0.00', past_due_mrr: '0.00' });
    expect((await api.get('/metrics/summary', token)).body.data).toMatchObject({ current_mrr: '450.00', active_customers: 1 });
    fixedClock('2026-08-15T00:00:01Z');
    expect(await checkScheduledCancel(check)).toEqual({ due: false, wake_at: '2026-09-18T00:00:01Z', far: false });
    // The next renewal (09-01, within the grace of R7's month) arms nothing either: the wait is open until 09-18.
    fixedClock('2026-09-02T00:00:00Z');
    expect((await api.post('/orders', token, order('R8', '2026-09-01T00:00:00Z', '450'))).status).toBe(201);
    expect(await graces()).toHaveLength(1);
  });

  it('a renewal that never comes: past due while the grace runs, then churn at the end of the last paid period, restated by the scheduler', async () => {
    const clock = fixedClock('2026-02-10T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    expect((await api.post('/orders', token, order('N1', '2026-01-01T00:00:00Z'))).status).toBe(201);
    // Its period ended on 1 February: within the grace it still counts, as past due.
    expect((await months(token, '2026-02-01', '2026-02-09'))[0]).toMatchObject({ mrr: '300.00', churn: '0.00', past_due_mrr: '300.00' });
    // The write armed the scheduler for the grace's end (an internal event, never a webhook).
    const armed = (await outboxEvents(merchantId)).filter((e) => e.type === 'customer.renewal_grace');
    expect(armed.map((e) => e.data.object.grace_ends_at)).toEqual(['2026-03-03T00:00:00Z']);
    const check = {
      merchant_id: merchantId,
      customer_id: armed[0].data.object.customer_id,
      cancel_at: '2026-03-03T00:00:00Z',
      kind: 'renewal' as const,
    };
    // Before the end the check waits (to a second after it); at the end the renewal may still come.
    expect(await checkScheduledCancel(check)).toEqual({ due: false, wake_at: '2026-03-03T00:00:01Z', far: false });
    clock.set('2026-03-03T00:00:00Z');
    expect(await checkScheduledCancel(check)).toEqual({ due: false, wake_at: '2026-03-03T00:00:01Z', far: false });
    expect((await months(token, '2026-02-01', '2026-03-02'))[0]).toMatchObject({ mrr: '300.00', churn: '0.00' });
    clock.set('2026-03-03T00:00:01Z');
    // Its budget (docs/benchmarks.md): the merchant, the timeline, one transaction.
    const settled = await tallied(() => checkScheduledCancel(check));
    expect(settled.result).toEqual({ due: true, applied: true });
    console.info(`[budget] scheduler: a renewal grace run out: ${settled.tally.total} requests (budget ≤ 3)`);
    expect(settled.tally.total).toBeLessThanOrEqual(3);
    // Restated: churn on 1 February, nothing past due any more, and February ends at 0.
    expect(await months(token, '2026-01-01', '2026-03-02')).toMatchObject([
      { mrr: '300.00', churn: '0.00' },
      { mrr: '0.00', churn: '-300.00', voluntary_churn: '-300.00', delinquent_churn: '0.00', past_due_mrr: '0.00' },
      { mrr: '0.00', churn: '0.00' },
    ]);
    // Applied once: the check again finds nothing to do.
    expect(await checkScheduledCancel(check)).toEqual({ due: true, applied: false });
    // A renewal after the grace is a new start: reactivation when it is paid.
    expect((await api.post('/orders', token, order('N2', '2026-03-03T00:00:01Z'))).status).toBe(201);
    expect((await months(token, '2026-03-01', '2026-03-03'))[0]).toMatchObject({ mrr: '300.00', reactivation: '300.00' });
  });

  it('whatever order history arrives in, and as a batch import, the figures are the same', async () => {
    fixedClock('2026-06-20T00:00:00Z');
    const forward = await newMerchant();
    for (const o of LATE) expect((await api.post('/orders', forward.token, o)).status).toBe(201);
    const backward = await newMerchant();
    for (const o of [...LATE].reverse()) expect((await api.post('/orders', backward.token, o)).status).toBe(201);
    const imported = await newMerchant();
    const batch = await api.post('/orders/batch', imported.token, { orders: [LATE[3], LATE[0], LATE[5], LATE[1], LATE[4], LATE[2]] });
    expect(batch.status, JSON.stringify(batch.body)).toBeLessThan(300);
    const want = await months(forward.token, '2026-01-01', '2026-06-19');
    expect(await months(backward.token, '2026-01-01', '2026-06-19')).toEqual(want);
    expect(await months(imported.token, '2026-01-01', '2026-06-19')).toEqual(want);
    // The import armed the scheduler for the last order's grace (16 July + 30 days), once.
    const armed = (await outboxEvents(imported.merchantId)).filter((e) => e.type === 'customer.renewal_grace');
    expect(armed.map((e) => e.data.object.grace_ends_at)).toEqual(['2026-08-15T00:00:00Z']);
    // Refunding a renewal takes it out of the chain: the gap before the next one is past the grace.
    expect((await api.patch('/orders/R3', forward.token, { status: 'refunded' })).status).toBe(200);
    const refunded = await months(forward.token, '2026-01-01', '2026-06-19');
    expect(refunded.map((p) => [p.date, p.churn, p.reactivation])).toEqual([
      ['2026-01-01', '0.00', '0.00'],
      ['2026-02-01', '0.00', '0.00'],
      ['2026-03-01', '-300.00', '0.00'],
      ['2026-04-01', '0.00', '300.00'],
      ['2026-05-01', '0.00', '0.00'],
      ['2026-06-01', '0.00', '0.00'],
    ]);
  });

  it('ops metrics rebuild finds nothing to correct where renewals are settled, and settles a grace that ran out unsettled', async () => {
    const clock = fixedClock('2026-02-10T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    for (const o of LATE.slice(0, 2)) expect((await api.post('/orders', token, o)).status).toBe(201);
    expect(
      (await api.post('/orders', token, order('L1', '2026-01-05T00:00:00Z', '90', { customer_email: 'lapse@example.test' }))).status,
    ).toBe(201);
    const settledBefore = await months(token, '2026-01-01', '2026-02-09');
    expect(await rebuildMerchantAggregates(merchantId, repairCustomer)).toMatchObject({ aggregates_corrected: 0, timelines_rederived: 0 });
    expect(await months(token, '2026-01-01', '2026-02-09')).toEqual(settledBefore);
    // L1's month ended on 02-05; its grace ran out on 03-07 and no scheduler ran: the rebuild settles it
    // (R2's month ended on 03-04: its grace still runs, past due).
    clock.set('2026-03-08T00:00:00Z');
    expect(await rebuildMerchantAggregates(merchantId, repairCustomer)).toMatchObject({ timelines_rederived: 1 });
    const after = await months(token, '2026-02-01', '2026-03-07');
    expect(after.map((p) => [p.date, p.mrr, p.churn, p.past_due_mrr])).toEqual([
      ['2026-02-01', '300.00', '-90.00', '0.00'],
      ['2026-03-01', '300.00', '0.00', '300.00'],
    ]);
  });

  it('delinquency_days is the grace: a change recounts every renewal of history', async () => {
    fixedClock('2026-06-20T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    // Renewed 20 days late: within 30 days, not within 10.
    for (const o of [order('D1', '2026-01-01T00:00:00Z'), order('D2', '2026-02-21T00:00:00Z'), order('D3', '2026-03-21T00:00:00Z')])
      expect((await api.post('/orders', token, o)).status).toBe(201);
    const before = await months(token, '2026-01-01', '2026-03-31');
    expect(sum(before, 'churn')).toBe(0);
    expect(sum(before, 'reactivation')).toBe(0);
    const admin = { authorization: `Bearer ${await backofficeJwt(merchantId, 'admin')}` };
    const changed = await api.request('PUT', '/settings', { headers: admin, body: { delinquency_days: 10 } });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.data).toMatchObject({ delinquency_days: 10 });
    const after = await months(token, '2026-01-01', '2026-03-31');
    expect(after.map((p) => [p.date, p.mrr, p.churn, p.reactivation])).toEqual([
      ['2026-01-01', '300.00', '0.00', '0.00'],
      ['2026-02-01', '300.00', '-300.00', '300.00'],
      ['2026-03-01', '300.00', '0.00', '0.00'],
    ]);
    expect((await api.get('/settings', token)).body.data).toMatchObject({ delinquency_days: 10, recount: { status: 'done' } });
  });
});
