/// <reference lib="dom" />
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { newMerchant } from '../support/api.ts';
import { changeMerchant } from '#lib/settings/service';
import {
  axe,
  DESKTOP,
  expectDefinitionsOnDemand,
  expectFigures,
  hasChromium,
  noSideScroll,
  overflowingFigures,
  rowsOf,
  shown,
  PHONE,
  ready,
  shoot,
  today,
  useDashboard,
  type Viewport,
} from './browser.ts';

/**
 * Trials, failed renewals and the committed MRR on the dashboard, end to end (the harness of
 * test/web/browser.ts), for a TWD merchant whose MRRs are in the millions: the overview's *Trials
 * and failed payments* row, the movements chart's churn split into voluntary and delinquent, the
 * committed MRR after today, the Subscriptions view's past-due list and five statuses, and the
 * event types of trials and failed renewals; every figure and row equal to the API's answer for
 * the seeded data, none running past its card, axe-clean at desktop and phone width.
 */
const { api, open: openAs } = useDashboard('test/web/dashboard-trials.e2e.test.ts', 'web-dist-trials');

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
/** `n` months before this one (UTC, the merchant's zone), on `day` at 10:00. */
const monthsAgo = (n: number, day = 3) => {
  const d = new Date();
  return iso(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - n, day, 10));
};
const daysAgo = (n: number) => iso(Date.now() - n * 86_400_000);
const firstOfMonth = (n: number) => `${monthsAgo(n).slice(0, 7)}-01`;
const dayBefore = (day: string) => iso(Date.parse(`${day}T00:00:00Z`) - 86_400_000).slice(0, 10);
const noOverflow = async (page: Page) => expect(await overflowingFigures(page)).toEqual([]);

describe.skipIf(!hasChromium)('trials, failed renewals and committed MRR in Chromium', { timeout: 60_000 }, () => {
  let merchant: { merchantId: string; token: string };
  const get = async (path: string) => {
    const r = await api.get(path, merchant.token);
    expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
    return r.body;
  };
  const open = (viewport?: Viewport, hash = '') => openAs(merchant.merchantId, 'admin', viewport, hash);

  beforeAll(async () => {
    merchant = await newMerchant(undefined, 'TWD');
    const t = merchant.token;
    const send = async (method: 'post' | 'put', path: string, body: unknown, status = method === 'post' ? 201 : 200) => {
      const r = await api[method](path, t, body);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(status);
      return r.body.data;
    };
    // Every subscription in one batch (its customers by email, named or not), back-dated: trials one 14 months ago (the
    // range before), two converted and one cancelled during its trial in the last 12 months, one running (converting in
    // 40 days: a committed conversion); five to fail a renewal; one cancelled now (voluntary churn); one to cancel later.
    const sub = (external_id: string, email: string, name: string | null, mrr: string, started_at: string, more = {}) => ({
      external_id,
      customer_email: email,
      ...(name ? { customer_name: name } : {}),
      plan_name: 'Scale',
      billing_cycle: 'monthly',
      mrr,
      started_at,
      ...more,
    });
    const subscriptions = [
      sub('t0', 'early@example.com', null, '1500000.00', monthsAgo(14, 3), { trial_ends_at: monthsAgo(14, 17) }),
      sub('t1', 'won@example.com', 'Trial Won', '12345678.90', monthsAgo(4, 3), { trial_ends_at: monthsAgo(4, 17) }),
      sub('t2', 'trial-b@example.com', null, '23456789.01', monthsAgo(3, 5), { trial_ends_at: monthsAgo(3, 19) }),
      sub('t3', 'lost@example.com', 'Trial Lost', '8000000.00', monthsAgo(2, 2), {
        trial_ends_at: monthsAgo(2, 16),
        cancelled_at: monthsAgo(2, 9),
        cancel_reason: 'too dear',
      }),
      sub('t4', 'running@example.com', 'Trial Running', '5000000.00', daysAgo(3), { trial_ends_at: iso(Date.now() + 40 * 86_400_000) }),
      sub('recovered', 'recovered@example.com', 'Recovered Co', '3000000.00', monthsAgo(6, 8)),
      sub('big', 'big@example.com', 'Past Due Big', '48765432.10', monthsAgo(6, 4)),
      sub('late', 'late-payer@example.com', null, '7654321.00', monthsAgo(6, 6)),
      sub('delinquent', 'delinquent@example.com', 'Delinquent Co', '9999999.99', monthsAgo(8, 8)),
      sub('leaver', 'leaver@example.com', 'Voluntary Leaver', '4000000.00', monthsAgo(7, 3), {
        cancelled_at: daysAgo(0.01),
        cancel_reason: 'switching',
      }),
      sub('later', 'later@example.com', 'Leaving Later', '2500000.00', monthsAgo(5, 3)),
    ];
    const batch = await send('post', '/subscriptions/batch', { subscriptions }, 200);
    expect(batch.created, JSON.stringify(batch)).toBe(subscriptions.length);
    const listed = (await get('/subscriptions?per_page=100')).data;
    const id = (external: string) => listed.find((s: { external_id: string }) => s.external_id === external).id as number;
    const pastDue = (external: string, failed: string) => send('put', `/subscriptions/${id(external)}/past-due`, { failed_at: failed });
    // A recovery back-dated past the delinquency period is refused (the cancellation comes first): 90 days while recording it.
    // (Set in the process: PUT /settings with delinquency_days answers 500 while the merchant has a token, its function not
    // allowed to write the token's copy.)
    const delinquency = async (days: number) => {
      expect((await changeMerchant(merchant.merchantId, { delinquency_days: days })).delinquency_days).toBe(days);
    };
    await delinquency(90);
    await pastDue('recovered', monthsAgo(2, 10));
    await send('put', `/subscriptions/${id('recovered')}/recover`, { recovered_at: monthsAgo(2, 14) });
    await delinquency(30);
    // Two past due now (5 and 20 days).
    await pastDue('big', daysAgo(5));
    await pastDue('late', daysAgo(20));
    // Past due from two months ago: its 30 days ran out; the next change applies the delinquent cancellation first.
    await pastDue('delinquent', monthsAgo(2, 1));
    await send('put', `/subscriptions/${id('delinquent')}/recover`, {}, 422);
    expect((await get(`/subscriptions/${id('delinquent')}`)).data).toMatchObject({ status: 'cancelled', cancel_reason: 'delinquent' });
    // A cancellation scheduled in 45 days.
    await send('put', `/subscriptions/${id('later')}/cancel`, { cancelled_at: iso(Date.now() + 45 * 86_400_000) });
  }, 120_000);

  const range12 = () => `start_date=${firstOfMonth(11)}&end_date=${today()}`;
  const before12 = () => `start_date=${firstOfMonth(23)}&end_date=${dayBefore(firstOfMonth(11))}`;
  /** The trials row as the API gives it: the range's summaries, the range before's, and the MRR past due now and at last month's end. */
  const trialsRow = async () => {
    const [trials, trialsBefore, recovery, recoveryBefore, mrr] = [
      await get(`/metrics/trials?interval=month&${range12()}`),
      await get(`/metrics/trials?interval=year&${before12()}`),
      await get(`/metrics/recovery?interval=month&${range12()}`),
      await get(`/metrics/recovery?interval=year&${before12()}`),
      await get(`/metrics/mrr?interval=month&${range12()}`),
    ];
    return {
      trials,
      recovery,
      mrr,
      now: {
        headline_trials_started: trials.summary.trials_started,
        headline_trial_conversion: trials.summary.conversion_rate,
        headline_recovery_rate: recovery.summary.recovery_rate,
        headline_past_due_mrr: mrr.data.at(-1).past_due_mrr,
      },
      before: {
        headline_trials_started: trialsBefore.summary.trials_started,
        headline_trial_conversion: trialsBefore.summary.conversion_rate,
        headline_recovery_rate: recoveryBefore.summary.recovery_rate,
        headline_past_due_mrr: mrr.data.at(-2).past_due_mrr,
      },
    };
  };

  it('overview: the trials and failed payments row, the churn split and the committed MRR equal the API; definitions on demand', async () => {
    const { page, failures } = await open();
    for (const panel of ['headline', 'trials', 'mrr']) await ready(page, panel);
    const row = await trialsRow();
    // The seeded data: four trials in the range (two converted, one cancelled, one running), one before it;
    // one recovered and one delinquent episode in the range (none before it); two subscriptions past due now.
    expect(row.trials.summary).toMatchObject({ trials_started: 4, converted: 2, cancelled: 1, still_trialing: 1, conversion_rate: 66.67 });
    expect(row.before).toMatchObject({ headline_trials_started: 1, headline_trial_conversion: 100, headline_recovery_rate: null });
    expect(row.recovery.summary).toMatchObject({ recovery_rate: 50, recovered: { subscriptions: 1 }, churned: { subscriptions: 1 } });
    expect(row.now.headline_past_due_mrr).toBe('56419753.10');
    await expectFigures(page, row.now);
    for (const [id, value] of Object.entries(row.before))
      expect(await page.locator(`[data-figure="${id}"]`).getAttribute('data-previous'), id).toBe(value === null ? '' : String(value));
    // Each change in words against the range before (past-due MRR: last month's end), a trend line each, one row across.
    expect(await page.getByTestId('headline_trials_started-change').textContent()).toContain('up 300.0 % from the previous 12 months');
    expect(await page.getByTestId('headline_trial_conversion-change').textContent()).toContain(
      'down 33.33 points from the previous 12 months',
    );
    expect(await page.getByTestId('headline_recovery_rate-change').textContent()).toContain(
      'no figure in the previous 12 months to compare',
    );
    expect(await page.getByTestId('headline_past_due_mrr-change').textContent()).toMatch(/(up|down|no change).* last month/);
    expect(await page.locator('[data-panel="trials"] svg.spark').count()).toBe(4);
    const tops = await page
      .locator('[data-panel="trials"] .headline > [data-figure]')
      .evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().top)));
    expect(new Set(tops).size).toBe(1);
    expect(await page.locator('main .grid > *').evaluateAll((els) => els.slice(0, 2).map((e) => e.getAttribute('data-panel')))).toEqual([
      'headline',
      'trials',
    ]);
    expect(await page.getByTestId('trials-window').textContent()).toContain(`${firstOfMonth(11)} to ${today()}`);
    // Past-due MRR in the millions: short on screen, exact for screen readers and on hover.
    expect(await page.locator('[data-figure="headline_past_due_mrr"] dd.value [aria-hidden="true"]').textContent()).toMatch(/M$/);
    const defs = Object.fromEntries(
      (await expectDefinitionsOnDemand(page, '[data-panel="trials"]')).map((f) => [f.id, f.definition] as [string, string]),
    );
    expect(defs.headline_trial_conversion).toContain('converted ÷ (started − still trialing)');
    expect(defs.headline_recovery_rate).toContain('1 recovered');
    expect(defs.headline_trials_started).toContain(`in ${firstOfMonth(11)} to ${today()}`);

    // The movements chart: churn as two labelled layers (the delinquent one hatched), the table's figures the API's.
    const legend = await page.locator('[data-panel="mrr"] .legend span').allTextContents();
    expect(legend.map((l) => l.trim())).toEqual(
      expect.arrayContaining(['Voluntary churn', 'Delinquent churn (failed payments)', 'Committed MRR, scheduled (after today)']),
    );
    expect(await page.locator('[data-panel="mrr"] .legend i.hatch').count()).toBe(1);
    expect(
      await page
        .locator('[data-testid="mrr-table"] tbody tr')
        .evaluateAll((trs) =>
          trs.map((tr) =>
            ['churn', 'voluntary_churn', 'delinquent_churn', 'past_due_mrr'].map(
              (t) => tr.querySelector(`td[data-type="${t}"]`)?.getAttribute('data-value') ?? null,
            ),
          ),
        ),
    ).toEqual(row.mrr.data.map((e: any) => [e.churn, e.voluntary_churn, e.delinquent_churn, e.past_due_mrr]));
    expect(row.mrr.data.some((e: any) => e.delinquent_churn === '-9999999.99')).toBe(true);
    expect(row.mrr.data.some((e: any) => e.voluntary_churn === '-4000000.00')).toBe(true);

    // The committed MRR after today: the forecast's month ends, dashed in the chart, and as a table.
    const forecast = await get('/metrics/forecast?months=6');
    expect(
      await rowsOf(page, 'committed-table', ['data-date', 'data-committed', 'data-new', 'data-churn', 'data-delinquent']).then((rows) =>
        rows.map((r) => [r['data-date'], r['data-committed'], r['data-new'], r['data-churn'], r['data-delinquent']]),
      ),
    ).toEqual(forecast.data.map((f: any) => [f.date, f.committed_mrr, f.new, f.churn, f.delinquent_churn]));
    // The running trial's conversion, and the two past-due subscriptions' delinquent cancellations unless recovered.
    const sum = (key: string) => forecast.data.reduce((cents: number, f: any) => cents + Math.round(Number(f[key]) * 100), 0);
    expect([sum('new'), sum('delinquent_churn'), sum('churn')]).toEqual([500_000_000, -5_641_975_310, -5_891_975_310]);
    expect(await page.getByTestId('committed-note').getAttribute('data-committed')).toBe(forecast.summary.committed_mrr);
    expect(await page.getByTestId('mrr-chart').getAttribute('aria-label')).toContain('After today, a dashed line: the committed MRR');
    // Drawn after the actual points: each month end's committed MRR is a point of the committed line's colour on the canvas.
    const over = page.locator('[data-testid="mrr-chart"] .u-over[data-committed-points="6"]');
    await over.scrollIntoViewIfNeeded();
    const scale = await over.evaluate((el) => Object.fromEntries(Object.entries(el.dataset).map(([k, v]) => [k, Number(v)])));
    expect(scale.actualPoints).toBe(row.mrr.data.length);
    const box = (await over.boundingBox())!;
    const colours = await page.evaluate(
      (spots: [number, number][]) => {
        const canvas = document.querySelector<HTMLCanvasElement>('[data-testid="mrr-chart"] canvas')!;
        const r = canvas.getBoundingClientRect();
        const k = canvas.width / r.width;
        return spots.map(([x, y]) => {
          const [red, green, blue] = canvas
            .getContext('2d')!
            .getImageData(Math.round((x - r.left) * k), Math.round((y - r.top) * k), 1, 1).data;
          return `rgb(${red}, ${green}, ${blue})`;
        });
      },
      forecast.data.map((f: any, i: number) => [
        box.x + ((scale.actualPoints + i - scale.xMin) / (scale.xMax - scale.xMin)) * box.width,
        box.y + ((scale.mrrMax - Number(f.committed_mrr)) / (scale.mrrMax - scale.mrrMin)) * box.height,
      ]),
    );
    expect(colours).toEqual(forecast.data.map(() => 'rgb(11, 122, 117)'));
    await noOverflow(page);
    await page.getByText('Committed MRR as a table').click();
    await shoot(page, 'trials-overview-desktop');
    await axe(page, 'trials-overview');

    // At phone width (the same page, narrowed): the trials row two by two, every figure within its card, nothing sideways.
    await page.setViewportSize(PHONE);
    await page.locator('[data-panel="trials"]').scrollIntoViewIfNeeded();
    await expectFigures(page, row.now);
    await noOverflow(page);
    await noSideScroll(page);
    await shoot(page, 'trials-overview-phone');
    await axe(page, 'trials-overview-phone');
    expect(failures).toEqual([]);
  }, 90_000);

  it('subscriptions: the past-due list (who, MRR, failure, days until delinquent), all five statuses; the new event types', async () => {
    const { page, failures } = await open(undefined, '#subscriptions');
    for (const panel of ['past-due', 'subscriptions']) await ready(page, panel);
    const days = (await get('/settings')).data.delinquency_days;
    expect(days).toBe(30);
    const pastDue = (await get('/subscriptions?status=past_due&per_page=20')).data;
    expect(pastDue).toHaveLength(2);
    const dueAt = (s: any) => iso(Date.parse(s.failed_at) + days * 86_400_000);
    expect(await rowsOf(page, 'past-due', ['data-subscription-id', 'data-mrr', 'data-failed-at', 'data-delinquent-at'])).toEqual(
      pastDue.map((s: any) => ({
        'data-subscription-id': String(s.id),
        'data-mrr': s.mrr,
        'data-failed-at': s.failed_at,
        'data-delinquent-at': dueAt(s),
        Customer: s.customer_name ?? s.customer_email,
        Plan: s.plan_name,
        MRR: expect.stringMatching(/\d/),
        Failed: shown(s.failed_at),
        'Cancelled as delinquent': shown(dueAt(s)),
        'Days left': `in ${Math.ceil((Date.parse(dueAt(s)) - Date.now()) / 86_400_000)} days`,
      })),
    );
    const left = await page.locator('[data-testid="past-due"] td[data-label="Days left"]').allTextContents();
    expect(left.sort()).toEqual(['in 10 days', 'in 25 days']);
    // Named by name, else e-mail.
    expect(await page.locator('[data-testid="past-due"] a[href^="#customers/"]').allTextContents()).toEqual(
      expect.arrayContaining(['Past Due Big', 'late-payer@example.com']),
    );
    expect(await page.getByTestId('past-due-note').textContent()).toContain('30 days after the failure');

    // The status filter offers every status; trialing and past due have their badges.
    const select = page.getByTestId('subscription-status');
    expect(await select.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual([
      '',
      'trialing',
      'active',
      'past_due',
      'paused',
      'cancelled',
    ]);
    for (const [status, badge, tone] of [
      ['trialing', 'trialing', 'info'],
      ['past_due', 'past due', 'bad'],
    ]) {
      await select.selectOption(status);
      await page.getByRole('button', { name: 'Apply' }).click();
      const answer = await get(`/subscriptions?status=${status}&per_page=20`);
      await page
        .getByTestId('subscriptions-page')
        .filter({ hasText: new RegExp(`\\b${answer.meta.total} in all`) })
        .waitFor();
      const rows = page.locator('[data-testid="subscriptions"] tbody tr');
      expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-subscription-id')))).toEqual(
        answer.data.map((s: any) => String(s.id)),
      );
      expect(await page.locator('[data-testid="subscriptions"] .badge').allTextContents()).toEqual(answer.data.map(() => badge));
      expect(await page.locator(`[data-testid="subscriptions"] .badge.${tone}`).count()).toBe(answer.data.length);
    }
    expect(await page.locator('[data-testid="subscriptions"] td[data-label="Status"]').first().textContent()).toMatch(/past due since/);
    await shoot(page, 'trials-subscriptions-desktop');
    await axe(page, 'trials-subscriptions');
    // At phone width the past-due list is cards, every cell of a row within the screen.
    await page.setViewportSize(PHONE);
    const cells = await page
      .locator('[data-testid="past-due"] tbody tr')
      .first()
      .locator('th, td')
      .evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().right)));
    expect(cells.length).toBe(6);
    for (const right of cells) expect(right).toBeLessThanOrEqual(PHONE.width);
    await noSideScroll(page);
    await shoot(page, 'trials-subscriptions-phone');
    await axe(page, 'trials-subscriptions-phone');
    await page.setViewportSize(DESKTOP);

    // Orders & events: the event type filter offers the types of trials and failed renewals.
    await page.goto(page.url().replace(/#.*$/, '#activity'));
    await ready(page, 'events');
    const types = page.getByTestId('event-type');
    expect(await types.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual(
      expect.arrayContaining(['trial_converted', 'trial_cancelled', 'past_due', 'recovered']),
    );
    for (const type of ['past_due', 'trial_converted']) {
      await types.selectOption(type);
      const answer = await get(`/subscriptions/events?event_type=${type}&per_page=10`);
      await page.locator('[data-panel="events"][data-state="ready"]').waitFor();
      await page
        .getByTestId('events-page')
        .filter({ hasText: new RegExp(`\\b${answer.meta.total} in all`) })
        .waitFor();
      expect(await page.locator('[data-testid="events"] td[data-label="Type"]').allTextContents()).toEqual(
        answer.data.map((e: any) => e.event_type.replace(/_/g, ' ')),
      );
    }
    await axe(page, 'trials-events');
    await page.setViewportSize(PHONE);
    await noSideScroll(page);
    await shoot(page, 'trials-events-phone');
    await axe(page, 'trials-events-phone');
    expect(failures).toEqual([]);
  }, 90_000);
});
