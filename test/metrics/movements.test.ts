import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, ok, useApi } from '../support/api.ts';
import { backofficeJwt } from '../backoffice/support.ts';

/** GET /metrics/movements (docs/metrics.md): the customers behind the movements of a range, the drill-down of a bar. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const api = useApi();
afterEach(() => resetClock());

const TYPES = ['new', 'expansion', 'contraction', 'churn', 'reactivation'] as const;

/** Three customers: new in January, an expansion and two new in February with a pause, a cancellation in March. */
const history = async () => {
  fixedClock('2026-03-10T12:00:00Z');
  const merchant = await newMerchant();
  const { token } = merchant;
  const customer = async (email: string) => (await ok(api.post('/customers', token, { email }), 201)).data.id as number;
  const subscribe = async (customerId: number, mrr: string, startedAt: string) =>
    (
      await ok(
        api.post('/subscriptions', token, {
          customer_id: customerId,
          plan_name: 'Pro',
          billing_cycle: 'monthly',
          mrr,
          started_at: startedAt,
        }),
        201,
      )
    ).data.id as number;
  const [c1, c2, c3] = [await customer('c1@mv.test'), await customer('c2@mv.test'), await customer('c3@mv.test')];
  const s1 = await subscribe(c1, '100', '2026-01-05T09:00:00Z');
  await ok(api.put(`/subscriptions/${s1}`, token, { mrr: '150', effective_at: '2026-02-10T09:00:00Z' }));
  await subscribe(c2, '200', '2026-02-03T09:00:00Z');
  const s3 = await subscribe(c3, '80', '2026-02-20T09:00:00Z');
  await ok(api.put(`/subscriptions/${s3}/pause`, token, { paused_at: '2026-02-25T09:00:00Z' }));
  await ok(api.put(`/subscriptions/${s1}/cancel`, token, { cancelled_at: '2026-03-02T09:00:00Z' }));
  return { ...merchant, c1, c2, c3, s1, s3 };
};

describe('GET /metrics/movements', () => {
  it('lists the customers behind each movement, newest first, with the subscription behind it', async () => {
    const { token, c1, c2, c3, s1, s3 } = await history();
    const feb = await ok(api.get('/metrics/movements?start_date=2026-02-01&end_date=2026-02-28', token));
    expect(feb.data.map((r: any) => [r.customer_id, r.date, r.type, r.amount, r.mrr_before, r.mrr_after])).toEqual([
      [c3, '2026-02-25T09:00:00Z', 'churn', '-80.00', '80.00', '0.00'],
      [c3, '2026-02-20T09:00:00Z', 'new', '80.00', '0.00', '80.00'],
      [c1, '2026-02-10T09:00:00Z', 'expansion', '50.00', '100.00', '150.00'],
      [c2, '2026-02-03T09:00:00Z', 'new', '200.00', '0.00', '200.00'],
    ]);
    expect(feb.data[0]).toMatchObject({ subscription_id: s3, order_no: null });
    expect(feb.data[2]).toMatchObject({ subscription_id: s1 });
    expect(feb.meta).toMatchObject({ total: 4, next_cursor: null });
    const newOnes = await ok(api.get('/metrics/movements?start_date=2026-02-01&end_date=2026-02-28&type=new', token));
    expect(newOnes.data.map((r: any) => r.customer_id)).toEqual([c3, c2]);
  });

  it('the rows of a type in a bucket add up to that bucket of GET /metrics/mrr', async () => {
    const { token } = await history();
    const series = await ok(api.get('/metrics/mrr?start_date=2026-01-01&end_date=2026-03-10&interval=month', token));
    for (const entry of series.data) {
      const end =
        entry.date.slice(0, 7) === '2026-03' ? '2026-03-10' : `${entry.date.slice(0, 7)}-${entry.date.slice(5, 7) === '02' ? '28' : '31'}`;
      for (const type of TYPES) {
        const rows = await ok(api.get(`/metrics/movements?start_date=${entry.date}&end_date=${end}&type=${type}`, token));
        const sum = rows.data.reduce((s: number, r: any) => s + Math.round(Number(r.amount) * 100), 0);
        expect((sum / 100).toFixed(2), `${entry.date} ${type}`).toBe(Number(entry[type]).toFixed(2));
      }
    }
  });

  it("pages by number and by cursor; days are the merchant's time zone's", async () => {
    const { token, merchantId, c1 } = await history();
    const first = await ok(api.get('/metrics/movements?start_date=2026-01-01&end_date=2026-03-10&per_page=2', token));
    expect(first.meta).toMatchObject({ total: 6, per_page: 2 });
    const rest = [];
    for (let cursor = first.meta.next_cursor; cursor; ) {
      const page = await ok(
        api.get(`/metrics/movements?start_date=2026-01-01&end_date=2026-03-10&per_page=2&cursor=${encodeURIComponent(cursor)}`, token),
      );
      rest.push(...page.data);
      cursor = page.meta.next_cursor;
    }
    const all = await ok(api.get('/metrics/movements?start_date=2026-01-01&end_date=2026-03-10&per_page=50', token));
    expect([...first.data, ...rest]).toEqual(all.data);
    expect(all.data.at(-1)).toMatchObject({ customer_id: c1, type: 'new', date: '2026-01-05T09:00:00Z' });
    // Each row names its customer (one BatchGetItem a page), as the dashboard shows it.
    for (const row of all.data) expect(row.customer_email, JSON.stringify(row)).toMatch(/@/);
    // 5 January 09:00 UTC is 4 January in Honolulu (UTC−10).
    await ok(
      api.request('PUT', '/settings', {
        headers: { authorization: `Bearer ${await backofficeJwt(merchantId, 'admin')}` },
        body: { timezone: 'Pacific/Honolulu' },
      }),
    );
    const jan4 = await ok(api.get('/metrics/movements?start_date=2026-01-04&end_date=2026-01-04', token));
    expect(jan4.data.map((r: any) => [r.customer_id, r.type])).toEqual([[c1, 'new']]);
    expect((await ok(api.get('/metrics/movements?start_date=2026-01-05&end_date=2026-01-05', token))).data).toEqual([]);
  });

  it('refuses a bad type, range or page (422 naming what it takes); answers CSV', async () => {
    const { token } = await history();
    const bad = await api.get('/metrics/movements?type=upgrade', token);
    expect(bad.status).toBe(422);
    expect(bad.body.errors.type).toEqual(['The selected type is invalid. Allowed: new, expansion, contraction, churn, reactivation.']);
    expect((await api.get('/metrics/movements?start_date=2026-03-01&end_date=2026-02-01', token)).status).toBe(422);
    expect((await api.get('/metrics/movements?end_date=2026-04-01', token)).status).toBe(422);
    expect((await api.get('/metrics/movements?per_page=0', token)).status).toBe(422);
    const csv = await api.get('/metrics/movements?start_date=2026-02-01&end_date=2026-02-28', token, { accept: 'text/csv' });
    expect(csv.status).toBe(200);
    const lines = String(csv.body).trim().split(/\r?\n/);
    expect(lines[0]).toBe('date,type,amount,mrr_before,mrr_after,subscription_id,order_no,customer_id,customer_email,customer_name');
    expect(lines).toHaveLength(5);
  });

  it('costs 3 requests, one BatchGetItem per 100 customers, and one naming the customers of a page with rows', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const counts: number[] = [];
    for (const n of [3, 150]) {
      const { token } = await newMerchant();
      for (let i = 0; i < n; i += 75) {
        const size = Math.min(75, n - i);
        const batch = Array.from({ length: size }, (_, j) => ({ email: `m${i + j}@cost.test` }));
        expect((await ok(api.post('/customers/batch', token, { customers: batch }))).data.results.created).toHaveLength(size);
      }
      const first = (await ok(api.get('/customers?per_page=1', token))).data[0].id;
      await ok(api.post('/subscriptions', token, { customer_id: first, plan_name: 'Pro', mrr: '10', billing_cycle: 'monthly' }), 201);
      const r = await api.counted('GET', '/metrics/movements', { token });
      expect(r.res.status).toBe(200);
      expect(r.res.body.data).toHaveLength(1);
      counts.push(r.requests);
    }
    expect(counts).toEqual([3 + 1 + 1, 3 + 2 + 1]);
  });
});
