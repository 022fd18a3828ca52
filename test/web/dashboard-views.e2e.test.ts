/// <reference lib="dom" />
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEventId } from '#lib/outbox/store';
import { changeMerchant } from '#lib/settings/service';
import { settleRecounts } from '#lib/metrics/recount';
import { deliverTask, type DeliveryTask } from '#lib/webhooks/delivery';
import { startWebhookReceiver } from '../../infra/local/webhook-receiver.ts';
import { prettyJson } from '../../web/src/format.ts';
import { newMerchant } from '../support/api.ts';
import { backofficeJwt } from '../backoffice/support.ts';
import {
  axe,
  definitionOf,
  DESKTOP,
  digits,
  expectDefinitionsOnDemand,
  expectFigures,
  figureDefinitions,
  hasChromium,
  noSideScroll,
  PHONE,
  ready,
  rowsOf,
  shoot,
  shown,
  today,
  useDashboard,
  type Viewport,
} from './browser.ts';

/**
 * The customers, customer, subscriptions and webhook management views and the overview's
 * explanations, end to end (the harness of test/web/browser.ts): each view at desktop and phone
 * width, axe-clean, every figure and row equal to the API's own answer fetched with the merchant's
 * token, the CSV downloads equal to the API's CSV, and each webhook change checked in the API.
 */
const { api, origin, open: openAs, setSession, newPage } = useDashboard('test/web/dashboard-views.e2e.test.ts', 'web-dist-views');

const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
const daysAhead = (n: number) => daysAgo(-n);

/**
 * The MRR chart's stacks, from the axis out: new, expansion, reactivation above; contraction,
 * voluntary and delinquent churn below (web/src/chart.tsx), with their legend's words.
 */
const STACKS = [
  ['new', 'expansion', 'reactivation'],
  ['contraction', 'voluntary_churn', 'delinquent_churn'],
];
const LEGEND: Record<string, string> = {
  new: 'New',
  expansion: 'Expansion',
  reactivation: 'Reactivation',
  contraction: 'Contraction',
  voluntary_churn: 'Voluntary churn',
  delinquent_churn: 'Delinquent churn (failed payments)',
};
/**
 * Where the MRR chart draws a point's movement (the table's `data-value`s, the API's): the middle
 * of its segment of the stack, placed on the plot area (uPlot's `.u-over`, in the viewport) by the
 * scales' ranges the chart writes on it (`data-x-min`, `data-moves-max`, …); the segment's height,
 * and the colour the canvas has there beside its legend swatch's. With `above`, a spot in the
 * point's column over the whole positive stack instead (no bar there).
 */
const barSpot = async (page: Page, date: string, type: string, above = false) => {
  const over = page.locator('[data-testid="mrr-chart"] .u-over[data-moves-max]');
  await over.scrollIntoViewIfNeeded();
  const table = page.locator('[data-testid="mrr-table"] tbody tr');
  const index = (await table.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-date')))).indexOf(date);
  expect(index, date).toBeGreaterThanOrEqual(0);
  const value = async (t: string) => Number(await table.nth(index).locator(`td[data-type="${t}"]`).getAttribute('data-value'));
  const side = STACKS.find((s) => s.includes(type))!;
  let from = 0;
  for (const t of side.slice(0, side.indexOf(type))) from += await value(t);
  const to = from + (await value(type));
  const scale = await over.evaluate((el) => Object.fromEntries(Object.entries(el.dataset).map(([k, v]) => [k, Number(v)])));
  const box = (await over.boundingBox())!;
  const yOf = (v: number) => box.y + ((scale.movesMax - v) / (scale.movesMax - scale.movesMin)) * box.height;
  let top = 0;
  for (const t of STACKS[0]) top += await value(t);
  const x = box.x + ((index - scale.xMin) / (scale.xMax - scale.xMin)) * box.width;
  const y = above ? (yOf(top) + box.y) / 2 : yOf((from + to) / 2);
  const colours = await page.evaluate(
    ({ x, y, label }) => {
      const canvas = document.querySelector<HTMLCanvasElement>('[data-testid="mrr-chart"] canvas')!;
      const r = canvas.getBoundingClientRect();
      const k = canvas.width / r.width;
      const [red, green, blue] = canvas
        .getContext('2d')!
        .getImageData(Math.floor((x - r.left) * k), Math.floor((y - r.top) * k), 1, 1).data;
      const swatch = Array.from(document.querySelectorAll('.chart .legend span')).find((s) => s.textContent?.trim() === label)!;
      return { canvas: `rgb(${red}, ${green}, ${blue})`, legend: getComputedStyle(swatch.querySelector('i')!).backgroundColor };
    },
    { x, y, label: LEGEND[type] },
  );
  return { x, y, height: Math.abs(yOf(to) - yOf(from)), ...colours };
};
/** Two frames: a click's state change has rendered by then (Preact renders on a microtask). */
const frames = (page: Page) => page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));

describe.skipIf(!hasChromium)('the customers, subscriptions and webhook views in Chromium', { timeout: 60_000 }, () => {
  let merchant: { merchantId: string; token: string };
  const ids: Record<string, number> = {};
  const secrets: string[] = [];
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

  const ok = async (res: Promise<{ status: number; body: any }>, status = 201) => {
    const r = await res;
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    return r.body?.data;
  };
  const get = async (path: string) => (await api.get(path, merchant.token)).body;
  const csvOf = async (path: string, token = merchant.token) => {
    const res = await api.get(path, token, { accept: 'text/csv' });
    expect(res.status).toBe(200);
    return res.body as string;
  };
  const open = (role: 'admin' | 'user', hash: string, viewport: Viewport = DESKTOP) => openAs(merchant.merchantId, role, viewport, hash);
  /** At phone width: no sideways scrolling, a screenshot and an axe report by `name`, no page errors. */
  const fitsPhone = async (opened: { page: Page; failures: string[] }, name: string) => {
    await noSideScroll(opened.page);
    await shoot(opened.page, name);
    await axe(opened.page, name);
    expect(opened.failures).toEqual([]);
  };
  const download = async (page: Page, testId: string) => {
    const [file] = await Promise.all([page.waitForEvent('download'), page.getByTestId(testId).click()]);
    return { name: file.suggestedFilename(), text: readFileSync((await file.path())!, 'utf8') };
  };

  beforeAll(async () => {
    merchant = await newMerchant();
    const t = merchant.token;
    // 24 plain customers in one batch, and five with subscriptions: two pages of 20.
    const people = Array.from({ length: 24 }, (_, i) => ({
      email: `person${String(i + 1).padStart(2, '0')}@example.com`,
      name: `Person ${String(i + 1).padStart(2, '0')}`,
    }));
    expect((await ok(api.post('/customers/batch', t, { customers: people }), 200)).created).toBe(24);
    const plans = { ana: ['Pro', '500'], bo: ['Basic', '200'], cy: ['Pro', '300'], di: ['Basic', '150'], ed: ['Pro', '400'] };
    for (const [who, [plan, mrr]] of Object.entries(plans)) {
      const c = await ok(api.post('/customers', t, { email: `${who}@example.com`, name: who[0].toUpperCase() + who.slice(1) }));
      ids[who] = c.id;
      const started = who === 'ana' ? daysAgo(90) : daysAgo(20);
      const s = await ok(
        api.post('/subscriptions', t, { customer_id: c.id, plan_name: plan, mrr, billing_cycle: 'monthly', started_at: started }),
      );
      ids[`${who}Sub`] = s.id;
    }
    // Ana's history: new, expansion, contraction (back-dated), then a paid monthly order on top.
    await ok(api.put(`/subscriptions/${ids.anaSub}`, t, { mrr: '800', effective_at: daysAgo(60) }), 200);
    await ok(api.put(`/subscriptions/${ids.anaSub}`, t, { mrr: '700', plan_name: 'Pro Lite', effective_at: daysAgo(30) }), 200);
    for (const order of [
      { order_no: 'ANA-R1', amount: '300', status: 'paid', billing_cycle: 'monthly' },
      { order_no: 'ANA-2', amount: '99.50', status: 'pending' },
      { order_no: 'ANA-3', amount: '20.00', currency: 'USD', status: 'paid' },
    ])
      await ok(api.post('/orders', t, { ...order, customer_email: 'ana@example.com' }));
    await ok(api.put(`/subscriptions/${ids.cySub}/pause`, t, {}), 200);
    await ok(api.put(`/subscriptions/${ids.diSub}/cancel`, t, { reason: 'too expensive' }), 200);
    await ok(api.put(`/subscriptions/${ids.edSub}/cancel`, t, { cancelled_at: daysAhead(30) }), 200);
    receiver = await startWebhookReceiver({ secrets });
  }, 120_000);
  afterAll(async () => {
    await receiver?.close();
  });

  it('customers: rows, paging and search equal the API; the CSV download is the API’s CSV', async () => {
    const { page, failures } = await open('user', '#customers');
    await ready(page, 'customers');
    const expectRows = async (query: string) => {
      const answer = await get(`/customers?per_page=20&${query}`);
      const rows = await rowsOf(page, 'customers', ['data-customer-id', 'data-mrr']);
      expect(rows.map(({ MRR, ...row }) => row)).toEqual(
        answer.data.map((c: any) => ({
          'data-customer-id': String(c.id),
          'data-mrr': c.mrr,
          Customer: c.name === null ? c.email : `${c.name} ${c.email}`,
          Subscription: c.subscription_status ?? 'no subscription',
          'Customer since': shown(c.created_at),
        })),
      );
      // The MRR shown (formatted) has the API's digits.
      expect(rows.map((r) => digits(r.MRR ?? ''))).toEqual(answer.data.map((c: any) => digits(c.mrr)));
      return answer;
    };
    const first = await expectRows('page=1');
    expect(first.meta.total).toBe(29);
    expect(first.data.find((c: any) => c.id === ids.ana)).toMatchObject({ mrr: '1000.00', subscription_status: 'active' });
    await expect(page.getByTestId('customers-page').textContent()).resolves.toContain('Page 1 of 2 · 29 in all');
    await page.locator('[data-panel="customers"] nav.pager').getByRole('button', { name: 'Next' }).click();
    await page.getByTestId('customers-page').filter({ hasText: 'Page 2 of 2' }).waitFor();
    await ready(page, 'customers');
    await expectRows('page=2');
    // Search: case-insensitive, from page 1; the CSV holds the same customers, as the API writes them.
    await page.getByTestId('customer-search').fill('PERSON 1');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator('[data-panel="customers"][data-state="ready"] [data-search="PERSON 1"]').waitFor();
    const found = await expectRows('page=1&search=PERSON%201');
    expect(found.meta.total).toBe(10);
    const csv = await download(page, 'customers-csv');
    expect(csv.name).toBe('customers.csv');
    expect(csv.text).toBe(await csvOf('/customers?search=PERSON%201&per_page=100'));
    expect(csv.text.split('\r\n').filter(Boolean)).toHaveLength(11);
    await page.getByText('Saved customers.csv.').waitFor();
    await shoot(page, 'customers-desktop');
    await axe(page, 'customers');
    expect(failures).toEqual([]);
  });

  it('a customer: its MRR, status, subscriptions, orders and MRR movements equal the API', async () => {
    const { page, failures } = await open('user', '#customers');
    await ready(page, 'customers');
    await page.getByTestId('customer-search').fill('ana@');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator('[data-panel="customers"][data-state="ready"] [data-search="ana@"]').waitFor();
    await page.getByRole('link', { name: /^Ana/ }).click();
    await page.locator(`main[data-view="customers"][data-arg="${ids.ana}"]`).waitFor();
    await page.waitForFunction(() => document.activeElement?.id === 'view-title', null, { timeout: 5_000 });
    for (const panel of ['customer', 'customer-subscriptions', 'customer-orders', 'activities']) await ready(page, panel);

    const customer = (await get(`/customers/${ids.ana}`)).data;
    expect(customer).toMatchObject({ mrr: '1000.00', subscription_status: 'active' });
    await expectFigures(page, {
      customer_mrr: customer.mrr,
      customer_status: customer.subscription_status,
      customer_ltv: customer.ltv,
      customer_orders: customer.order_count,
    });
    await expectDefinitionsOnDemand(page, '[data-panel="customer"]');
    expect(await page.getByTestId('customer-name').textContent()).toBe('Ana');

    const subs = (await get(`/subscriptions?customer_id=${ids.ana}&per_page=10`)).data;
    expect(await rowsOf(page, 'customer-subscriptions', ['data-subscription-id'])).toEqual(
      subs.map((s: any) => ({
        'data-subscription-id': String(s.id),
        Plan: s.plan_name,
        Status: s.status,
        MRR: expect.any(String),
        Billing: s.billing_cycle,
        Started: shown(s.started_at),
        Cancellation: '—',
      })),
    );
    expect(
      await page
        .locator('[data-testid="customer-subscriptions"] [data-value]')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-value'))),
    ).toEqual(subs.map((s: any) => s.mrr));

    const orders = (await get(`/orders?customer_id=${ids.ana}&per_page=10`)).data;
    expect(orders).toHaveLength(3);
    expect(await rowsOf(page, 'customer-orders', ['data-order-no'])).toEqual(
      orders.map((o: any) => ({
        'data-order-no': o.order_no,
        Order: o.order_no,
        Amount: expect.any(String),
        Status: o.status,
        Created: shown(o.created_at),
      })),
    );
    expect(
      await page.locator('[data-testid="customer-orders"] [data-value]').evaluateAll((els) => els.map((e) => e.getAttribute('data-value'))),
    ).toEqual(orders.map((o: any) => o.amount));

    const moves = (await get(`/customers/${ids.ana}/activities?per_page=10`)).data;
    expect(moves.map((m: any) => m.type)).toEqual(['expansion', 'contraction', 'expansion', 'new']);
    const names: Record<string, string> = {
      new: 'New',
      expansion: 'Expansion',
      contraction: 'Contraction',
      churn: 'Churn',
      reactivation: 'Reactivation',
    };
    expect(await rowsOf(page, 'activities', ['data-date', 'data-type', 'data-amount', 'data-before', 'data-after'])).toEqual(
      moves.map((m: any) => ({
        'data-date': m.date,
        'data-type': m.type,
        'data-amount': m.amount,
        'data-before': m.mrr_before,
        'data-after': m.mrr_after,
        Date: shown(m.date),
        Movement: names[m.type],
        Amount: expect.stringContaining(m.amount.replace('-', '').split('.')[1]),
        'MRR before → after': expect.stringContaining('→'),
        'Because of': m.subscription_id !== null ? `Subscription #${m.subscription_id}` : `Order ${m.order_no}`,
      })),
    );
    expect(moves[0]).toMatchObject({ order_no: 'ANA-R1', amount: '300.00', mrr_after: '1000.00' });
    await shoot(page, 'customer-desktop');
    await axe(page, 'customer');
    // Back to the list, by the link.
    await page.getByRole('link', { name: '← All customers' }).click();
    await ready(page, 'customers');
    expect(failures).toEqual([]);
  });

  it('subscriptions: rows, the status and plan filters equal the API; the CSV download is the API’s CSV', async () => {
    const { page, failures } = await open('user', '#subscriptions');
    await ready(page, 'subscriptions');
    const expectRows = async (query: string) => {
      const answer = await get(`/subscriptions?per_page=20${query}`);
      expect(await rowsOf(page, 'subscriptions', ['data-subscription-id'])).toEqual(
        answer.data.map((s: any) => ({
          'data-subscription-id': String(s.id),
          Plan: s.plan_name,
          Status: s.status,
          MRR: expect.any(String),
          Customer: s.customer_name ?? s.customer_email ?? `#${s.customer_id}`,
          Billing: s.billing_cycle,
          Started: shown(s.started_at),
          Cancellation: s.cancelled_at ? `cancelled ${shown(s.cancelled_at)}` : s.cancel_at ? `cancels ${shown(s.cancel_at)}` : '—',
        })),
      );
      expect(
        await page.locator('[data-testid="subscriptions"] [data-value]').evaluateAll((els) => els.map((e) => e.getAttribute('data-value'))),
      ).toEqual(answer.data.map((s: any) => s.mrr));
      return answer.data;
    };
    const all = await expectRows('');
    expect(all.map((s: any) => s.status).sort()).toEqual(['active', 'active', 'active', 'cancelled', 'paused']);
    expect(all.find((s: any) => s.id === ids.edSub).cancel_at).not.toBeNull();
    await page.getByTestId('subscription-status').selectOption('cancelled');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByTestId('subscriptions-page').filter({ hasText: '1 in all' }).waitFor();
    expect((await expectRows('&status=cancelled')).map((s: any) => s.id)).toEqual([ids.diSub]);
    await page.getByTestId('subscription-status').selectOption('');
    await page.getByLabel('Plan (exact name)').fill('Basic');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByTestId('subscriptions-page').filter({ hasText: '2 in all' }).waitFor();
    await expectRows('&plan_name=Basic');
    const csv = await download(page, 'subscriptions-csv');
    expect(csv.name).toBe('subscriptions.csv');
    expect(csv.text).toBe(await csvOf('/subscriptions?plan_name=Basic&per_page=100'));
    await shoot(page, 'subscriptions-desktop');
    await axe(page, 'subscriptions');
    // A subscription's customer opens its page.
    // Named by name (else email), as the API names it.
    const di = all.find((s: any) => s.id === ids.diSub);
    expect(di.customer_name ?? di.customer_email).toBeTruthy();
    await page.getByRole('link', { name: di.customer_name ?? di.customer_email }).click();
    await ready(page, 'customer');
    await expectFigures(page, { customer_status: 'cancelled', customer_mrr: '0.00' });
    expect(failures).toEqual([]);
  });

  it('webhooks: an admin adds, edits, disables, rotates (each secret shown once), resends and deletes an endpoint; the API agrees at each step', async () => {
    const { page, failures } = await open('admin', '#webhooks');
    let confirmAnswer = true;
    const asked: string[] = [];
    page.on('dialog', (d) => {
      asked.push(d.message());
      void (confirmAnswer ? d.accept() : d.dismiss());
    });
    await page.locator('[data-panel="endpoints"] .state.empty').waitFor({ timeout: 20_000 });
    const endpoints = async () => (await get('/webhook-endpoints')).data;

    // Add: a refused URL shows the API's message by its field; then a good one.
    await page.getByTestId('add-endpoint').click();
    await page.waitForFunction(() => document.activeElement?.id === 'endpoint-form-title', null, { timeout: 5_000 });
    await page.getByLabel('URL').fill('ftp://example.com/hook');
    await page.locator('input[name="events"][value="order.paid"]').check();
    await page.locator('input[name="events"][value="subscription.cancelled"]').check();
    await page.getByLabel('Description (optional)').fill('Primary receiver');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.locator('#endpoint-url-error').waitFor();
    expect(await page.getByLabel('URL').getAttribute('aria-invalid')).toBe('true');
    expect(await endpoints()).toEqual([]);
    await shoot(page, 'webhooks-form-desktop');
    await axe(page, 'webhooks-form');
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const first = await page.getByTestId('issued-secret').inputValue();
    expect(first).toMatch(/^whsec_/);
    await page.getByText('Copy it now: it is shown only this once').waitFor();
    let [endpoint] = await endpoints();
    expect(endpoint).toMatchObject({
      url: new URL(receiver.url).href,
      events: ['order.paid', 'subscription.cancelled'],
      description: 'Primary receiver',
      status: 'enabled',
    });
    await ready(page, 'endpoints');
    expect(await rowsOf(page, 'endpoints', ['data-endpoint-id'])).toEqual([
      {
        'data-endpoint-id': String(endpoint.id),
        URL: endpoint.url,
        Events: 'order.paid, subscription.cancelled',
        Description: 'Primary receiver',
        Status: 'enabled',
      },
    ]);
    await shoot(page, 'webhooks-secret-desktop');
    await axe(page, 'webhooks-secret');
    // The secret shown is the endpoint's: a test event signed with it verifies at the receiver.
    secrets.push(first);
    await ready(page, 'deliveries');
    await page.getByTestId('send-test').click();
    await page.getByTestId('test-notice').filter({ hasText: 'delivered' }).waitFor({ timeout: 20_000 });
    expect(receiver.received.at(-1)!.event?.type).toBe('webhook.test');
    // Shown once: gone once stored, and after a reload.
    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await page.getByTestId('issued-secret').count()).toBe(0);
    await page.reload();
    await ready(page, 'endpoints');
    expect(await page.getByTestId('issued-secret').count()).toBe(0);

    // Edit: every event type, a new description.
    await page.getByRole('button', { name: `Edit ${endpoint.url}` }).click();
    expect(await page.getByLabel('Description (optional)').inputValue()).toBe('Primary receiver');
    expect(await page.locator('input[name="events"][value="order.paid"]').isChecked()).toBe(true);
    await page.getByTestId('events-all').check();
    await page.getByLabel('Description (optional)').fill('Every event');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByTestId('endpoints-notice').filter({ hasText: 'saved' }).waitFor();
    [endpoint] = await endpoints();
    expect(endpoint).toMatchObject({ events: ['*'], description: 'Every event', status: 'enabled' });

    // Disable, then the row says so and offers Enable.
    await ready(page, 'endpoints');
    await page.getByRole('button', { name: `Disable ${endpoint.url}` }).click();
    await page.getByTestId('endpoints-notice').filter({ hasText: 'disabled' }).waitFor();
    expect((await endpoints())[0].status).toBe('disabled');
    await ready(page, 'endpoints');
    await page.getByRole('button', { name: `Enable ${endpoint.url}` }).waitFor();

    // Rotate: asked first; the new secret is shown once and is the one now signing.
    await page.getByRole('button', { name: `Rotate secret of ${endpoint.url}` }).click();
    const second = await page.getByTestId('issued-secret').inputValue();
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);
    expect(asked.at(-1)).toContain('Rotate the signing secret');
    secrets.splice(0, secrets.length, second);
    await ready(page, 'deliveries');
    await page.getByTestId('send-test').click();
    await page.getByTestId('test-notice').filter({ hasText: 'delivered' }).waitFor({ timeout: 20_000 });
    expect(receiver.received.at(-1)!.event?.type).toBe('webhook.test');

    // Send a logged event again: the next attempt of the same event, in the log and in the API.
    await ready(page, 'deliveries');
    const latest = (await get(`/webhook-endpoints/${endpoint.id}/deliveries`)).data[0];
    await page.getByRole('button', { name: `Send again ${latest.event_type} ${latest.event_id} attempt 1` }).click();
    await page.getByTestId('test-notice').filter({ hasText: 'attempt 2' }).waitFor({ timeout: 20_000 });
    await ready(page, 'deliveries');
    const log = (await get(`/webhook-endpoints/${endpoint.id}/deliveries`)).data;
    expect(log[0]).toMatchObject({ event_id: latest.event_id, attempt: 2, status: 204 });
    expect(await rowsOf(page, 'deliveries', ['data-event-id', 'data-attempt'])).toEqual(
      log.map((d: any) =>
        expect.objectContaining({ 'data-event-id': d.event_id, 'data-attempt': String(d.attempt), Result: String(d.status) }),
      ),
    );
    await shoot(page, 'webhooks-manage-desktop');
    await axe(page, 'webhooks-manage');

    // Delete: a dismissed confirmation deletes nothing; an accepted one deletes it.
    confirmAnswer = false;
    await page.getByRole('button', { name: `Delete ${endpoint.url}` }).click();
    expect(asked.at(-1)).toContain('cannot be undone');
    expect(await endpoints()).toHaveLength(1);
    confirmAnswer = true;
    await page.getByRole('button', { name: `Delete ${endpoint.url}` }).click();
    await page.getByTestId('endpoints-notice').filter({ hasText: 'deleted' }).waitFor();
    expect(await endpoints()).toEqual([]);
    expect((await api.get(`/webhook-endpoints/${endpoint.id}`, merchant.token)).status).toBe(404);
    await page.locator('[data-panel="endpoints"] .state.empty').waitFor();
    expect(failures).toEqual([]);
  });

  it('webhooks: each delivery shows its next retry and payload as the API answers them; Send again from a failed row', async () => {
    // A receiver failing until told otherwise; attempts queued for it run here, as the delivery consumer runs them.
    let answer = 500;
    const failingSecrets: string[] = [];
    const failing = await startWebhookReceiver({ secrets: failingSecrets, respond: () => answer });
    try {
      const endpoint = await ok(api.post('/webhook-endpoints', merchant.token, { url: failing.url, events: ['order.paid'] }));
      failingSecrets.push(endpoint.secret);
      const order = (await get('/orders?per_page=1')).data[0];
      const task = (object: unknown): DeliveryTask => ({
        merchant_id: merchant.merchantId,
        endpoint_id: endpoint.id,
        event: { id: newEventId(), type: 'order.paid', created_at: order.updated_at, data: { object } },
      });
      const failed = task(order);
      expect(await deliverTask(failed, { random: () => 0.5 })).toMatchObject({ action: 'retry', entry: { attempt: 1, status: 500 } });
      // A body longer than the log keeps (metadata near its 16 KiB limit), delivered.
      answer = 204;
      const large = task({ ...order, metadata: { note: 'é'.repeat(8 * 1024 - 20) } });
      expect(await deliverTask(large)).toMatchObject({ action: 'done', reason: 'delivered' });
      answer = 500;

      const { page, failures } = await open('admin', '#webhooks');
      /** Each delivery row: its event, attempt, result, next retry (the time element's value and text) and payload as shown. */
      const shownDeliveries = () =>
        page.locator('[data-testid="deliveries"] tbody tr').evaluateAll((trs) =>
          trs.map((tr) => {
            const cell = (label: string) => tr.querySelector(`[data-label="${label}"]`)!;
            const time = cell('Next retry').querySelector('time');
            return {
              event_id: tr.getAttribute('data-event-id'),
              attempt: Number(tr.getAttribute('data-attempt')),
              result: cell('Result').textContent?.trim(),
              next: time ? { datetime: time.getAttribute('datetime'), text: time.textContent } : cell('Next retry').textContent,
              payload: cell('Payload').querySelector('pre')?.textContent ?? null,
              truncated: cell('Payload').querySelector('[data-testid="payload-truncated"]') !== null,
            };
          }),
        );
      /** The rows equal the API's log: the next retry shown to the second in UTC, the payload indented. */
      const expectLogShown = async () => {
        await ready(page, 'deliveries');
        const log = (await get(`/webhook-endpoints/${endpoint.id}/deliveries?per_page=10`)).data;
        expect(await shownDeliveries()).toEqual(
          log.map((d: any) => ({
            event_id: d.event_id,
            attempt: d.attempt,
            result: String(d.status),
            next: d.next_attempt_at
              ? { datetime: d.next_attempt_at, text: `${d.next_attempt_at.slice(0, 10)} ${d.next_attempt_at.slice(11, 19)} UTC` }
              : '—',
            payload: d.payload_truncated ? prettyJson(d.payload) : JSON.stringify(JSON.parse(d.payload), null, 2),
            truncated: d.payload_truncated,
          })),
        );
        return log;
      };

      let log = await expectLogShown();
      expect(log.map((d: any) => [d.event_id, d.attempt, d.status, d.payload_truncated])).toEqual([
        [large.event.id, 1, 204, true],
        [failed.event.id, 1, 500, false],
      ]);
      // The failed attempt's next retry is the queue's (the schedule's first pause, 10 s at this jitter, after the attempt's end).
      const due = log[1].next_attempt_at;
      // (`at` and the retry time are both shown to the second: they differ by the pause within a second.)
      const gap = Date.parse(due) - (Date.parse(log[1].at) + log[1].duration_ms + 10_000);
      expect(Math.abs(gap)).toBeLessThan(1_000);
      expect(log[0].next_attempt_at).toBeNull();
      // The payloads are the bodies the receiver got (and verified), the large one's start only.
      expect(failing.received.map((d) => d.event?.id)).toEqual([failed.event.id, large.event.id]);
      expect(log[1].payload).toBe(failing.received[0].body);
      expect(failing.received[1].body.startsWith(log[0].payload)).toBe(true);

      // Opened, a payload is shown; the page stays accessible.
      const summary = page.locator(`tr[data-event-id="${failed.event.id}"] [data-testid="payload"] summary`);
      expect(await summary.textContent()).toBe(`Show payload of order.paid ${failed.event.id} attempt 1`);
      await summary.click();
      await page.locator(`tr[data-event-id="${failed.event.id}"] pre`).waitFor({ state: 'visible' });
      await shoot(page, 'webhooks-deliveries-desktop');
      await axe(page, 'webhooks-deliveries');

      // Send again while the receiver still fails: the queue's retry is still due, and shown.
      await page.getByRole('button', { name: `Send again order.paid ${failed.event.id} attempt 1` }).click();
      await page.getByTestId('test-notice').filter({ hasText: 'attempt 2' }).waitFor({ timeout: 20_000 });
      log = await expectLogShown();
      expect(log[0]).toMatchObject({ event_id: failed.event.id, attempt: 2, status: 500, next_attempt_at: due });
      // Then it succeeds: nothing more is due.
      answer = 204;
      await page.getByRole('button', { name: `Send again order.paid ${failed.event.id} attempt 2` }).click();
      await page.getByTestId('test-notice').filter({ hasText: 'attempt 3' }).waitFor({ timeout: 20_000 });
      log = await expectLogShown();
      expect(log[0]).toMatchObject({ event_id: failed.event.id, attempt: 3, status: 204, next_attempt_at: null });
      expect(log[0].payload).toBe(failing.received.at(-1)!.body);
      expect(failures).toEqual([]);

      // At phone width an opened payload (the long one) stays inside the screen.
      const phone = await open('admin', '#webhooks', PHONE);
      await ready(phone.page, 'deliveries');
      await phone.page.locator(`tr[data-event-id="${large.event.id}"] [data-testid="payload"] summary`).click();
      await phone.page.locator(`tr[data-event-id="${large.event.id}"] pre`).waitFor({ state: 'visible' });
      await noSideScroll(phone.page);
      await shoot(phone.page, 'webhooks-deliveries-phone');
      expect(phone.failures).toEqual([]);
      await ok(api.del(`/webhook-endpoints/${endpoint.id}`, merchant.token), 204);
    } finally {
      await failing.close();
    }
  });

  it('a user reads endpoints and deliveries but has no management controls; a merchant without data sees empty states', async () => {
    const endpoint = await ok(api.post('/webhook-endpoints', merchant.token, { url: receiver.url, events: ['order.paid'] }));
    const { page } = await open('user', '#webhooks');
    await ready(page, 'endpoints');
    await ready(page, 'deliveries');
    expect(await page.getByTestId('add-endpoint').count()).toBe(0);
    expect(await page.getByRole('button', { name: /^(Edit|Disable|Enable|Rotate secret|Delete|Send again)/ }).count()).toBe(0);
    await page.getByText('Only admins can add, change or delete endpoints.').waitFor();
    await ok(api.del(`/webhook-endpoints/${endpoint.id}`, merchant.token), 204);

    const empty = await newMerchant();
    setSession(await backofficeJwt(empty.merchantId, 'user'));
    const { page: fresh } = await newPage();
    await fresh.goto(`${origin()}/#customers`);
    await fresh.locator('[data-panel="customers"] .state.empty').getByText('No customers yet.').waitFor();
    await fresh.goto(`${origin()}/#subscriptions`);
    await fresh.locator('[data-panel="subscriptions"] .state.empty').waitFor();
  });

  it('overview: each figure says what it is and over which days; customer churn and MRR churn are told apart', async () => {
    const { page, failures } = await open('user', '#overview');
    for (const panel of ['headline', 'stats', 'summary', 'mrr']) await ready(page, panel);
    // Every figure shows its label and number; its definition is behind its ⓘ button (a disclosure), not under the number.
    const headline = await expectDefinitionsOnDemand(page, '[data-panel="headline"]');
    expect(headline.map((h) => h.id)).toEqual(['headline_mrr', 'headline_net_revenue', 'headline_new_buyers', 'headline_mrr_churn']);
    const figures = await expectDefinitionsOnDemand(page, '[data-panel]:not([data-panel="headline"])');
    // Trials and failed payments, today's stats, the 30-day summary, the MRR range's.
    expect(figures.length).toBe(4 + 4 + 11 + 5);
    const byId = Object.fromEntries(figures.map((f) => [f.id, f]));
    expect(byId.customer_churn_rate.label).toBe('Customer churn rate');
    expect(byId.mrr_churn_rate.label).toBe('MRR churn rate');
    expect(byId.range_customer_churn.label).toBe('Customer churn rate');
    expect(byId.range_mrr_churn.label).toBe('MRR churn rate');
    expect(byId.customer_churn_rate.definition).toMatch(/customers lost/i);
    expect(byId.mrr_churn_rate.definition).toMatch(/MRR lost/);
    const start30 = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);
    for (const id of ['customer_churn_rate', 'mrr_churn_rate', 'net_mrr_churn_rate', 'quick_ratio'])
      expect(byId[id].definition, id).toContain(`${start30} to ${today()}`);
    expect(await page.getByTestId('summary-window').textContent()).toContain(`${start30} to ${today()}`);
    const now = new Date();
    const start12 = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 11, 1)).toISOString().slice(0, 10);
    expect(await page.getByTestId('range-window').textContent()).toContain(`Last 12 months: ${start12} to ${today()}`);
    const summary = (await get('/metrics/summary')).data;
    await expectFigures(page, { customer_churn_rate: summary.customer_churn_rate, mrr_churn_rate: summary.mrr_churn_rate });
    expect(failures).toEqual([]);
  });

  it('settings: an admin changes the time zone (a bad name first: the API’s message), saved and shown; the stats figures’ definitions name it', async () => {
    const m = await newMerchant();
    const settings = async () => (await api.get('/settings', m.token)).body.data;
    expect(await settings()).toMatchObject({ timezone: 'UTC' });
    const { page, failures } = await openAs(m.merchantId, 'admin', DESKTOP, '#settings');
    await ready(page, 'settings');
    expect(await page.getByTestId('settings-timezone').textContent()).toBe('UTC');
    expect(await page.getByTestId('settings-currency').textContent()).toBe((await settings()).reporting_currency);
    expect(await page.getByTestId('settings-recount-pending').count()).toBe(0);
    await page
      .getByText('Today and this month in the order stats, and every day, week and month of the metrics, start at midnight in this zone.')
      .waitFor();
    const field = page.getByLabel('Reporting time zone');
    // The browser's zone names are offered as suggestions.
    expect(await page.locator('#settings-zones option[value="Asia/Taipei"]').count()).toBe(1);
    expect(await page.locator('#settings-zones option[value="UTC"]').count()).toBe(1);
    // A name the API refuses: its message in an alert, nothing stored.
    await field.fill('+08:00');
    await page.getByRole('button', { name: 'Save' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'The timezone field must be an IANA time zone name, such as UTC, Asia/Taipei or America/New_York.' })
      .waitFor();
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    expect((await settings()).timezone).toBe('UTC');
    await axe(page, 'settings-error');
    // A good one (any letter case): saved in its canonical spelling, and shown.
    await field.fill('asia/taipei');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByTestId('settings-notice').filter({ hasText: 'Saved: the reporting time zone is now Asia/Taipei.' }).waitFor();
    await page.locator('[data-panel="settings"][data-state="ready"] [data-timezone="Asia/Taipei"]').waitFor();
    // Stored at once; its recount runs in the background (no worker here), and both the notice and the panel say so.
    const saved = await settings();
    expect(saved).toMatchObject({ timezone: 'Asia/Taipei', recount: { status: 'pending' } });
    expect(await page.getByTestId('settings-notice').textContent()).toContain('Recount pending: the figures are being recounted');
    const pending = page.getByTestId('settings-recount-pending');
    expect(await pending.textContent()).toContain('Recount pending');
    expect(await pending.getAttribute('data-requested-at')).toBe(saved.recount.requested_at);
    expect(await page.getByRole('alert').count()).toBe(0);
    await shoot(page, 'settings-desktop');
    await axe(page, 'settings');
    // The worker's part: the recount runs to its switch.
    await settleRecounts(m.merchantId);
    expect(await settings()).toMatchObject({ timezone: 'Asia/Taipei', recount: { status: 'done' } });
    // The other views use it at once (no reload), and after a reload (from /backoffice/me).
    const statsDefinitions = async () => {
      await ready(page, 'stats');
      return (await figureDefinitions(page, '[data-panel="stats"]')).map((f) => f.definition);
    };
    await page.getByRole('link', { name: 'Overview' }).click();
    const definitions = await statsDefinitions();
    await ready(page, 'summary');
    expect(await page.getByTestId('summary-settling').count()).toBe(0);
    expect(definitions.filter((n) => n.includes('today (Asia/Taipei)') || n.includes('this month (Asia/Taipei)'))).toHaveLength(3);
    expect(definitions.join(' ')).not.toContain('UTC');
    // The metrics follow it too, and say so: the windows end on today in Taipei.
    const taipeiToday = new Intl.DateTimeFormat('en-CA', {
      timeZone: 'Asia/Taipei',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    }).format(new Date());
    expect(await page.getByTestId('summary-window').textContent()).toContain(`to ${taipeiToday} (Asia/Taipei)`);
    await page.reload();
    expect(await statsDefinitions()).toEqual(definitions);
    // Switched: Settings no longer says a recount is pending.
    await page.getByRole('link', { name: 'Settings' }).click();
    await ready(page, 'settings');
    expect(await page.getByTestId('settings-recount-pending').count()).toBe(0);
    expect(failures).toEqual([]);

    // At phone width the page fits.
    const phone = await openAs(m.merchantId, 'admin', PHONE, '#settings');
    await ready(phone.page, 'settings');
    await fitsPhone(phone, 'settings-phone');
  });

  it('settings: a user reads the time zone and currency, without a way to change them; a recount still running in the background is said', async () => {
    const m = await newMerchant();
    // A zone change whose recount is left to the background (its job; no worker runs here): GET /settings says
    // recount pending, and the reads answer Recount-Pending: true.
    await changeMerchant(m.merchantId, { timezone: 'Asia/Taipei' });
    const read = await api.get('/settings', m.token);
    expect(read.body.data.recount).toMatchObject({ status: 'pending', switched_at: null });
    expect(read.headers.get('recount-pending')).toBe('true');
    const { page, failures } = await openAs(m.merchantId, 'user', DESKTOP, '#settings');
    await ready(page, 'settings');
    // The zone is stored at once; the figures follow it once the recount switches.
    expect(await page.getByTestId('settings-timezone').textContent()).toBe('Asia/Taipei');
    const pending = page.getByTestId('settings-recount-pending');
    expect(await pending.textContent()).toContain('Recount pending');
    expect(await pending.textContent()).toContain('every figure stays that of the settings before the change');
    expect(await pending.getAttribute('data-requested-at')).toBe(read.body.data.recount.requested_at);
    await page.getByText('Only admins can change the time zone.').waitFor();
    expect(await page.getByRole('button', { name: 'Save' }).count()).toBe(0);
    expect(await page.getByLabel('Reporting time zone').count()).toBe(0);
    await shoot(page, 'settings-user-desktop');
    await axe(page, 'settings-user');
    // The overview says its figures are being recounted.
    await page.getByRole('link', { name: 'Overview' }).click();
    await ready(page, 'summary');
    expect(await page.getByTestId('summary-settling').textContent()).toContain('Recount pending');
    await axe(page, 'overview-settling');
    expect(failures).toEqual([]);
  });

  it('exchange rates: an admin sets a USD rate in Settings (a bad rate first: the API’s message by its field); the overview counts the USD MRR, and leaves it out again once removed; a user only reads', async () => {
    const m = await newMerchant();
    const t = m.token;
    // A TWD subscription of 500, and a customer on an imported USD subscription of 100 (the merchant's zone is UTC).
    const local = await ok(api.post('/customers', t, { email: 'local@example.com', name: 'Local' }));
    await ok(
      api.post('/subscriptions', t, {
        customer_id: local.id,
        plan_name: 'Pro',
        mrr: '500',
        billing_cycle: 'monthly',
        started_at: daysAgo(40),
      }),
    );
    const abroad = await ok(api.post('/customers', t, { email: 'abroad@example.com', name: 'Abroad' }));
    const started = daysAgo(35);
    const month = started.slice(0, 7);
    const imported = await ok(
      api.post('/subscriptions/batch', t, {
        subscriptions: [
          {
            external_id: 'usd-1',
            customer_id: abroad.id,
            plan_name: 'Pro',
            billing_cycle: 'monthly',
            mrr: '100',
            currency: 'USD',
            started_at: started,
          },
        ],
      }),
      200,
    );
    expect(imported.results.failed).toEqual([]);
    const summaryOf = async () => (await api.get('/metrics/summary', t)).body.data;
    const start12 = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - 11, 1)).toISOString().slice(0, 10);
    const seriesOf = async () =>
      (await api.get(`/metrics/mrr?interval=month&start_date=${start12}&end_date=${today()}`, t)).body.data.map(
        (e: { date: string; mrr: string; unconverted: Record<string, string> }) => [e.date, e.mrr, JSON.stringify(e.unconverted)],
      );
    const mrrRows = (page: Page) =>
      page
        .locator('[data-testid="mrr-table"] tbody tr')
        .evaluateAll((trs) =>
          trs.map((tr) => [tr.getAttribute('data-date'), tr.getAttribute('data-mrr'), tr.getAttribute('data-unconverted')]),
        );
    const before = await summaryOf();
    expect(before).toMatchObject({ current_mrr: '500.00', unconverted: { USD: '100.00' } });
    // A USD payment today, with no rate for this month: the stats leave it out and say so.
    await ok(
      api.post('/orders', t, {
        order_no: 'USD-TODAY',
        amount: '20',
        currency: 'USD',
        status: 'paid',
        customer_email: 'abroad@example.com',
      }),
    );
    const stats = (await api.get('/orders/stats', t)).body;
    expect(stats.unconverted).toEqual({ USD: { today_revenue: '20.00', monthly_revenue: '20.00' } });

    // The overview says what is left out: the summary's figure, and the MRR table's points.
    const { page, failures } = await openAs(m.merchantId, 'admin', DESKTOP, '#overview');
    await ready(page, 'summary');
    await expectFigures(page, before);
    expect(await definitionOf(page, 'unconverted')).toBe(
      'MRR in other currencies left out for want of an exchange rate; set rates in Settings',
    );
    await ready(page, 'mrr');
    expect(await mrrRows(page)).toEqual(await seriesOf());
    expect(await page.getByTestId('mrr-unconverted').last().textContent()).toMatch(/^USD\s100\.00$/);
    // Above the chart, a line says what the range's figures leave out at its end.
    await page
      .getByTestId('mrr-unconverted-hint')
      .filter({ hasText: /for want of an exchange rate for its month: USD\s100\.00 at the end/ })
      .waitFor();
    await page.locator('[data-panel="mrr"] summary', { hasText: 'MRR movements as a table' }).click();
    await page.getByRole('columnheader', { name: 'Unconverted' }).waitFor();
    // The stats panel names the revenue it leaves out, as the API says.
    await ready(page, 'stats');
    const statsHint = page.getByTestId('stats-unconverted');
    await statsHint.filter({ hasText: /USD\s20\.00 this month \(USD\s20\.00 today\)/ }).waitFor();
    expect(JSON.parse((await statsHint.getAttribute('data-unconverted'))!)).toEqual(stats.unconverted);
    await shoot(page, 'overview-unconverted-desktop');
    await axe(page, 'overview-unconverted');

    // Settings: no rates yet. A rate the API refuses: its message under the rate field, nothing stored.
    await page.getByRole('link', { name: 'Settings' }).click();
    await ready(page, 'exchange-rates');
    await page.locator('[data-panel="exchange-rates"] .state.empty').waitFor();
    await page.getByLabel('Currency', { exact: true }).fill('usd');
    await page.getByLabel('Month').fill(month);
    const rate = page.getByLabel('Rate (TWD per one unit)');
    await rate.fill('abc');
    await page.getByRole('button', { name: 'Set rate' }).click();
    await page.locator('#rate-rate-error').filter({ hasText: 'must be a decimal above 0' }).waitFor();
    expect(await rate.getAttribute('aria-invalid')).toBe('true');
    expect(await rate.getAttribute('aria-describedby')).toBe('rate-rate-hint rate-rate-error');
    await page.getByTestId('rate-error').filter({ hasText: 'The given data was invalid.' }).waitFor();
    expect((await api.get('/exchange-rates', t)).body.data).toEqual([]);
    await axe(page, 'settings-rates-error');
    // 31.5 TWD per USD for the subscription's month: saved, listed, and the API agrees.
    await rate.fill('31.50');
    await page.getByRole('button', { name: 'Set rate' }).click();
    await page
      .getByTestId('rate-notice')
      .filter({ hasText: `Saved: USD in ${month} at 31.5 TWD per USD. Recount pending` })
      .waitFor();
    // The browser's PUT leaves its recount to the worker: run here.
    await settleRecounts(m.merchantId);
    expect(await rate.getAttribute('aria-invalid')).toBe('false');
    expect(await page.getByTestId('rate-error').count()).toBe(0);
    const rates = (await api.get('/exchange-rates', t)).body.data;
    expect(rates).toEqual([{ currency: 'USD', rates: [{ month, rate: '31.5' }] }]);
    await page.locator(`[data-testid="exchange-rates"] tbody tr[data-currency="USD"][data-month="${month}"]`).waitFor();
    expect(await rowsOf(page, 'exchange-rates', ['data-currency', 'data-month', 'data-rate'])).toEqual([
      { 'data-currency': 'USD', 'data-month': month, 'data-rate': '31.5', Currency: 'USD', Month: month, 'Rate (TWD per unit)': '31.5' },
    ]);
    const csv = await download(page, 'rates-csv');
    expect(csv).toEqual({ name: 'exchange-rates.csv', text: `currency,month,rate\r\nUSD,${month},31.5\r\n` });
    await shoot(page, 'settings-rates-desktop');
    await axe(page, 'settings-rates');

    // The overview counts the USD subscription at 31.5: 500 + 3,150, nothing left out.
    const after = await summaryOf();
    expect(after).toMatchObject({ current_mrr: '3650.00', unconverted: {} });
    await page.getByRole('link', { name: 'Overview' }).click();
    await ready(page, 'summary');
    await expectFigures(page, after);
    await ready(page, 'mrr');
    expect(await mrrRows(page)).toEqual(await seriesOf());
    expect(await page.getByTestId('mrr-unconverted').count()).toBe(0);
    expect(await page.getByTestId('mrr-unconverted-hint').count()).toBe(0);

    // A user reads the rates, without the form or a Remove button (the API would refuse: 403).
    const user = await openAs(m.merchantId, 'user', DESKTOP, '#settings');
    await ready(user.page, 'exchange-rates');
    await user.page.getByTestId('rates-read-only').filter({ hasText: 'Only admins can set or remove exchange rates.' }).waitFor();
    expect(await user.page.locator('[data-testid="exchange-rates"] tbody tr').getAttribute('data-rate')).toBe('31.5');
    expect(await user.page.locator('[data-panel="rate-form"]').count()).toBe(0);
    expect(await user.page.getByRole('button', { name: /Set rate|Remove/ }).count()).toBe(0);
    const refused = await api.request('PUT', '/exchange-rates/USD', {
      headers: { authorization: `Bearer ${await backofficeJwt(m.merchantId, 'user')}` },
      body: { rates: [{ month, rate: null }] },
    });
    expect(refused.status).toBe(403);
    await shoot(user.page, 'settings-rates-user-desktop');
    await axe(user.page, 'settings-rates-user');
    expect(user.failures).toEqual([]);

    // The admin removes it: the list is empty again and the overview leaves the USD MRR out again.
    await page.getByRole('link', { name: 'Settings' }).click();
    await ready(page, 'exchange-rates');
    await page.getByRole('button', { name: `Remove the USD rate of ${month}` }).click();
    await page
      .getByTestId('rate-notice')
      .filter({ hasText: `Removed the USD rate of ${month} (it was 31.5). Recount pending` })
      .waitFor();
    await settleRecounts(m.merchantId);
    await page.locator('[data-panel="exchange-rates"][data-state="ready"] .state.empty').waitFor();
    // No month has a rate (the API still lists the currency, with no months).
    expect((await api.get('/exchange-rates', t)).body.data.flatMap((c: { rates: unknown[] }) => c.rates)).toEqual([]);
    const removed = await summaryOf();
    expect(removed).toEqual(before);
    await page.getByRole('link', { name: 'Overview' }).click();
    await ready(page, 'summary');
    await expectFigures(page, removed);
    expect(failures).toEqual([]);

    // At phone width, with a rate set again, the rates are cards and the page fits.
    await ok(api.request('PUT', '/exchange-rates/USD', { token: t, body: { rates: [{ month, rate: '31.5' }] } }), 200);
    const phone = await openAs(m.merchantId, 'admin', PHONE, '#settings');
    await ready(phone.page, 'exchange-rates');
    await phone.page.locator('[data-testid="exchange-rates"] tbody tr').waitFor();
    await fitsPhone(phone, 'settings-rates-phone');
  }, 90_000);

  it('exchange rates: the last 12 months of each currency are listed until all are asked for; the CSV has every rate', async () => {
    const m = await newMerchant();
    const months = (year: number, n: number) =>
      Array.from({ length: n }, (_, i) => `${year + Math.floor(i / 12)}-${String((i % 12) + 1).padStart(2, '0')}`);
    await ok(
      api.request('PUT', '/exchange-rates/EUR', {
        token: m.token,
        body: { rates: months(2025, 14).map((month) => ({ month, rate: '34.5' })) },
      }),
      200,
    );
    await ok(
      api.request('PUT', '/exchange-rates/USD', {
        token: m.token,
        body: { rates: months(2026, 2).map((month) => ({ month, rate: '31.5' })) },
      }),
      200,
    );
    const { page, failures } = await openAs(m.merchantId, 'user', DESKTOP, '#settings');
    await ready(page, 'exchange-rates');
    const listed = () =>
      page
        .locator('[data-testid="exchange-rates"] tbody tr')
        .evaluateAll((rows) => rows.map((r) => `${r.getAttribute('data-currency')} ${r.getAttribute('data-month')}`));
    // EUR's last 12 (March 2025 to February 2026) and USD's 2.
    expect(await listed()).toEqual([
      ...months(2025, 14)
        .slice(2)
        .map((mo) => `EUR ${mo}`),
      'USD 2026-01',
      'USD 2026-02',
    ]);
    expect(await page.getByTestId('rates-count').textContent()).toContain('14 of 16 rates (the CSV has them all)');
    await page.getByRole('button', { name: 'Show all 16 rates' }).click();
    expect(await listed()).toHaveLength(16);
    await axe(page, 'settings-rates-all');
    await page.getByRole('button', { name: 'Show the last 12 months only' }).click();
    expect(await listed()).toHaveLength(14);
    const [file] = await Promise.all([page.waitForEvent('download'), page.getByTestId('rates-csv').click()]);
    expect(
      readFileSync((await file.path())!, 'utf8')
        .trim()
        .split('\n'),
    ).toHaveLength(1 + 16);
    expect(failures).toEqual([]);
  });

  it('overview: a metadata filter reads the figures of only the matching customers, with the segment, and is kept in the address', async () => {
    const m = await newMerchant();
    const t = m.token;
    for (const [who, tier, plan, mrr] of [
      ['gold', 'gold', 'Pro', '300'],
      ['silver', 'silver', 'Basic', '500'],
    ]) {
      const c = await ok(api.post('/customers', t, { email: `${who}@example.com`, name: who, metadata: { plan_tier: tier } }));
      await ok(
        api.post('/subscriptions', t, { customer_id: c.id, plan_name: plan, mrr, billing_cycle: 'monthly', started_at: daysAgo(40) }),
      );
    }
    const summaryOf = async (q: string) => (await api.get(`/metrics/summary${q}`, t)).body.data;
    const whole = await summaryOf('');
    const gold = await summaryOf('?metadata.plan_tier=gold');
    expect([whole.current_mrr, gold.current_mrr]).toEqual(['800.00', '300.00']);
    const summaryLoaded = (segment: string, metadata: string) =>
      page.locator(`[data-panel="summary"][data-state="ready"] dl[data-segment="${segment}"][data-metadata="${metadata}"]`).waitFor();

    const { page, failures } = await openAs(m.merchantId, 'user', DESKTOP, '#overview');
    await summaryLoaded('', '');
    await expectFigures(page, whole);
    await page.getByTestId('segment-words').getByText('slower on large merchants').waitFor();
    await page.getByTestId('metadata-key').fill('plan_tier');
    await page.getByTestId('metadata-value').fill('gold');
    await page.getByRole('button', { name: 'Apply' }).click();
    await summaryLoaded('', 'plan_tier=gold');
    await expectFigures(page, gold);
    expect(await page.getByTestId('summary-window').textContent()).toContain('of the customers whose metadata plan_tier is “gold”');
    // The MRR series and the cohorts are the matching customers' too.
    await page.locator('[data-panel="mrr"][data-state="ready"] dl[data-metadata="plan_tier=gold"]').waitFor();
    // The movements list has no such filter: no figure opens its customers.
    expect(await page.getByTestId('drill-hint').getAttribute('data-drillable')).toBe('false');
    expect(await page.locator('[data-testid="mrr-table"] button').count()).toBe(0);
    // Nor does the chart's bar: no hint, no pointer, a click on the gold customer's new bar does nothing.
    expect(await page.getByTestId('chart-hint').count()).toBe(0);
    const goldMonth = await page
      .locator('[data-testid="mrr-table"] tbody tr')
      .filter({ has: page.locator('td[data-type="new"]:not([data-value="0.00"])') })
      .getAttribute('data-date');
    const goldBar = await barSpot(page, goldMonth!, 'new');
    expect(goldBar.canvas, 'the gold new bar is drawn there').toBe(goldBar.legend);
    await page.mouse.click(goldBar.x, goldBar.y);
    await frames(page);
    expect(await page.locator('[data-panel="drill"]').count()).toBe(0);
    expect(await page.locator('[data-testid="mrr-chart"] .u-over').evaluate((el) => el.style.cursor)).toBe('');
    const start12 = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - 11, 1)).toISOString().slice(0, 10);
    const series = (await api.get(`/metrics/mrr?interval=month&start_date=${start12}&end_date=${today()}&metadata.plan_tier=gold`, t)).body;
    expect(
      await page
        .locator('[data-testid="mrr-table"] tbody tr')
        .evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-date'), tr.getAttribute('data-mrr')])),
    ).toEqual(series.data.map((e: { date: string; mrr: string }) => [e.date, e.mrr]));
    await expectFigures(page, { range_mrr: '300.00' });
    await page.locator('[data-panel="cohorts"][data-state="ready"] [data-metadata="plan_tier=gold"]').waitFor();
    const cohorts = (await api.get('/metrics/cohorts?metadata.plan_tier=gold', t)).body.data.filter((c: any) => c.customers > 0);
    expect(await page.locator('[data-testid="cohorts"] tbody td:nth-child(2)').allTextContents()).toEqual(
      cohorts.map((c: any) => String(c.customers)),
    );
    // Kept in the address: a reload shows the same figures.
    expect(new URL(page.url()).searchParams.get('metadata.plan_tier')).toBe('gold');
    await page.reload();
    await summaryLoaded('', 'plan_tier=gold');
    await expectFigures(page, gold);
    expect(await page.getByTestId('metadata-value').inputValue()).toBe('gold');
    await shoot(page, 'overview-metadata-desktop');
    await axe(page, 'overview-metadata');
    // With a plan the gold customers are not on: both filters apply (none left).
    await page.getByTestId('segment').selectOption('plan:Basic');
    await summaryLoaded('plan:Basic', 'plan_tier=gold');
    const none = await summaryOf('?plan=Basic&metadata.plan_tier=gold');
    expect(none.current_mrr).toBe('0.00');
    await expectFigures(page, none);
    // Clear: the plan alone.
    await page.getByRole('button', { name: 'Clear' }).click();
    await summaryLoaded('plan:Basic', '');
    await expectFigures(page, await summaryOf('?plan=Basic'));
    expect(new URL(page.url()).searchParams.has('metadata.plan_tier')).toBe(false);
    expect(await page.getByTestId('metadata-key').inputValue()).toBe('');
    expect(failures).toEqual([]);

    // At phone width, opened from a shared link, the bar fits.
    const phone = await openAs(m.merchantId, 'user', PHONE, '?metadata.plan_tier=gold#overview');
    await phone.page.locator('[data-panel="summary"][data-state="ready"] dl[data-metadata="plan_tier=gold"]').waitFor();
    await ready(phone.page, 'mrr');
    await fitsPhone(phone, 'overview-metadata-phone');
  });

  it('overview: a movement figure of the MRR table lists the customers behind it, as GET /metrics/movements (More, CSV, Close)', async () => {
    const m = await newMerchant();
    const t = m.token;
    const now = new Date();
    const [y, mo] = [now.getUTCFullYear(), now.getUTCMonth()];
    const at = (month: number, day: number) => new Date(Date.UTC(y, month, day)).toISOString().replace(/\.\d+Z$/, 'Z');
    const [lastMonth, thisMonth, lastMonthEnd] = [at(mo - 1, 1), at(mo, 1), at(mo, 0)].map((d) => d.slice(0, 10));
    // Last month: 22 new customers (two pages of the drill-down), two of them churned on the 25th; this month: one more.
    const subscriptions = [
      ...Array.from({ length: 22 }, (_, i) => ({
        external_id: `drill-${i}`,
        customer_email: `drill${i}@example.com`,
        customer_name: `Drill ${i}`,
        plan_name: 'Pro',
        mrr: String(100 + i * 10),
        billing_cycle: 'monthly',
        started_at: at(mo - 1, 2 + (i % 20)),
        ...(i < 2 ? { cancelled_at: at(mo - 1, 25) } : {}),
      })),
      {
        external_id: 'drill-now',
        customer_email: 'now@example.com',
        plan_name: 'Pro',
        mrr: '75',
        billing_cycle: 'monthly',
        started_at: at(mo, 1),
      },
    ];
    const batch = await ok(api.post('/subscriptions/batch', t, { subscriptions }), 200);
    expect(batch.created, JSON.stringify(batch)).toBe(23);
    /** Every movement of a type in the days, read through the API's pages. */
    const movements = async (type: string, start: string, end: string) => {
      const rows: any[] = [];
      let cursor = '';
      do {
        const body = (await api.get(`/metrics/movements?start_date=${start}&end_date=${end}&type=${type}&per_page=100${cursor}`, t)).body;
        rows.push(...body.data);
        cursor = body.meta.next_cursor ? `&cursor=${encodeURIComponent(body.meta.next_cursor)}` : '';
      } while (cursor);
      return rows;
    };
    const cents = (amounts: string[]) => amounts.reduce((sum, a) => sum + Math.round(Number(a) * 100), 0);
    const drillRows = () => rowsOf(page, 'drill', ['data-customer-id', 'data-date', 'data-amount', 'data-before', 'data-after']);
    const expected = (rows: any[]) =>
      rows.map((r) => ({
        'data-customer-id': String(r.customer_id),
        'data-date': r.date,
        'data-amount': r.amount,
        'data-before': r.mrr_before,
        'data-after': r.mrr_after,
        Customer: r.customer_name ?? r.customer_email ?? `#${r.customer_id}`,
        Date: shown(r.date),
        Amount: expect.any(String),
        'MRR before → after': expect.any(String),
        'Because of': `Subscription #${r.subscription_id}`,
      }));
    /** The drill-down of a figure, loaded, with focus on its heading. */
    const drillOpened = async (p: Page, date: string, type: string) => {
      await p
        .locator(`[data-panel="drill"][data-state="ready"] [data-testid="drill-note"][data-type="${type}"][data-start="${date}"]`)
        .waitFor();
      await p.waitForFunction(() => document.activeElement?.id === 'drill-title', null, { timeout: 5_000 });
    };
    /** Opens a figure of the table from the keyboard; its figure as the API gave it in the series. */
    const openFigure = async (p: Page, date: string, type: string) => {
      const cell = p.locator(`[data-testid="mrr-table"] tr[data-date="${date}"] td[data-type="${type}"]`);
      await cell.getByRole('button').focus();
      await p.keyboard.press('Enter');
      await drillOpened(p, date, type);
      return (await cell.getAttribute('data-value'))!;
    };
    /** Hovers a bar of the chart (the pointer says it opens), checking the canvas draws its movement there, and clicks it. */
    const clickBar = async (p: Page, date: string, type: string) => {
      const bar = await barSpot(p, date, type);
      expect(bar.height, `${type} of ${date}: tall enough to aim at`).toBeGreaterThanOrEqual(6);
      expect(bar.canvas, `${type} of ${date} drawn at its spot`).toBe(bar.legend);
      await p.mouse.move(bar.x, bar.y);
      await p.waitForFunction(() => document.querySelector<HTMLElement>('[data-testid="mrr-chart"] .u-over')?.style.cursor === 'pointer');
      await p.mouse.click(bar.x, bar.y);
    };

    const { page, failures } = await openAs(m.merchantId, 'user', DESKTOP, '#overview');
    await ready(page, 'mrr');
    await page.getByText('MRR movements as a table').click();
    expect(await page.getByTestId('drill-hint').getAttribute('data-drillable')).toBe('true');
    // Zero figures are no buttons.
    expect(await page.locator('[data-testid="mrr-table"] td[data-value="0.00"] button').count()).toBe(0);

    // New, last month: 22 customers, twenty shown, More shows the other two; their amounts sum to the figure.
    const newFigure = await openFigure(page, lastMonth, 'new');
    expect(newFigure).toBe('4510.00');
    expect(await page.locator('#drill-title').textContent()).toBe(`Customers behind new in ${lastMonth} to ${lastMonthEnd}`);
    const news = await movements('new', lastMonth, lastMonthEnd);
    expect(news).toHaveLength(22);
    expect(await drillRows()).toEqual(expected(news.slice(0, 20)));
    expect(await page.getByTestId('drill-count').textContent()).toBe('Showing 20 of 22');
    await page.getByTestId('drill-more').click();
    await page.getByTestId('drill-count').filter({ hasText: 'Showing 22 of 22' }).waitFor();
    expect(await page.getByTestId('drill-more').count()).toBe(0);
    expect(await drillRows()).toEqual(expected(news));
    expect(cents(news.map((r) => r.amount))).toBe(cents([newFigure]));
    await shoot(page, 'overview-drill-desktop');
    await axe(page, 'overview-drill');

    // Churn, last month: the two cancelled customers; the CSV is the API's; Close returns to the figure.
    const churnFigure = await openFigure(page, lastMonth, 'churn');
    expect(churnFigure).toBe('-210.00');
    const churns = await movements('churn', lastMonth, lastMonthEnd);
    expect(await drillRows()).toEqual(expected(churns));
    expect(cents(churns.map((r) => r.amount))).toBe(cents([churnFigure]));
    expect(await page.getByTestId('drill-count').textContent()).toBe('Showing 2 of 2');
    const [file] = await Promise.all([page.waitForEvent('download'), page.getByTestId('drill-csv').click()]);
    expect(file.suggestedFilename()).toBe(`mrr-churn-${lastMonth}-to-${lastMonthEnd}.csv`);
    expect(readFileSync((await file.path())!, 'utf8')).toBe(
      await csvOf(`/metrics/movements?start_date=${lastMonth}&end_date=${lastMonthEnd}&type=churn&per_page=100`, t),
    );
    await page.getByTestId('drill-close').click();
    expect(await page.locator('[data-panel="drill"]').count()).toBe(0);
    await page.waitForFunction((id) => document.activeElement?.getAttribute('data-drill') === id, `${lastMonth}:churn`, { timeout: 5_000 });

    // The chart's bars open the same lists with the mouse: last month's new bar, then its churn bar
    // (the one open again closes it); off the bars (above last month's stack, a month of zeros) nothing opens.
    expect(await page.getByTestId('chart-hint').textContent()).toBe(
      'Click a bar to list its customers, or pick a figure in the table below.',
    );
    await clickBar(page, lastMonth, 'new');
    await drillOpened(page, lastMonth, 'new');
    expect(await drillRows()).toEqual(expected(news.slice(0, 20)));
    expect(await page.getByTestId('drill-count').textContent()).toBe('Showing 20 of 22');
    expect(await page.locator(`[data-drill="${lastMonth}:new"]`).getAttribute('aria-pressed')).toBe('true');
    // The voluntary churn's bar (no churn here is delinquent) opens the churn figure's list.
    await clickBar(page, lastMonth, 'voluntary_churn');
    await drillOpened(page, lastMonth, 'churn');
    expect(await page.locator('#drill-title').textContent()).toBe(`Customers behind churn in ${lastMonth} to ${lastMonthEnd}`);
    expect(await drillRows()).toEqual(expected(churns));
    await shoot(page, 'overview-drill-bar-desktop');
    await axe(page, 'overview-drill-bar');
    await clickBar(page, lastMonth, 'voluntary_churn');
    await page.locator('[data-panel="drill"]').waitFor({ state: 'detached' });
    const firstMonth = (await page.locator('[data-testid="mrr-table"] tbody tr').first().getAttribute('data-date'))!;
    expect(await page.locator(`[data-testid="mrr-table"] tr[data-date="${firstMonth}"] button`).count()).toBe(0);
    for (const [date, type] of [
      [lastMonth, 'above'],
      [firstMonth, 'zeros'],
    ]) {
      const off = await barSpot(page, date, 'new', true);
      await page.mouse.click(off.x, off.y);
      await frames(page);
      expect(await page.locator('[data-panel="drill"]').count(), `a click ${type}`).toBe(0);
      expect(await page.locator('[data-testid="mrr-chart"] .u-over').evaluate((el) => el.style.cursor), type).toBe('');
    }
    expect(failures).toEqual([]);

    // Phone width: this month's new customer (its bucket ends today), the page not scrolling sideways.
    const phone = await openAs(m.merchantId, 'user', PHONE, '#overview');
    await ready(phone.page, 'mrr');
    await phone.page.getByText('MRR movements as a table').click();
    const nowFigure = await openFigure(phone.page, thisMonth, 'new');
    const nows = await movements('new', thisMonth, today());
    expect(nows.map((r) => r.amount)).toEqual([nowFigure]);
    expect(await phone.page.locator('[data-testid="drill"] tbody tr').getAttribute('data-customer-id')).toBe(String(nows[0].customer_id));
    await fitsPhone(phone, 'overview-drill-phone');
  });

  it('phone width: the new views fit, and every column of a list is on screen (rows become cards)', async () => {
    const { page, failures } = await open('admin', '#customers', PHONE);
    await ok(api.post('/webhook-endpoints', merchant.token, { url: receiver.url, events: ['*'] }));
    /** Every cell of the table's first row lies inside the screen's width, and is not empty. */
    const onScreen = async (testId: string) => {
      const cells = await page
        .locator(`[data-testid="${testId}"] tbody tr`)
        .first()
        .locator('th, td')
        .evaluateAll((els) => els.map((el) => ({ label: el.getAttribute('data-label'), ...el.getBoundingClientRect().toJSON() })));
      expect(cells.length, testId).toBeGreaterThan(2);
      for (const c of cells) {
        expect(c.width, `${testId} ${c.label}`).toBeGreaterThan(0);
        expect(c.left, `${testId} ${c.label}`).toBeGreaterThanOrEqual(0);
        expect(c.right, `${testId} ${c.label}`).toBeLessThanOrEqual(PHONE.width);
      }
    };
    const views: [string, string[], string][] = [
      ['#customers', ['customers'], 'customers-phone'],
      [`#customers/${ids.ana}`, ['customer-subscriptions', 'customer-orders', 'activities'], 'customer-phone'],
      ['#subscriptions', ['subscriptions'], 'subscriptions-phone'],
      ['#activity', ['orders', 'events'], 'activity-lists-phone'],
      ['#webhooks', ['endpoints'], 'webhooks-manage-phone'],
    ];
    for (const [hash, tables, name] of views) {
      await page.goto(`${origin()}/${hash}`);
      for (const t of tables) {
        await page.locator(`[data-testid="${t}"] tbody tr`).first().waitFor({ timeout: 20_000 });
        await onScreen(t);
      }
      await noSideScroll(page);
      await shoot(page, name);
    }
    await axe(page, 'webhooks-phone');
    await page.goto(`${origin()}/#customers/${ids.ana}`);
    await ready(page, 'activities');
    await axe(page, 'customer-phone');
    expect(failures).toEqual([]);
  });
});
