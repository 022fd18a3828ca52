import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';

/** Every metrics read and list answers `Accept: text/csv` with the same figures as its JSON `data`. */
const api = useApi();
afterEach(() => resetClock());
const CSV = { accept: 'text/csv' };
const rows = (text: string) => parse(text, { bom: true }) as string[][];
/** A JSON item as its CSV row would read it back: null empty, objects as JSON text, everything else as text. */
const asCells = (item: Record<string, unknown>, columns: string[]) =>
  columns.map((c) => (item[c] === null ? '' : typeof item[c] === 'object' ? JSON.stringify(item[c]) : String(item[c])));

const seed = async () => {
  const clock = fixedClock('2025-01-10T09:00:00Z');
  const { token } = await newMerchant();
  const a = (await api.post('/customers', token, { email: 'a@csv.test', name: '=cmd|calc', metadata: { tier: 'gold' } })).body.data;
  const b = (await api.post('/customers', token, { email: 'b@csv.test', name: 'Wang, "B"' })).body.data;
  const sub = (await api.post('/subscriptions', token, { customer_id: a.id, plan_name: 'Pro', mrr: '100', billing_cycle: 'monthly' })).body
    .data;
  clock.set('2025-02-10T09:00:00Z');
  await api.post('/subscriptions', token, { customer_id: b.id, plan_name: 'Basic', mrr: '40', billing_cycle: 'monthly' });
  await api.put(`/subscriptions/${sub.id}`, token, { mrr: '70' });
  await api.post('/orders', token, { order_no: 'CSV-1', amount: '12.50', customer_email: 'a@csv.test', status: 'paid' });
  clock.set('2025-03-20T09:00:00Z');
  return token;
};

describe('CSV answers (Accept: text/csv)', () => {
  it('metrics: the series, the summary and the cohorts carry the JSON figures, a header row first', async () => {
    const token = await seed();
    for (const path of [
      '/metrics/mrr?start_date=2025-01-01&end_date=2025-03-20&interval=month',
      '/metrics/mrr?start_date=2025-01-01&end_date=2025-03-20&interval=week',
      '/metrics/summary',
    ]) {
      const json = await api.get(path, token);
      const csv = await api.get(path, token, CSV);
      expect(csv.status, path).toBe(200);
      expect(csv.headers.get('content-type'), path).toBe('text/csv; charset=utf-8');
      const [header, ...body] = rows(csv.body as string);
      const items = (Array.isArray(json.body.data) ? json.body.data : [json.body.data]) as Record<string, unknown>[];
      expect(header, path).toEqual(Object.keys(items[0]));
      expect(body, path).toEqual(items.map((i) => asCells(i, header)));
    }
    const cohorts = await api.get('/metrics/cohorts?start_month=2025-01&end_month=2025-03', token);
    const [header, ...body] = rows((await api.get('/metrics/cohorts?start_month=2025-01&end_month=2025-03', token, CSV)).body as string);
    expect(header).toEqual([
      'cohort',
      'customers',
      'mrr',
      'retention.month',
      'retention.customers',
      'retention.mrr',
      'retention.customer_retention',
      'retention.mrr_retention',
    ]);
    const expected = (
      cohorts.body.data as { cohort: string; customers: number; mrr: string; retention: Record<string, unknown>[] }[]
    ).flatMap((c) =>
      c.retention.length
        ? c.retention.map((r) => [
            c.cohort,
            String(c.customers),
            c.mrr,
            ...asCells(r, ['month', 'customers', 'mrr', 'customer_retention', 'mrr_retention']),
          ])
        : [[c.cohort, String(c.customers), c.mrr, '', '', '', '', '']],
    );
    expect(body).toEqual(expected);
  });

  it('lists: one row per item of the page, paging in headers, formulas defused and quoting kept', async () => {
    const token = await seed();
    const json = await api.get('/customers?per_page=1', token);
    const csv = await api.get('/customers?per_page=1', token, CSV);
    expect(csv.headers.get('x-total-count')).toBe(String(json.body.meta.total));
    expect(csv.headers.get('x-next-cursor')).toBe(json.body.meta.next_cursor);
    const [header, row] = rows(csv.body as string);
    expect(header).toContain('email');
    expect(row).toEqual(asCells(json.body.data[0], header).map((v) => (v.startsWith('=') ? `'${v}` : v)));
    const all = rows((await api.get('/customers', token, CSV)).body as string);
    expect(all.map((r) => r[header.indexOf('name')])).toEqual(expect.arrayContaining(["'=cmd|calc", 'Wang, "B"']));
    const endpoint = (await api.post('/webhook-endpoints', token, { url: 'http://127.0.0.1:9/hook', events: ['*'] })).body.data;
    expect(endpoint?.id).toBeDefined();
    for (const path of [
      '/orders',
      '/orders/stats',
      '/subscriptions',
      '/subscriptions/events',
      '/activity',
      '/webhook-endpoints',
      `/webhook-endpoints/${endpoint?.id}/deliveries`,
    ]) {
      const r = await api.get(path, token, CSV);
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-type'), path).toBe('text/csv; charset=utf-8');
      const [h, ...items] = rows(r.body as string);
      const data = (await api.get(path, token)).body.data;
      expect(h.length, path).toBeGreaterThan(0);
      expect(items.length, path).toBe(Array.isArray(data) ? data.length : 1);
    }
  });

  it('JSON unless CSV is preferred; errors and other routes stay JSON', async () => {
    const token = await seed();
    expect((await api.get('/metrics/summary', token)).headers.get('content-type')).toBe('application/json');
    expect((await api.get('/metrics/summary', token, { accept: 'text/csv;q=0.5, application/json' })).headers.get('content-type')).toBe(
      'application/json',
    );
    expect((await api.get('/metrics/summary', token, { accept: 'application/json;q=0.1, text/csv' })).headers.get('content-type')).toBe(
      'text/csv; charset=utf-8',
    );
    expect((await api.get('/metrics/summary', token, { accept: 'text/html' })).headers.get('content-type')).toBe('application/json');
    const refused = await api.get('/metrics/mrr?interval=fortnight', token, CSV);
    expect(refused.status).toBe(422);
    expect(refused.headers.get('content-type')).toBe('application/json');
    expect(refused.body.errors.interval[0]).toContain('Allowed: day, week, month, quarter, year');
    const one = await api.get('/orders/CSV-1', token, CSV);
    expect(one.status).toBe(200);
    expect(one.headers.get('content-type')).toBe('application/json');
  });
});
