/// <reference lib="dom" />
import { get } from 'node:http';
import { readFileSync } from 'node:fs';
import { parse as parseCsv } from 'csv-parse/sync';
import Decimal from 'decimal.js';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookReceiver } from '../../infra/local/webhook-receiver.ts';
import { newMerchant } from '../support/api.ts';
import { backofficeJwt } from '../backoffice/support.ts';
import { DASHBOARD_CSP } from '../../web/security-headers.ts';
import {
  axe,
  expectDefinitionsOnDemand,
  expectFigures,
  hasChromium,
  noSideScroll,
  PHONE,
  ready,
  shoot,
  today,
  useDashboard,
  type Viewport,
} from './browser.ts';

/**
 * The merchant dashboard end to end: the production bundle (built here with Vite), served by the
 * local server next to the real API over DynamoDB Local, in Debian's headless Chromium. Every figure
 * on screen is compared with the API's own answer fetched here with the merchant's token.
 * Screenshots (desktop and phone) and the axe reports go to test/artifacts/dashboard/
 * (test/web/browser.ts). The customers, subscriptions and webhook management views are in
 * dashboard-views.e2e.test.ts.
 */
const BUNDLE_BUDGET_GZIP = 250 * 1024;
const { api, bundle, origin: originOf, open: openAs, newPage, setSession } = useDashboard('test/web/dashboard.e2e.test.ts', 'web-dist');

describe('the dashboard bundle', () => {
  it(`stays under ${BUNDLE_BUDGET_GZIP / 1024} KB gzipped`, () => {
    console.log(`dashboard bundle: ${(bundle.gzipBytes / 1024).toFixed(1)} KB gzipped (built in ${bundle.buildMs} ms)`);
    expect(bundle.gzipBytes).toBeGreaterThan(0);
    expect(bundle.gzipBytes).toBeLessThanOrEqual(BUNDLE_BUDGET_GZIP);
  });
});

describe('the local server serves the dashboard beside the API', () => {
  it('the bundle with its security headers, config.json and the development session; nothing outside the bundle', async () => {
    const origin = api.base.replace(/\/v1$/, '');
    const page = await fetch(`${origin}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(await page.text())![1];
    expect((await fetch(`${origin}${script}`)).headers.get('cache-control')).toContain('immutable');
    expect(await (await fetch(`${origin}/config.json`)).json()).toEqual({
      apiBase: '/v1',
      auth: { kind: 'local', sessionUrl: '/dev/session' },
    });
    setSession('a.b.c');
    expect(await (await fetch(`${origin}/dev/session`)).json()).toEqual({ id_token: 'a.b.c' });
    // Asked under another site's name (DNS rebinding): nothing.
    const rebound = await new Promise<number>((done, fail) =>
      get(`${origin}/dev/session`, { headers: { host: 'attacker.example' } }, (res) => done(res.resume() && res.statusCode!)).on(
        'error',
        fail,
      ),
    );
    expect(rebound).toBe(404);
    for (const path of ['/%2e%2e/package.json', '/..%2fpackage.json', '/assets/missing.js', '/index.htm']) {
      const res = await fetch(`${origin}${path}`);
      expect(res.status, path).toBe(404);
      expect(await res.json(), path).toEqual({ message: 'Resource not found' });
    }
  });
});

const monthsAgo = (n: number, day = 1) => {
  const d = new Date();
  return `${new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - n, day, 12)).toISOString().slice(0, 19)}Z`;
};

describe.skipIf(!hasChromium)('the dashboard in Chromium', { timeout: 60_000 }, () => {
  let merchant: { merchantId: string; token: string };
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let origin = '';
  let paidTwd = new Decimal(0);

  const ok = async (res: Promise<{ status: number; body: any }>, status = 201) => {
    const r = await res;
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    return r.body.data;
  };

  beforeAll(async () => {
    origin = originOf();
    merchant = await newMerchant();
    const t = merchant.token;
    // Orders: 23 today in TWD (paid and pending), 2 paid in USD: three pages of ten (one batch request).
    const orders = Array.from({ length: 25 }, (_, i) => {
      const usd = i >= 23;
      const amount = usd
        ? '19.99'
        : `${100 + i * 7}.${String(i * 3)
            .padStart(2, '0')
            .slice(-2)}`;
      const status = usd || i % 3 !== 2 ? 'paid' : 'pending';
      if (!usd && status === 'paid') paidTwd = paidTwd.plus(amount);
      return {
        order_no: `E2E-${String(i).padStart(3, '0')}`,
        customer_email: `buyer${i % 4}@example.com`,
        customer_name: `Buyer ${i % 4}`,
        amount,
        currency: usd ? 'USD' : 'TWD',
        status,
      };
    });
    const batch = await ok(api.post('/orders/batch', t, { orders }), 200);
    expect(batch.created, JSON.stringify(batch.results.failed)).toBe(25);
    // Subscriptions over the last months: new, expansion, contraction, churn and a reactivation.
    const customers = [];
    for (let i = 0; i < 4; i++)
      customers.push(await ok(api.post('/customers', t, { email: `sub${i}@example.com`, name: `Subscriber ${i}` })));
    const subs = [];
    for (let i = 0; i < 4; i++) {
      subs.push(
        await ok(
          api.post('/subscriptions', t, {
            customer_id: customers[i].id,
            plan_name: 'Pro',
            mrr: `${(i + 1) * 500}`,
            billing_cycle: 'monthly',
            started_at: monthsAgo(8 - i * 2, 5),
          }),
        ),
      );
    }
    await ok(api.put(`/subscriptions/${subs[0].id}`, t, { mrr: '900', plan_name: 'Pro+' }), 200);
    await ok(api.put(`/subscriptions/${subs[1].id}`, t, { mrr: '600' }), 200);
    await ok(api.put(`/subscriptions/${subs[2].id}/cancel`, t, {}), 200);
    await ok(api.put(`/subscriptions/${subs[2].id}/reactivate`, t, {}), 200);
    await ok(api.put(`/subscriptions/${subs[3].id}/cancel`, t, {}), 200);
    const secrets: string[] = [];
    receiver = await startWebhookReceiver({ secrets });
    const endpoint = await ok(
      api.post('/webhook-endpoints', t, { url: receiver.url, events: ['order.paid'], description: 'e2e receiver' }),
    );
    secrets.push(endpoint.secret);
  }, 180_000);

  afterAll(async () => {
    await receiver?.close();
  });

  /** A fresh browser (own sessionStorage) signed in as `role` of the merchant, at a viewport. */
  const open = (role: 'admin' | 'user', viewport?: Viewport, hash = '') => openAs(merchant.merchantId, role, viewport, hash);

  it('overview: stats, currency switch, summary, MRR series per interval and cohorts equal the API', async () => {
    const { page, failures } = await open('admin');
    const t = merchant.token;
    await ready(page, 'stats');
    const twd = (await api.get('/orders/stats', t)).body.data;
    expect(twd.today_revenue).toBe(paidTwd.toFixed(2));
    await expectFigures(page, twd);
    await page.getByTestId('stats-currency').selectOption('USD');
    await page.locator('[data-currency="USD"]').waitFor();
    const usd = (await api.get('/orders/stats?currency=USD', t)).body.data;
    expect(usd.today_revenue).toBe('39.98');
    await expectFigures(page, usd);
    // Each figure's definition is behind its ⓘ button, and names what the figure counts now: USD only.
    const stats = await expectDefinitionsOnDemand(page, '[data-panel="stats"]');
    expect(stats.filter((f) => f.definition.includes('in USD only')).map((f) => f.id)).toEqual(['today_revenue', 'monthly_revenue']);

    await ready(page, 'summary');
    await expectFigures(page, (await api.get('/metrics/summary', t)).body.data);
    await expectDefinitionsOnDemand(page, '[data-panel="summary"]');

    await ready(page, 'mrr');
    const now = new Date();
    const start12 = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 11, 1)).toISOString().slice(0, 10);
    const monthly = (await api.get(`/metrics/mrr?interval=month&start_date=${start12}&end_date=${today()}`, t)).body;
    const rows = () =>
      page
        .locator('[data-testid="mrr-table"] tbody tr')
        .evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-date'), tr.getAttribute('data-mrr')]));
    expect(await rows()).toEqual(monthly.data.map((e: { date: string; mrr: string }) => [e.date, e.mrr]));
    await expectFigures(page, {
      range_mrr: monthly.summary.current_mrr,
      range_arr: monthly.summary.arr,
      range_mrr_churn: monthly.summary.mrr_churn_rate,
    });
    expect(monthly.data.some((e: { churn: string }) => e.churn !== '0.00')).toBe(true);
    expect(await page.locator('[data-testid="mrr-chart"] canvas').count()).toBeGreaterThan(0);
    expect(await page.getByTestId('mrr-chart').getAttribute('aria-label')).toContain('MRR from');

    await ready(page, 'cohorts');
    const cohorts = (await api.get('/metrics/cohorts', t)).body.data.filter((c: { customers: number }) => c.customers > 0);
    expect(await page.locator('[data-testid="cohorts"] tbody th').allTextContents()).toEqual(
      cohorts.map((c: { cohort: string }) => c.cohort),
    );
    await shoot(page, 'overview-desktop');
    await axe(page, 'overview');

    await page.getByTestId('mrr-interval').selectOption('week');
    await page.locator('[data-panel="mrr"][data-state="ready"] [data-interval="week"]').waitFor();
    const weekly = (await api.get(`/metrics/mrr?interval=week&start_date=${start12}&end_date=${today()}`, t)).body;
    expect(await rows()).toEqual(weekly.data.map((e: { date: string; mrr: string }) => [e.date, e.mrr]));
    await page.getByTestId('mrr-range').selectOption('90d');
    await page.locator('[data-panel="mrr"][data-state="ready"] [data-interval="week"][data-range="90d"]').waitFor();
    const start90 = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - 89)).toISOString().slice(0, 10);
    const recent = (await api.get(`/metrics/mrr?interval=week&start_date=${start90}&end_date=${today()}`, t)).body;
    expect(await rows()).toEqual(recent.data.map((e: { date: string; mrr: string }) => [e.date, e.mrr]));
    expect(failures).toEqual([]);
  }, 90_000);

  it('segments: the picker re-reads the figures for one plan; MRR by plan and churn by reason equal the API, with their CSV', async () => {
    const t = merchant.token;
    // Two more customers on a second plan (yearly), one of them cancelled now with a reason.
    const basic = [];
    for (let i = 0; i < 2; i++) {
      const c = await ok(api.post('/customers', t, { email: `basic${i}@example.com`, name: `Basic ${i}` }));
      basic.push(
        await ok(
          api.post('/subscriptions', t, {
            customer_id: c.id,
            plan_name: 'Basic',
            mrr: `${(i + 1) * 125}.50`,
            billing_cycle: 'yearly',
            started_at: monthsAgo(3, 10),
          }),
        ),
      );
    }
    await ok(api.put(`/subscriptions/${basic[1].id}/cancel`, t, { reason: 'Too expensive, "for now"' }), 200);

    const plans = (await api.get('/metrics/plans', t)).body.data as {
      plan: string;
      mrr: string;
      subscriptions: number;
      customers: number;
    }[];
    expect(plans.map((p) => p.plan)).toEqual(expect.arrayContaining(['Basic', 'Pro']));
    const { page, failures } = await open('admin');
    await ready(page, 'plans');
    const planRows = await page.locator('[data-testid="plans"] tbody tr').evaluateAll((trs) =>
      trs.map((tr) => [
        tr.getAttribute('data-plan'),
        tr.getAttribute('data-mrr'),
        ...Array.from(tr.children)
          .slice(2)
          .map((c) => c.textContent),
      ]),
    );
    expect(planRows).toEqual(plans.map((p) => [p.plan, p.mrr, String(p.subscriptions), String(p.customers)]));

    // Churn by reason over the chart's range (12 months by default).
    const now = new Date();
    const start12 = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 11, 1)).toISOString().slice(0, 10);
    const reasons = (await api.get(`/metrics/churn-reasons?start_date=${start12}&end_date=${today()}`, t)).body.data as {
      reason: string | null;
      churned_mrr: string;
      churned_customers: number;
    }[];
    expect(reasons.map((r) => r.reason)).toEqual(expect.arrayContaining(['Too expensive, "for now"', null]));
    await ready(page, 'churn-reasons');
    const reasonRows = await page
      .locator('[data-testid="churn-reasons"] tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [tr.children[0].textContent, tr.getAttribute('data-mrr'), tr.children[2].textContent]));
    expect(reasonRows).toEqual(reasons.map((r) => [r.reason ?? 'No reason given', r.churned_mrr, String(r.churned_customers)]));

    // The CSV downloads are the API's own CSV.
    for (const [testId, path] of [
      ['plans-csv', '/metrics/plans'],
      ['churn-reasons-csv', `/metrics/churn-reasons?start_date=${start12}&end_date=${today()}`],
    ]) {
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId(testId).click()]);
      const saved = readFileSync((await download.path())!, 'utf8');
      const fromApi = await fetch(`${api.base}${path}`, { headers: { authorization: `Bearer ${t}`, accept: 'text/csv' } });
      expect(fromApi.status).toBe(200);
      expect(saved, testId).toBe(await fromApi.text());
      expect(parseCsv(saved, { columns: true }).length, testId).toBe(testId === 'plans-csv' ? plans.length : reasons.length);
    }

    // A plan in the picker: the summary, the MRR series and the cohorts are that plan's.
    await ready(page, 'summary');
    const whole = (await api.get('/metrics/summary', t)).body.data;
    await page.getByTestId('segment').selectOption('plan:Basic');
    await page.locator('[data-panel="summary"][data-state="ready"] [data-segment="plan:Basic"]').first().waitFor();
    const basicSummary = (await api.get('/metrics/summary?plan=Basic', t)).body.data;
    expect(basicSummary.current_mrr).toBe(plans.find((p) => p.plan === 'Basic')!.mrr);
    expect(basicSummary.current_mrr).not.toBe(whole.current_mrr);
    await expectFigures(page, basicSummary);
    expect(await page.getByTestId('summary-window').textContent()).toContain('plan “Basic” only');
    await page.locator('[data-panel="mrr"][data-state="ready"] [data-segment="plan:Basic"]').waitFor();
    const series = (await api.get(`/metrics/mrr?interval=month&start_date=${start12}&end_date=${today()}&plan=Basic`, t)).body;
    expect(
      await page
        .locator('[data-testid="mrr-table"] tbody tr')
        .evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-date'), tr.getAttribute('data-mrr')])),
    ).toEqual(series.data.map((e: { date: string; mrr: string }) => [e.date, e.mrr]));
    await expectFigures(page, { range_mrr: series.summary.current_mrr });
    await page.locator('[data-panel="cohorts"][data-state="ready"] [data-segment="plan:Basic"]').waitFor();
    const cohorts = (await api.get('/metrics/cohorts?plan=Basic', t)).body.data.filter((c: { customers: number }) => c.customers > 0);
    expect(await page.locator('[data-testid="cohorts"] tbody th').allTextContents()).toEqual(
      cohorts.map((c: { cohort: string }) => c.cohort),
    );
    // The segment is in the address: a reload keeps it.
    expect(new URL(page.url()).searchParams.get('segment')).toBe('plan:Basic');
    await page.reload();
    await page.locator('[data-panel="summary"][data-state="ready"] [data-segment="plan:Basic"]').first().waitFor();
    await expectFigures(page, basicSummary);
    await shoot(page, 'overview-segment-desktop');
    await axe(page, 'overview-segment');

    // A billing cycle, then back to all.
    await page.getByTestId('segment').selectOption('billing_cycle:yearly');
    await page.locator('[data-panel="summary"][data-state="ready"] [data-segment="billing_cycle:yearly"]').first().waitFor();
    await expectFigures(page, (await api.get('/metrics/summary?billing_cycle=yearly', t)).body.data);
    await page.getByTestId('segment').selectOption('');
    await page.locator('[data-panel="summary"][data-state="ready"] dl[data-segment=""]').waitFor();
    await expectFigures(page, whole);

    // Phone width: the two tables are cards, and the page does not scroll sideways.
    const phone = await open('user', PHONE);
    await ready(phone.page, 'plans');
    await ready(phone.page, 'churn-reasons');
    await ready(phone.page, 'mrr');
    await noSideScroll(phone.page);
    await phone.page.locator('[data-panel="plans"]').screenshot({ path: 'test/artifacts/dashboard/overview-plans-phone.png' });
    await phone.page
      .locator('[data-panel="churn-reasons"]')
      .screenshot({ path: 'test/artifacts/dashboard/overview-churn-reasons-phone.png' });
    await shoot(phone.page, 'overview-segment-phone');
    await axe(phone.page, 'overview-segment-phone');
    expect([...failures, ...phone.failures]).toEqual([]);
  }, 120_000);

  it('MRR panel: with the answer slowed, no frame shows rows under an interval or range they were not loaded for', async () => {
    const { page, failures } = await open('user');
    const t = merchant.token;
    const now = new Date();
    const start12 = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 11, 1)).toISOString().slice(0, 10);
    const start90 = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - 89)).toISOString().slice(0, 10);
    const dates = async (q: string) =>
      (await api.get(`/metrics/mrr?${q}&end_date=${today()}`, t)).body.data.map((e: { date: string }) => e.date).join(',');
    const expected: Record<string, string> = {
      'month 12m': await dates(`interval=month&start_date=${start12}`),
      'week 12m': await dates(`interval=week&start_date=${start12}`),
      'week 90d': await dates(`interval=week&start_date=${start90}`),
    };
    await ready(page, 'mrr');
    // From here on every MRR answer waits 1.5 s: many frames pass between a choice and its answer.
    await page.route(
      (url) => url.pathname === '/v1/metrics/mrr',
      async (route) => {
        await new Promise((r) => setTimeout(r, 1_500));
        await route.continue();
      },
    );
    // Record what the panel presents on every animation frame and after every DOM mutation.
    await page.evaluate(() => {
      const w = window as unknown as { presented: unknown[]; stopPresenting: boolean };
      const panel = document.querySelector('[data-panel="mrr"]')!;
      w.presented = [];
      w.stopPresenting = false;
      const sample = (via: string) => {
        const shown = panel.querySelector('[data-interval]');
        const rows = Array.from(panel.querySelectorAll('[data-testid="mrr-table"] tbody tr')).map((tr) => tr.getAttribute('data-date'));
        w.presented.push({
          via,
          controls: `${(document.querySelector('[data-testid="mrr-interval"]') as HTMLSelectElement).value} ${(document.querySelector('[data-testid="mrr-range"]') as HTMLSelectElement).value}`,
          state: panel.getAttribute('data-state'),
          labelled: shown ? `${shown.getAttribute('data-interval')} ${shown.getAttribute('data-range')}` : null,
          rows: rows.length ? rows.join(',') : null,
        });
      };
      const frame = () => {
        sample('frame');
        if (!w.stopPresenting) requestAnimationFrame(frame);
      };
      requestAnimationFrame(frame);
      new MutationObserver(() => sample('mutation')).observe(panel, {
        subtree: true,
        childList: true,
        attributes: true,
        characterData: true,
      });
    });
    await page.getByTestId('mrr-interval').selectOption('week');
    await page.locator('[data-panel="mrr"][data-state="ready"] [data-interval="week"][data-range="12m"]').waitFor();
    await page.getByTestId('mrr-range').selectOption('90d');
    await page.locator('[data-panel="mrr"][data-state="ready"] [data-interval="week"][data-range="90d"]').waitFor();
    type Presented = { via: string; controls: string; state: string; labelled: string | null; rows: string | null };
    const presented = (await page.evaluate(() => {
      const w = window as unknown as { presented: unknown[]; stopPresenting: boolean };
      w.stopPresenting = true;
      return w.presented;
    })) as Presented[];
    const frames = presented.filter((p) => p.via === 'frame');
    for (const p of presented) {
      if (p.rows === null) continue;
      // Rows are shown only under the controls they were loaded for, labelled with them, and equal to that series.
      expect(p.labelled, JSON.stringify(p)).toBe(p.controls);
      expect(
        p.rows,
        `${p.via} under "${p.controls}" presents the rows of "${Object.keys(expected).find((k) => expected[k] === p.rows)}"`,
      ).toBe(expected[p.controls]);
    }
    // The recording saw each wait (frames loading under both new choices) and the last answer.
    expect(frames.some((p) => p.controls === 'week 12m' && p.state === 'loading')).toBe(true);
    expect(frames.some((p) => p.controls === 'week 90d' && p.state === 'loading')).toBe(true);
    expect(presented.at(-1)).toMatchObject({ controls: 'week 90d', state: 'ready', rows: expected['week 90d'] });
    expect(failures).toEqual([]);
  });

  it('orders and events: pages and filters equal the API', async () => {
    const { page, failures } = await open('admin', undefined, '#activity');
    const t = merchant.token;
    await ready(page, 'orders');
    const orderNos = () =>
      page.locator('[data-testid="orders"] tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-order-no')));
    const apiPage = async (q: string) =>
      (await api.get(`/orders?per_page=10&${q}`, t)).body.data.map((o: { order_no: string }) => o.order_no);
    expect(await orderNos()).toEqual(await apiPage('page=1'));
    await expect(page.getByTestId('orders-page').textContent()).resolves.toContain('Page 1 of 3 · 25 in all');
    await page.locator('[data-panel="orders"] nav.pager').getByRole('button', { name: 'Next' }).click();
    await page.getByTestId('orders-page').filter({ hasText: 'Page 2 of 3' }).waitFor();
    await ready(page, 'orders');
    expect(await orderNos()).toEqual(await apiPage('page=2'));
    await page.getByLabel('Status').first().selectOption('pending');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByTestId('orders-page').filter({ hasText: 'Page 1 of 1' }).waitFor();
    expect(await orderNos()).toEqual(await apiPage('page=1&status=pending'));
    await ready(page, 'events');
    const events = (await api.get('/subscriptions/events?per_page=10', t)).body;
    await expect(page.getByTestId('events-page').textContent()).resolves.toContain(`${events.meta.total} in all`);
    expect(await page.locator('[data-testid="events"] tbody tr').count()).toBe(events.data.length);
    await shoot(page, 'activity-desktop');
    await axe(page, 'activity');
    expect(failures).toEqual([]);
  });

  it('imports: runs with their batches, counts, failed items and the CSV download equal the batch answers', async () => {
    const t = merchant.token;
    const run = `run_e2e_${Date.now()}`;
    const asRun = { 'x-import-run': run };
    // Under one run: customers (one skipped as a duplicate, one failed) and orders (one failed, named with a comma and quotes).
    const sent = [
      await api.post(
        '/customers/batch',
        t,
        { customers: [{ email: 'imported1@example.com' }, { email: 'buyer0@example.com' }, { email: 'not-an-email' }] },
        asRun,
      ),
      await api.post(
        '/orders/batch',
        t,
        {
          orders: [
            { order_no: 'IMP-1', customer_email: 'imported1@example.com', amount: '12.00', status: 'paid' },
            { order_no: 'IMP "2", x', customer_email: 'imported1@example.com', amount: 'abc', status: 'paid' },
          ],
        },
        asRun,
      ),
    ];
    for (const r of sent) expect(r.status, JSON.stringify(r.body)).toBe(200);
    const answers = sent.map((r) => ({ requestId: r.headers.get('x-request-id'), ...r.body.data }));
    expect(answers.map((a) => [a.created, a.skipped, a.failed])).toEqual([
      [1, 1, 1],
      [1, 0, 1],
    ]);
    expect(answers[1].results.failed[0]).toMatchObject({ index: 1, identifier: 'IMP "2", x' });
    // The log names each batch by its request: the entry of each answer.
    const entries = (await api.get(`/activity?import_run=${run}`, t)).body.data as { id: number; request_id: string }[];
    expect(entries.map((e) => e.request_id).sort()).toEqual(answers.map((a) => a.requestId).sort());
    const batchId = (i: number) => entries.find((e) => e.request_id === answers[i].requestId)!.id;

    const { page, failures } = await open('admin', undefined, '#imports');
    await ready(page, 'runs');
    const group = page.locator(`[data-testid="runs"] tbody[data-run="${run}"]`);
    const counts = (row: ReturnType<Page['locator']>) =>
      row
        .locator('td[data-count]')
        .evaluateAll((tds) =>
          Object.fromEntries(tds.map((td) => [td.getAttribute('data-count'), Number(td.textContent!.replace(/[^0-9]/g, ''))])),
        );
    const countsOf = (a: Record<string, number>) => ({
      total: a.total,
      created: a.created,
      updated: a.updated,
      skipped: a.skipped,
      failed: a.failed,
    });
    // The run's group comes first (newest): its line with the sums, then its batches, newest first.
    expect(await page.locator('[data-testid="runs"] tbody').first().getAttribute('data-run')).toBe(run);
    expect(await group.locator('tr[data-batch]').evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-batch'))))).toEqual([
      batchId(1),
      batchId(0),
    ]);
    for (const i of [0, 1])
      expect(await counts(group.locator(`tr[data-batch="${batchId(i)}"]`)), `batch ${i}`).toEqual(countsOf(answers[i]));
    const sums = Object.fromEntries(Object.keys(countsOf(answers[0])).map((k) => [k, answers[0][k] + answers[1][k]]));
    expect(await counts(group.getByTestId('run-row'))).toEqual(sums);
    await expect(group.getByTestId('run-row').textContent()).resolves.toContain(`Run ${run} · 2 batches`);
    // The orders batch of the setup, sent without a run, is a line of its own.
    const single = (await api.get('/activity?type=orders.batch', t)).body.data.find(
      (e: { import_run: string | null }) => e.import_run === null,
    );
    expect(await counts(page.locator(`[data-testid="runs"] tbody[data-run=""] tr[data-batch="${single.id}"]`))).toEqual(countsOf(single));

    // A batch: its items, focus on its panel, and its failed items as CSV.
    const items = (table: string) =>
      page
        .locator(`[data-panel="items"] [data-testid="${table}"] tbody tr`)
        .evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('th, td')).map((c) => c.textContent)));
    await page.getByRole('button', { name: `Items of batch #${batchId(0)}` }).click();
    await ready(page, 'items');
    await page.waitForFunction(() => document.activeElement?.id === 'items-title', null, { timeout: 5_000 });
    expect(await page.getByRole('button', { name: `Items of batch #${batchId(0)}` }).getAttribute('aria-pressed')).toBe('true');
    await expectFigures(page, Object.fromEntries(Object.entries(countsOf(answers[0])).map(([k, v]) => [`items-${k}`, v])));
    const failedRow = (f: { index: number; identifier: string; reason: string; message: string }) => [
      String(f.index),
      f.identifier,
      f.reason,
      f.message,
    ];
    expect(await items('failed-items')).toEqual(answers[0].results.failed.map(failedRow));
    expect((await items('skipped-items')).map((r) => r.slice(0, 3))).toEqual(
      answers[0].results.skipped.map((s: { index: number; identifier: string; reason: string }) => [
        String(s.index),
        s.identifier,
        s.reason,
      ]),
    );
    const download = async () => {
      const [file] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-failed').click()]);
      return { name: file.suggestedFilename(), text: readFileSync((await file.path())!, 'utf8') };
    };
    const batchCsv = await download();
    expect(batchCsv.name).toBe(`failed-items-batch-${batchId(0)}.csv`);
    expect(batchCsv.text.split('\r\n')[0]).toBe('index,identifier,reason,message');
    expect(parseCsv(batchCsv.text, { columns: true })).toEqual(
      answers[0].results.failed.map((f: { index: number }) => ({ ...f, index: String(f.index) })),
    );
    await shoot(page, 'imports-desktop');
    await axe(page, 'imports');

    // The whole run: both batches' items, and one CSV naming each row's batch.
    await page.getByRole('button', { name: `Run items of ${run}` }).click();
    await page.locator('[data-panel="items"][data-state="ready"] [data-testid="items-of"]').filter({ hasText: '2 batches' }).waitFor();
    const runFailed = [0, 1].flatMap((i) =>
      answers[i].results.failed.map((f: { index: number; identifier: string; reason: string; message: string }) => ({ i, ...f })),
    );
    expect(await items('failed-items')).toEqual(
      runFailed.map((f) => [`#${batchId(f.i)} · ${f.i ? 'Orders' : 'Customers'}`, ...failedRow(f)]),
    );
    const runCsv = await download();
    expect(runCsv.name).toBe(`failed-items-${run}.csv`);
    expect(runCsv.text).toContain('"IMP ""2"", x"');
    expect(parseCsv(runCsv.text, { columns: true })).toEqual(
      runFailed.map(({ i, ...f }) => ({
        batch: String(batchId(i)),
        type: i ? 'orders.batch' : 'customers.batch',
        ...f,
        index: String(f.index),
      })),
    );
    await axe(page, 'imports-run');
    expect(failures).toEqual([]);
  });

  it('webhooks: send a test event and see the delivery appear; the receiver got it', async () => {
    const { page, failures } = await open('admin', undefined, '#webhooks');
    await ready(page, 'endpoints');
    await ready(page, 'deliveries');
    const before = receiver.received.length;
    await page.getByTestId('send-test').click();
    await page.getByTestId('test-notice').filter({ hasText: 'delivered' }).waitFor({ timeout: 20_000 });
    await page.locator('[data-testid="deliveries"] tbody tr').first().waitFor();
    const [endpoint] = (await api.get('/webhook-endpoints', merchant.token)).body.data;
    const log = (await api.get(`/webhook-endpoints/${endpoint.id}/deliveries`, merchant.token)).body.data;
    expect(log[0]).toMatchObject({ event_type: 'webhook.test', status: 204 });
    expect(await page.locator('[data-testid="deliveries"] tbody tr').first().getAttribute('data-event-id')).toBe(log[0].event_id);
    expect(receiver.received.length).toBe(before + 1);
    expect(receiver.received.at(-1)!.id).toBe(log[0].event_id);
    expect(receiver.received.at(-1)!.event?.type).toBe('webhook.test');
    await shoot(page, 'webhooks-desktop');
    await axe(page, 'webhooks');
    expect(failures).toEqual([]);
  });

  it('API token: an admin regenerates it (shown once, copyable) and the old token is refused', async () => {
    const { page, failures } = await open('admin', undefined, '#token');
    await ready(page, 'token');
    const old = merchant.token;
    expect(await page.getByTestId('token-view').textContent()).toContain(old.slice(-4));
    page.on('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Regenerate' }).click();
    const issued = await page.getByTestId('issued-token').inputValue();
    expect(issued).toMatch(/^ras_[0-9A-Za-z]{40,}$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(issued);
    expect((await api.get('/orders/stats', old)).status).toBe(401);
    expect((await api.get('/orders/stats', issued)).status).toBe(200);
    await ready(page, 'token');
    expect(await page.getByTestId('token-view').textContent()).toContain(issued.slice(-4));
    merchant.token = issued;
    await shoot(page, 'token-desktop');
    await axe(page, 'token');
    // A reload forgets the plain token: it was shown once.
    await page.reload();
    await ready(page, 'token');
    expect(await page.getByTestId('issued-token').count()).toBe(0);
    expect(failures).toEqual([]);
  });

  it('a user sees the figures but no token or webhook controls', async () => {
    const { page } = await open('user', undefined, '#token');
    await ready(page, 'token');
    expect(await page.getByTestId('who').textContent()).toContain('user');
    expect(await page.getByTestId('token-actions').count()).toBe(0);
    expect(await page.getByRole('button', { name: /Regenerate|Revoke|Create token/ }).count()).toBe(0);
    await page.getByText('Only admins can create, regenerate or revoke the token.').waitFor();
    await page.goto(`${origin}/#webhooks`);
    await ready(page, 'deliveries');
    expect(await page.getByTestId('send-test').count()).toBe(0);
    await shoot(page, 'webhooks-user-desktop');
  });

  it('empty, error and retry states; keyboard navigation', async () => {
    const { page, failures } = await open('user');
    // A panel whose call fails shows the error and a retry; the retry loads it.
    let fail = true;
    await page.route('**/v1/metrics/summary', (route) =>
      fail
        ? route.fulfill({ status: 503, contentType: 'application/json', body: '{"message":"The service is busy. Try again shortly."}' })
        : route.continue(),
    );
    await page.reload();
    await page.locator('[data-panel="summary"][data-state="error"]').getByText('The service is busy').waitFor();
    fail = false;
    await page.locator('[data-panel="summary"]').getByRole('button', { name: 'Try again' }).click();
    await ready(page, 'summary');
    // Keyboard only: from the top of a fresh page to the Webhooks view, whose heading takes focus.
    await page.goto(`${origin}/`);
    await ready(page, 'stats');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    for (let i = 0; i < 10 && (await page.evaluate(() => document.activeElement?.textContent)) !== 'Webhooks'; i++)
      await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.locator('main[data-view="webhooks"]').waitFor();
    // Focus moves in an effect after the view renders: wait for it (fails after 5 s if it never does).
    await page.waitForFunction(() => document.activeElement?.id === 'view-title', null, { timeout: 5_000 }).catch(() => undefined);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('view-title');
    // A merchant with nothing yet: every panel says so instead of an empty table.
    const empty = await newMerchant();
    setSession(await backofficeJwt(empty.merchantId, 'user'));
    const { page: fresh } = await newPage();
    await fresh.goto(`${origin}/#activity`);
    for (const panel of ['orders', 'events']) await fresh.locator(`[data-panel="${panel}"] .state.empty`).waitFor();
    await fresh.goto(`${origin}/#imports`);
    await fresh.locator('[data-panel="runs"] .state.empty').waitFor();
    await fresh.goto(`${origin}/#webhooks`);
    await fresh.locator('[data-panel="endpoints"] .state.empty').waitFor();
    await fresh.goto(`${origin}/#overview`);
    for (const panel of ['mrr', 'cohorts', 'plans', 'churn-reasons']) await fresh.locator(`[data-panel="${panel}"] .state.empty`).waitFor();
    await shoot(fresh, 'overview-empty-desktop');
    expect(failures).toEqual([]);
  });

  it('phone width: every view fits, without sideways scrolling', async () => {
    const { page, failures } = await open('admin', PHONE);
    for (const [view, panel] of [
      ['overview', 'cohorts'],
      ['activity', 'events'],
      ['imports', 'runs'],
      ['webhooks', 'deliveries'],
      ['token', 'token'],
      ['settings', 'settings'],
    ]) {
      await page.goto(`${origin}/#${view}`);
      await ready(page, panel);
      if (view === 'overview') await ready(page, 'mrr');
      await noSideScroll(page);
      await shoot(page, `${view}-phone`);
    }
    await axe(page, 'token-phone');
    expect(failures).toEqual([]);
  });
});
