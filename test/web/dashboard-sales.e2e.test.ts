/// <reference lib="dom" />
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { newMerchant } from '../support/api.ts';
import {
  axe,
  expectDefinitionsOnDemand,
  expectFigures,
  hasChromium,
  noSideScroll,
  overflowingFigures,
  PHONE,
  ready,
  shoot,
  today,
  useDashboard,
  type Viewport,
} from './browser.ts';

/**
 * The overview's headline row and the Sales view end to end, for a merchant whose amounts are huge
 * (tens of millions a month): every figure equals the API's answer, none runs past its card (large
 * amounts are written short, the exact value on hover and for screen readers), at desktop and
 * phone width, with axe and screenshots (test/artifacts/dashboard/).
 */
const { api, open: openAs } = useDashboard('test/web/dashboard-sales.e2e.test.ts', 'web-dist-sales');

/** `n` months before this one (UTC, the merchant's zone), on `day` at 10:00. */
const monthsAgo = (n: number, day = 3) => {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - n, day, 10)).toISOString().replace(/\.\d+Z$/, 'Z');
};
const plus = (ts: string, seconds: number) => new Date(Date.parse(ts) + seconds * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
/** 2 h 5 min: every credit-card order's time to pay. */
const CARD_DELAY = 7_500;
const month = (n: number) => monthsAgo(n).slice(0, 7);
const firstOfMonth = (n: number) => `${month(n)}-01`;

describe.skipIf(!hasChromium)('the headline row and the Sales view in Chromium', { timeout: 60_000 }, () => {
  let merchant: { merchantId: string; token: string };
  const get = async (path: string) => {
    const r = await api.get(path, merchant.token);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const csvOf = async (path: string) => {
    const res = await fetch(`${api.base}${path}`, { headers: { authorization: `Bearer ${merchant.token}`, accept: 'text/csv' } });
    expect(res.status).toBe(200);
    return res.text();
  };
  const open = (viewport?: Viewport, hash = '') => openAs(merchant.merchantId, 'admin', viewport, hash);

  beforeAll(async () => {
    merchant = await newMerchant(undefined, 'TWD');
    const t = merchant.token;
    const created = async (path: string, body: unknown, status = 201) => {
      const r = await api.post(path, t, body);
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      return r.body.data;
    };
    // Orders over the last 12 months, tens of millions each; buyers come back; this month's are 5 hours old.
    const now = new Date(Date.now() - 5 * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const methods = ['credit_card', 'atm', 'cvs', 'wallet_a_pay'] as const;
    const orders = [];
    for (let n = 11; n >= 0; n--)
      for (let i = 0; i < 4; i++) {
        const at = n === 0 ? now : monthsAgo(n, 3 + i);
        const method = methods[(n + i) % 4];
        const status = i === 3 && n % 3 === 0 ? 'failed' : i === 2 && n === 0 ? 'pending' : 'paid';
        const delay = method === 'credit_card' ? CARD_DELAY : 3_600 * (i + 1);
        orders.push({
          order_no: `BIG-${n}-${i}`,
          customer_email: `buyer${(n * 4 + i) % 7}@example.com`,
          customer_name: i === 1 ? null : `Buyer ${(n * 4 + i) % 7}`,
          amount: (18_363_514.37 + n * 1_000_003.11 + i * 250_000_000).toFixed(2),
          currency: 'TWD',
          payment_method: method,
          billing_cycle: i === 0 ? 'monthly' : 'one-time',
          status,
          created_at: at,
          ...(status === 'paid' ? { paid_at: plus(at, delay) } : {}),
          ...(status === 'failed' ? { failed_at: plus(at, 60) } : {}),
        });
      }
    // One in USD, without an exchange rate: left out of the figures, and named as left out.
    orders.push({
      order_no: 'USD-1',
      customer_email: 'usd@example.com',
      customer_name: 'Dollar Buyer',
      amount: '1234567.89',
      currency: 'USD',
      payment_method: 'credit_card',
      billing_cycle: 'one-time',
      status: 'paid',
      created_at: now,
      paid_at: plus(now, CARD_DELAY),
    });
    const batch = await created('/orders/batch', { orders }, 200);
    expect(batch.created, JSON.stringify(batch.results.failed)).toBe(orders.length);
    // Three buyers in the north (customer metadata): the Sales view's metadata filter selects their orders.
    for (const n of [0, 1, 2]) {
      const found = await api.get(`/customers?search=${encodeURIComponent(`buyer${n}@example.com`)}`, t);
      const r = await api.put(`/customers/${found.body.data[0].id}`, t, { metadata: { region: 'north' } });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    // Subscriptions of tens of millions a month; one churned this month, one last month.
    const subs = [];
    for (const [i, mrr] of ['18363514.37', '42000000.00', '9876543.21', '123456789.99'].entries()) {
      const customer = await created('/customers', { email: `sub${i}@example.com`, ...(i === 2 ? {} : { name: `Subscriber ${i}` }) });
      subs.push(
        await created('/subscriptions', {
          customer_id: customer.id,
          plan_name: 'Enterprise',
          mrr,
          billing_cycle: 'monthly',
          started_at: monthsAgo(8 - i, 5),
        }),
      );
    }
    const r = await api.put(`/subscriptions/${subs[2].id}/cancel`, t, {});
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  }, 180_000);

  /** The headline figures as the API gives them: this month's (the last point) and last month's. */
  const headline = async () => {
    const range = `interval=month&start_date=${firstOfMonth(11)}&end_date=${today()}`;
    const [mrr, sales] = [await get(`/metrics/mrr?${range}`), await get(`/metrics/sales?${range}`)];
    const [m, mp, s, sp] = [mrr.data.at(-1), mrr.data.at(-2), sales.data.at(-1), sales.data.at(-2)];
    return {
      now: {
        headline_mrr: m.mrr,
        headline_net_revenue: s.net_revenue,
        headline_new_buyers: s.new_buyers,
        headline_mrr_churn: m.mrr_churn_rate,
      },
      before: {
        headline_mrr: mp.mrr,
        headline_net_revenue: sp.net_revenue,
        headline_new_buyers: sp.new_buyers,
        headline_mrr_churn: mp.mrr_churn_rate,
      },
    };
  };

  const noOverflow = async (page: Page) => expect(await overflowingFigures(page)).toEqual([]);

  it('overview: one headline row (MRR, net revenue, new buyers, MRR churn) equals the API, with changes, trend lines and definitions behind a button', async () => {
    const { page, failures } = await open();
    await ready(page, 'headline');
    const { now, before } = await headline();
    expect(Number(now.headline_mrr)).toBeGreaterThan(1_000_000);
    expect(Number(now.headline_net_revenue)).toBeGreaterThan(1_000_000);
    await expectFigures(page, now);
    for (const [id, value] of Object.entries(before))
      expect(await page.locator(`[data-figure="${id}"]`).getAttribute('data-previous'), id).toBe(value === null ? '' : String(value));
    // The four are one row, the first thing in the view, across its width.
    const boxes = await page
      .locator('[data-panel="headline"] .headline > [data-figure]')
      .evaluateAll((els) => els.map((e) => e.getBoundingClientRect().top));
    expect(boxes).toHaveLength(4);
    expect(new Set(boxes).size).toBe(1);
    expect(await page.locator('main .grid > *').first().getAttribute('data-panel')).toBe('headline');
    // Each change is written in words (colour is not the only sign) and each figure has its trend line.
    for (const id of Object.keys(now)) {
      expect(await page.getByTestId(`${id}-change`).textContent(), id).toMatch(/(up|down|no change|no figure)/);
    }
    expect(await page.locator('[data-panel="headline"] .headline svg.spark').count()).toBe(4);
    const sales = await get(`/metrics/sales?interval=month&start_date=${firstOfMonth(11)}&end_date=${today()}`);
    expect(Object.keys(sales.unconverted)).toEqual(['USD']);
    expect(await page.getByTestId('headline-unconverted').getAttribute('data-unconverted')).toBe(JSON.stringify(sales.unconverted));
    // Large amounts: short on screen, exact on hover and for screen readers.
    const mrr = page.locator('[data-figure="headline_mrr"] dd.value');
    expect(await mrr.locator('[aria-hidden="true"]').textContent()).toMatch(/[KMB]$/);
    expect(await mrr.locator('.visually-hidden').textContent()).toBe(await mrr.getAttribute('title'));
    // A definition opens from its button by keyboard, and closes with Escape.
    const info = page.getByTestId('headline_mrr_churn-info');
    expect(await info.getAttribute('aria-expanded')).toBe('false');
    expect(await page.locator('#headline_mrr_churn-info').isVisible()).toBe(false);
    await info.focus();
    await page.keyboard.press('Enter');
    expect(await info.getAttribute('aria-expanded')).toBe('true');
    expect(await page.locator('#headline_mrr_churn-info').textContent()).toContain('MRR lost to churn and contraction');
    await noOverflow(page);
    await shoot(page, 'headline-open-info-desktop');
    await page.keyboard.press('Escape');
    expect(await info.getAttribute('aria-expanded')).toBe('false');
    await page.keyboard.press('Tab');
    await ready(page, 'summary');
    await ready(page, 'stats');
    await noOverflow(page);
    await shoot(page, 'headline-desktop');
    await axe(page, 'headline');
    expect(failures).toEqual([]);
  }, 90_000);

  it('the overflow check finds a figure whose text runs past its card', async () => {
    const { page } = await open();
    await ready(page, 'headline');
    await noOverflow(page);
    // The exact amount written whole, as it was before amounts were shortened: it runs past its card.
    await page.evaluate(() => {
      const dd = document.querySelector('[data-figure="headline_mrr"] dd.value')!;
      dd.textContent = 'NT$193,603,847,567,890.57';
    });
    expect(await overflowingFigures(page)).toEqual([expect.stringContaining('headline_mrr: NT$193,603,847,567,890.57')]);
  });

  it('overview at phone width: the headline figures fit their cards, nothing scrolls sideways', async () => {
    const { page, failures } = await open(PHONE);
    await ready(page, 'headline');
    await ready(page, 'summary');
    await ready(page, 'stats');
    await expectFigures(page, (await headline()).now);
    await noOverflow(page);
    await noSideScroll(page);
    await shoot(page, 'headline-phone');
    await axe(page, 'headline-phone');
    expect(failures).toEqual([]);
  }, 90_000);

  const salesQuery = (extra = '') => `/metrics/sales?interval=month&start_date=${firstOfMonth(11)}&end_date=${today()}${extra}`;
  const summaryFigures = (s: any) => ({
    sales_gross: s.gross_revenue,
    sales_refunds: s.refunds,
    sales_net: s.net_revenue,
    sales_orders: s.orders,
    sales_paid_orders: s.paid_orders,
    sales_aov: s.aov,
    sales_first: s.first_order_revenue,
    sales_returning: s.returning_revenue,
    sales_new_buyers: s.new_buyers,
  });
  const download = async (page: Page, testId: string) => {
    const [file] = await Promise.all([page.waitForEvent('download'), page.getByTestId(testId).click()]);
    return { name: file.suggestedFilename(), text: readFileSync((await file.path())!, 'utf8') };
  };

  it('sales: revenue by interval and segment, payment methods and purchase cohorts equal the API; each CSV is the API’s', async () => {
    const { page, failures } = await open(undefined, '#sales');
    await ready(page, 'sales');
    const sales = await get(salesQuery());
    expect(Number(sales.summary.gross_revenue)).toBeGreaterThan(1_000_000_000);
    await expectFigures(page, summaryFigures(sales.summary));
    await expectDefinitionsOnDemand(page, '[data-panel="sales"]');
    const salesRows = () =>
      page
        .locator('[data-testid="sales-table"] tbody tr')
        .evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-date'), tr.getAttribute('data-gross'), tr.getAttribute('data-net')]));
    expect(await salesRows()).toEqual(sales.data.map((e: any) => [e.date, e.gross_revenue, e.net_revenue]));
    expect(await page.locator('[data-testid="sales-chart"] canvas').count()).toBeGreaterThan(0);
    expect(await page.getByTestId('sales-chart').getAttribute('aria-label')).toContain('gross revenue, refunds and net revenue');
    expect(await page.getByTestId('sales-returning-chart').getAttribute('aria-label')).toContain('first-time');

    // A segment: credit cards only.
    await page.getByTestId('sales-method').selectOption('credit_card');
    await page.locator('[data-panel="sales"][data-state="ready"] [data-segment*="credit_card"]').waitFor();
    const cards = await get(salesQuery('&payment_method=credit_card'));
    expect(cards.summary.gross_revenue).not.toBe(sales.summary.gross_revenue);
    await expectFigures(page, summaryFigures(cards.summary));
    // And by quarter.
    await page.getByTestId('sales-interval').selectOption('quarter');
    await page.locator('[data-panel="sales"][data-state="ready"] [data-interval="quarter"]').waitFor();
    const quarterly = await get(salesQuery('&payment_method=credit_card').replace('interval=month', 'interval=quarter'));
    expect(await salesRows()).toEqual(quarterly.data.map((e: any) => [e.date, e.gross_revenue, e.net_revenue]));
    const salesCsv = await download(page, 'sales-csv');
    expect(salesCsv.text).toBe(await csvOf(salesQuery('&payment_method=credit_card').replace('interval=month', 'interval=quarter')));
    // And of the customers in the north only (customer metadata, with the payment method).
    await page.getByTestId('sales-metadata-key').fill('region');
    await page.getByTestId('sales-metadata-value').fill('north');
    await page.getByTestId('sales-metadata-value').press('Enter');
    await page.locator('[data-panel="sales"][data-state="ready"] [data-metadata="region=north"]').waitFor();
    const north = await get(salesQuery('&payment_method=credit_card&metadata.region=north').replace('interval=month', 'interval=quarter'));
    expect(north.summary.gross_revenue).not.toBe(quarterly.summary.gross_revenue);
    expect(Number(north.summary.orders)).toBeGreaterThan(0);
    expect(await salesRows()).toEqual(north.data.map((e: any) => [e.date, e.gross_revenue, e.net_revenue]));
    expect(await page.getByTestId('sales-window').textContent()).toContain('metadata region is “north”');
    // Cleared, the panel is all buyers' again.
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.locator('[data-panel="sales"][data-state="ready"] [data-testid="sales-window"][data-metadata=""]').waitFor();
    expect(await salesRows()).toEqual(quarterly.data.map((e: any) => [e.date, e.gross_revenue, e.net_revenue]));

    // Payment methods, with success rates and the time to pay in words.
    await ready(page, 'payment-methods');
    const methods = await get(`/metrics/payment-methods?start_date=${firstOfMonth(11)}&end_date=${today()}`);
    const methodRows = await page
      .locator('[data-testid="payment-methods"] tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [
          tr.getAttribute('data-method'),
          tr.getAttribute('data-success-rate'),
          tr.getAttribute('data-gross'),
          tr.getAttribute('data-seconds'),
          tr.lastElementChild!.textContent,
        ]),
      );
    expect(methodRows.map((r) => r.slice(0, 4))).toEqual(
      methods.data.map((m: any) => [
        m.payment_method,
        m.success_rate === null ? '' : String(m.success_rate),
        m.gross_revenue,
        m.avg_seconds_to_pay === null ? '' : String(m.avg_seconds_to_pay),
      ]),
    );
    const card = methods.data.find((m: any) => m.payment_method === 'credit_card');
    expect(card.avg_seconds_to_pay).toBe(CARD_DELAY);
    expect(methodRows.find((r) => r[0] === 'credit_card')![4]).toBe('2 h 5 min');
    expect((await download(page, 'payment-methods-csv')).text).toBe(
      await csvOf(`/metrics/payment-methods?start_date=${firstOfMonth(11)}&end_date=${today()}`),
    );

    // Purchase cohorts: each cell's repeat rate and revenue per customer, written and coloured.
    await ready(page, 'purchase-cohorts');
    const cohortQuery = `/metrics/purchase-cohorts?start_month=${month(11)}&end_month=${month(0)}`;
    const cohortAnswer = await get(cohortQuery);
    const cohorts = cohortAnswer.data.filter((c: any) => c.customers > 0);
    if (cohorts.length === 0) console.log(cohortQuery, JSON.stringify(cohortAnswer).slice(0, 2000));
    expect(cohorts.length).toBeGreaterThan(0);
    const cells = await page
      .locator('[data-testid="purchase-cohorts"] td[data-month]')
      .evaluateAll((tds) =>
        tds.map((td) => [
          td.closest('tr')!.getAttribute('data-cohort'),
          td.getAttribute('data-month'),
          td.getAttribute('data-repeat-rate'),
          td.getAttribute('data-revenue-per-customer'),
          td.querySelector('.rate')!.textContent,
          (td as HTMLElement).style.background,
        ]),
      );
    expect(cells.map((c) => c.slice(0, 4))).toEqual(
      cohorts.flatMap((c: any) =>
        c.periods.map((p: any) => [c.cohort, p.month, p.repeat_rate === null ? '' : String(p.repeat_rate), p.revenue_per_customer ?? '']),
      ),
    );
    for (const c of cells) {
      expect(c[4]).toMatch(/%|—/);
      if (c[2] !== '') expect(c[5]).toMatch(/rgb|hsl/);
    }
    expect(cells.some((c) => Number(c[2]) > 0)).toBe(true);
    expect((await download(page, 'purchase-cohorts-csv')).text).toBe(await csvOf(cohortQuery));

    // What is left out for want of an exchange rate is named, as the API answers it.
    for (const [testId, answer] of [
      ['sales-unconverted', quarterly],
      ['payment-methods-unconverted', methods],
      ['purchase-cohorts-unconverted', cohortAnswer],
    ] as const) {
      expect(Object.keys(answer.unconverted), testId).toEqual(['USD']);
      const hint = page.getByTestId(testId);
      expect(await hint.getAttribute('data-unconverted'), testId).toBe(JSON.stringify(answer.unconverted));
      expect(await hint.textContent(), testId).toContain('USD');
    }
    await noOverflow(page);
    await shoot(page, 'sales-desktop');
    await axe(page, 'sales');
    expect(failures).toEqual([]);
  }, 120_000);

  it('sales at phone width: every figure fits its card, nothing scrolls sideways', async () => {
    const { page, failures } = await open(PHONE, '#sales');
    for (const panel of ['sales', 'payment-methods', 'purchase-cohorts']) await ready(page, panel);
    await expectFigures(page, summaryFigures((await get(salesQuery())).summary));
    await noOverflow(page);
    await noSideScroll(page);
    await shoot(page, 'sales-phone');
    await axe(page, 'sales-phone');
    // A definition opened in the right-hand column stays within its card and the screen.
    const info = page.locator('[data-panel="sales"] [data-figure] button.info').nth(1);
    await info.click();
    await expect.poll(() => info.getAttribute('aria-expanded')).toBe('true');
    await noOverflow(page);
    await noSideScroll(page);
    await shoot(page, 'sales-phone-open-info');
    await axe(page, 'sales-phone-open-info');
    await page.keyboard.press('Escape');
    await expect.poll(() => info.getAttribute('aria-expanded')).toBe('false');
    expect(failures).toEqual([]);
  }, 90_000);

  it('subscriptions name each customer by name, else email; so does the heading of its page', async () => {
    const { page, failures } = await open(undefined, '#subscriptions');
    await ready(page, 'subscriptions');
    const subs = (await get('/subscriptions?per_page=20')).data;
    const names = await page.locator('[data-testid="subscriptions"] tbody tr a[href^="#customers/"]').allTextContents();
    expect(names).toEqual(subs.map((s: any) => s.customer_name ?? s.customer_email ?? `#${s.customer_id}`));
    expect(names).toContain('sub2@example.com');
    expect(names.some((n) => n.startsWith('Customer #'))).toBe(false);
    await page.getByRole('link', { name: 'sub2@example.com' }).first().click();
    await ready(page, 'customer');
    await page.locator('#view-title', { hasText: 'sub2@example.com' }).waitFor();
    expect(await page.title()).toContain('sub2@example.com');
    expect(failures).toEqual([]);
  });
});
