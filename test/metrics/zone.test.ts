import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, ok, useApi } from '../support/api.ts';
import { backofficeJwt } from '../backoffice/support.ts';

/**
 * Metrics in the merchant's reporting time zone (docs/settings.md, docs/metrics.md): every bucket is
 * the zone's days and months, a zone change moves what was written before from the next request on,
 * and a read costs what it costs in UTC.
 */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const api = useApi();
afterEach(() => resetClock());

const setZone = async (merchantId: string, timezone: string) =>
  ok(
    api.request('PUT', '/settings', {
      headers: { authorization: `Bearer ${await backofficeJwt(merchantId, 'admin')}` },
      body: { timezone },
    }),
  );

/** A merchant with one customer subscribed at 16:30 UTC on 31 January 2026 (1 February 00:30 in Taipei). */
const subscribed = async () => {
  const merchant = await newMerchant();
  const customer = (await ok(api.post('/customers', merchant.token, { email: 'z@zone.test', name: 'Z', metadata: { team: 'core' } }), 201))
    .data;
  await ok(
    api.post('/subscriptions', merchant.token, {
      customer_id: customer.id,
      plan_name: 'Pro',
      mrr: '100',
      billing_cycle: 'monthly',
      started_at: '2026-01-31T16:30:00Z',
    }),
    201,
  );
  return merchant;
};

/** The days and months the `new` movement lands on, and the cohort it joins. */
const whereIsNew = async (token: string, query = '') => {
  const days = await ok(api.get(`/metrics/mrr?start_date=2026-01-30&end_date=2026-02-02&interval=day${query}`, token));
  const months = await ok(api.get(`/metrics/mrr?start_date=2026-01-01&end_date=2026-02-28&interval=month${query}`, token));
  const cohorts = await ok(api.get(`/metrics/cohorts?start_month=2026-01&end_month=2026-02${query}`, token));
  return {
    day: days.data.find((e: { new: string }) => e.new !== '0.00')?.date,
    month: months.data.find((e: { new: string }) => e.new !== '0.00')?.date,
    cohort: cohorts.data.find((c: { customers: number }) => c.customers > 0)?.cohort,
  };
};

describe('metrics in the reporting time zone', () => {
  it('buckets follow the zone, and a change moves what came before from the next request on', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const { token, merchantId } = await subscribed();
    expect(await whereIsNew(token)).toEqual({ day: '2026-01-31', month: '2026-01-01', cohort: '2026-01' });
    await setZone(merchantId, 'Asia/Taipei');
    expect(await whereIsNew(token)).toEqual({ day: '2026-02-01', month: '2026-02-01', cohort: '2026-02' });
    // A segment read from the customers' timelines, and a stored segment, follow it too.
    expect(await whereIsNew(token, '&metadata.team=core')).toEqual({ day: '2026-02-01', month: '2026-02-01', cohort: '2026-02' });
    expect(await whereIsNew(token, '&plan=Pro')).toEqual({ day: '2026-02-01', month: '2026-02-01', cohort: '2026-02' });
    await setZone(merchantId, 'America/New_York');
    expect(await whereIsNew(token)).toEqual({ day: '2026-01-31', month: '2026-01-01', cohort: '2026-01' });
    // The level at the end of 31 January (New York) already holds it; in UTC it did too.
    const [jan31] = (await ok(api.get('/metrics/mrr?start_date=2026-01-31&end_date=2026-01-31&interval=day', token))).data;
    expect(jan31).toMatchObject({ mrr: '100.00', new: '100.00', active_customers: 1 });
  });

  it('a write after the change counts in the new zone; today and date-times are the zone’s', async () => {
    const clock = fixedClock('2026-03-31T20:00:00Z'); // 1 April 04:00 in Taipei
    const { token, merchantId } = await subscribed();
    await setZone(merchantId, 'Asia/Taipei');
    const [sub] = (await ok(api.get('/subscriptions', token))).data;
    await ok(api.put(`/subscriptions/${sub.id}`, token, { mrr: '150' }));
    // Today is 1 April in Taipei: a range may end on it, and the expansion is on it.
    const april = await ok(api.get('/metrics/mrr?start_date=2026-03-31&end_date=2026-04-01&interval=day', token));
    expect(april.data.map((e: { date: string; expansion: string }) => [e.date, e.expansion])).toEqual([
      ['2026-03-31', '0.00'],
      ['2026-04-01', '50.00'],
    ]);
    // A date-time names its day in the zone: 31 March 17:00 UTC is 1 April in Taipei.
    const byTime = await ok(
      api.get('/metrics/mrr?start_date=2026-03-31T17:00:00Z&end_date=2026-04-01T01:00:00%2B08:00&interval=day', token),
    );
    expect(byTime.data.map((e: { date: string }) => e.date)).toEqual(['2026-04-01']);
    clock.set('2026-03-31T12:00:00Z'); // still 31 March in Taipei
    const refused = await api.get('/metrics/mrr?start_date=2026-03-01&end_date=2026-04-01&interval=day', token);
    expect(refused.status).toBe(422);
  });

  it('a zone change amid concurrent writes: after its recount, the stored figures equal those computed from the timelines', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const { token, merchantId } = await newMerchant();
    const ids: number[] = [];
    for (let i = 0; i < 12; i++)
      ids.push((await ok(api.post('/customers', token, { email: `r${i}@zone.test`, metadata: { team: 'core' } }), 201)).data.id);
    // Subscriptions started near midnight in Taipei, created while the zone changes and its recount runs.
    const writes = ids.map((id, i) =>
      // Never held nor refused: each answers 201 at its first try.
      ok(
        api.post('/subscriptions', token, {
          customer_id: id,
          plan_name: 'Pro',
          billing_cycle: 'monthly',
          mrr: String(10 + i),
          started_at: `2026-0${1 + (i % 2)}-${String(10 + i).padStart(2, '0')}T${Math.floor(i / 2) % 2 ? '16:01' : '15:59'}:00Z`,
        }),
        201,
      ),
    );
    await Promise.all([...writes, setZone(merchantId, 'Asia/Taipei')]);
    const range = 'start_date=2026-01-01&end_date=2026-03-10&interval=day';
    const stored = await ok(api.get(`/metrics/mrr?${range}`, token));
    // The metadata segment (every customer matches) is computed from the timelines at read time, in the zone.
    const computed = await ok(api.get(`/metrics/mrr?${range}&metadata.team=core`, token));
    expect(stored.data).toEqual(computed.data);
    // 12 January 16:01 UTC is 13 January in Taipei; 10 January 15:59 UTC is still the 10th.
    const days = stored.data.filter((e: { new: string }) => e.new !== '0.00').map((e: { date: string }) => e.date);
    expect(days).toEqual(expect.arrayContaining(['2026-01-10', '2026-01-13']));
    expect(days).not.toContain('2026-01-12');
  });

  it('costs what it costs in UTC: the monthly series, the daily series and the summary', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const utc = await subscribed();
    const taipei = await subscribed();
    await setZone(taipei.merchantId, 'Asia/Taipei');
    const reads = [
      '/metrics/mrr?start_date=2024-04-01&end_date=2026-03-10&interval=month',
      '/metrics/mrr?start_date=2025-03-01&end_date=2026-03-10&interval=day',
      '/metrics/summary',
    ];
    for (const path of reads) {
      const [a, b] = [await api.counted('GET', path, { token: utc.token }), await api.counted('GET', path, { token: taipei.token })];
      expect(b.res.status, path).toBe(200);
      expect(b.requests, path).toBe(a.requests);
    }
  });
});
