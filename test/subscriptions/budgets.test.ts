import { describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { tallied } from '#lib/db/client';
import { checkScheduledCancel } from '#lib/subscriptions/schedule';
import { cursorAt } from '../support/pages.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { factoriesFor } from '../support/factories.ts';
import { seededTypeCounts, seedSubscriptionEvents } from '../support/seed-subscriptions.ts';

/**
 * Request budgets of the subscriptions issue, counted with the shared DynamoDB request counter
 * (token lookup and rate counter included). "Flat" reads are measured on a merchant with 100
 * subscription events and on one with 20,000 and must cost the same. Measured counts are printed
 * (console.info) for the table in docs/benchmarks.md.
 */
const api = useApi();
const { newCustomer } = factoriesFor(api);

const report = (call: string, requests: number, budget: number) => {
  console.info(`[budget] ${call}: ${requests} requests (budget ≤ ${budget})`);
};

const subscriptionBody = (customerId: number) => ({ customer_id: customerId, plan_name: 'Basic', mrr: '100.00', billing_cycle: 'monthly' });

/** A merchant with `count` subscription events: one `created` event through the API, the rest seeded. */
const merchantWithEvents = async (count: number) => {
  const m = await newMerchant();
  const customer = await newCustomer(m.token);
  const sub = await api.post('/subscriptions', m.token, subscriptionBody(customer.id));
  expect(sub.status, JSON.stringify(sub.body)).toBe(201);
  await seedSubscriptionEvents(m.merchantId, customer.id, count - 1, sub.body.data.id);
  return m;
};

const eventReads = async (token: string) => ({
  list: await api.counted('GET', '/subscriptions/events', { token }),
  byType: await api.counted('GET', '/subscriptions/events?event_type=upgrade&per_page=50', { token }),
});

describe('subscription request budgets (DynamoDB requests per API call)', () => {
  it('POST /subscriptions ≤ 5; PUT /subscriptions/{id}, /cancel, /pause, /reactivate ≤ 5 each; GET /subscriptions/{id} ≤ 3', async () => {
    const { token } = await newMerchant();
    const customer = await newCustomer(token);

    const create = await api.counted('POST', '/subscriptions', { token, body: subscriptionBody(customer.id) });
    expect(create.res.status, JSON.stringify(create.res.body)).toBe(201);
    const id = create.res.body.data.id;
    report('POST /subscriptions', create.requests, 5);
    expect(create.requests).toBeLessThanOrEqual(5);

    const upgrade = await api.counted('PUT', `/subscriptions/${id}`, { token, body: { mrr: '150.00', plan_name: 'Pro' } });
    expect(upgrade.res.status, JSON.stringify(upgrade.res.body)).toBe(200);
    report('PUT /subscriptions/{id} (mrr moves: upgrade event)', upgrade.requests, 5);
    expect(upgrade.requests).toBeLessThanOrEqual(5);

    const planOnly = await api.counted('PUT', `/subscriptions/${id}`, { token, body: { plan_name: 'Pro+' } });
    expect(planOnly.res.status, JSON.stringify(planOnly.res.body)).toBe(200);
    report('PUT /subscriptions/{id} (plan only: no event)', planOnly.requests, 5);
    expect(planOnly.requests).toBeLessThanOrEqual(5);

    const pause = await api.counted('PUT', `/subscriptions/${id}/pause`, { token, body: {} });
    expect(pause.res.status, JSON.stringify(pause.res.body)).toBe(200);
    report('PUT /subscriptions/{id}/pause', pause.requests, 5);
    expect(pause.requests).toBeLessThanOrEqual(5);

    const fromPaused = await api.counted('PUT', `/subscriptions/${id}/reactivate`, { token, body: {} });
    expect(fromPaused.res.status, JSON.stringify(fromPaused.res.body)).toBe(200);
    report('PUT /subscriptions/{id}/reactivate (from paused)', fromPaused.requests, 5);
    expect(fromPaused.requests).toBeLessThanOrEqual(5);

    const cancel = await api.counted('PUT', `/subscriptions/${id}/cancel`, { token, body: { reason: 'budget' } });
    expect(cancel.res.status, JSON.stringify(cancel.res.body)).toBe(200);
    report('PUT /subscriptions/{id}/cancel', cancel.requests, 5);
    expect(cancel.requests).toBeLessThanOrEqual(5);

    const fromCancelled = await api.counted('PUT', `/subscriptions/${id}/reactivate`, { token, body: {} });
    expect(fromCancelled.res.status, JSON.stringify(fromCancelled.res.body)).toBe(200);
    report('PUT /subscriptions/{id}/reactivate (from cancelled)', fromCancelled.requests, 5);
    expect(fromCancelled.requests).toBeLessThanOrEqual(5);

    const get = await api.counted('GET', `/subscriptions/${id}`, { token });
    expect(get.res.status, JSON.stringify(get.res.body)).toBe(200);
    report('GET /subscriptions/{id}', get.requests, 3);
    expect(get.requests).toBeLessThanOrEqual(3);
  });

  it('trials and failed renewals: POST with trial_ends_at, moving it, /past-due, /recover ≤ 5 each; the scheduler applying a conversion or a delinquent cancellation ≤ 5 (its checks of when included)', async () => {
    const clock = fixedClock('2026-03-01T00:00:00Z');
    try {
      const { token, merchantId } = await newMerchant();
      const trialCustomer = await newCustomer(token);
      const trial = await api.counted('POST', '/subscriptions', {
        token,
        body: { ...subscriptionBody(trialCustomer.id), trial_ends_at: '2026-03-15T00:00:00Z' },
      });
      expect(trial.res.status, JSON.stringify(trial.res.body)).toBe(201);
      report('POST /subscriptions (a trial)', trial.requests, 5);
      expect(trial.requests).toBeLessThanOrEqual(5);
      const trialId = trial.res.body.data.id;
      const moved = await api.counted('PUT', `/subscriptions/${trialId}`, { token, body: { trial_ends_at: '2026-03-20T00:00:00Z' } });
      expect(moved.res.status, JSON.stringify(moved.res.body)).toBe(200);
      report('PUT /subscriptions/{id} (trial_ends_at)', moved.requests, 5);
      expect(moved.requests).toBeLessThanOrEqual(5);

      const customer = await newCustomer(token);
      const sub = (await api.post('/subscriptions', token, subscriptionBody(customer.id))).body.data;
      const pastDue = await api.counted('PUT', `/subscriptions/${sub.id}/past-due`, { token, body: {} });
      expect(pastDue.res.status, JSON.stringify(pastDue.res.body)).toBe(200);
      report('PUT /subscriptions/{id}/past-due', pastDue.requests, 5);
      expect(pastDue.requests).toBeLessThanOrEqual(5);
      const recover = await api.counted('PUT', `/subscriptions/${sub.id}/recover`, { token, body: {} });
      expect(recover.res.status, JSON.stringify(recover.res.body)).toBe(200);
      report('PUT /subscriptions/{id}/recover', recover.requests, 5);
      expect(recover.requests).toBeLessThanOrEqual(5);
      const { failed_at: failedAt } = (await api.put(`/subscriptions/${sub.id}/past-due`, token, {})).body.data;

      // The scheduler's calls: each a function invocation of its own, counted alone.
      clock.set('2026-03-20T00:00:05Z');
      const converted = await tallied(() =>
        checkScheduledCancel({ merchant_id: merchantId, subscription_id: trialId, cancel_at: '2026-03-20T00:00:00Z', kind: 'convert' }),
      );
      expect(converted.result).toEqual({ due: true, applied: true });
      report('scheduler: a trial conversion', converted.tally.total, 5);
      expect(converted.tally.total).toBeLessThanOrEqual(5);
      clock.set('2026-03-31T00:00:05Z'); // 30 days after it failed
      const delinquent = await tallied(() =>
        checkScheduledCancel({ merchant_id: merchantId, subscription_id: sub.id, cancel_at: failedAt, kind: 'delinquent' }),
      );
      expect(delinquent.result).toEqual({ due: true, applied: true });
      report('scheduler: a delinquent cancellation', delinquent.tally.total, 5);
      expect(delinquent.tally.total).toBeLessThanOrEqual(5);
    } finally {
      resetClock();
    }
  }, 120_000);

  it('GET /subscriptions page 1 ≤ 4 (unfiltered and by status)', async () => {
    const { token } = await newMerchant();
    for (let i = 0; i < 25; i++) {
      const customer = await newCustomer(token);
      const r = await api.post('/subscriptions', token, subscriptionBody(customer.id));
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const list = await api.counted('GET', '/subscriptions', { token });
    expect(list.res.status, JSON.stringify(list.res.body)).toBe(200);
    expect(list.res.body.meta.total).toBe(25);
    expect(list.res.body.data).toHaveLength(20);
    report('GET /subscriptions page 1', list.requests, 4);
    expect(list.requests).toBeLessThanOrEqual(4);

    const byStatus = await api.counted('GET', '/subscriptions?status=active', { token });
    expect(byStatus.res.status, JSON.stringify(byStatus.res.body)).toBe(200);
    expect(byStatus.res.body.meta.total).toBe(25);
    report('GET /subscriptions?status=active page 1', byStatus.requests, 4);
    expect(byStatus.requests).toBeLessThanOrEqual(4);
    // The next page by its cursor costs what page 1 costs.
    const next = await api.counted('GET', `/subscriptions?cursor=${encodeURIComponent(list.res.body.meta.next_cursor)}`, { token });
    expect(next.res.body.meta).toMatchObject({ current_page: 2, from: 21, to: 25, next_cursor: null });
    expect(next.requests).toBe(list.requests);
  });

  it('POST /subscriptions/batch of 100 ≤ 25 (new customers by email, each started in its own month; the figures of its plan and cycle segments too, as pending moves)', async () => {
    const { token } = await newMerchant();
    const subscriptions = Array.from({ length: 100 }, (_, i) => ({
      external_id: `imp_${i}`,
      customer_email: `imp${i}@example.com`,
      plan_name: 'Basic',
      mrr: '10',
      billing_cycle: 'monthly',
      started_at: new Date(Date.UTC(2018, i % 96, 1 + (i % 27))).toISOString(),
      ...(i % 3 === 0 ? { cancelled_at: new Date(Date.UTC(2018, (i % 96) + 2, 1)).toISOString() } : {}),
    }));
    const r = await api.counted('POST', '/subscriptions/batch', { token, body: { subscriptions } });
    expect(r.res.status, JSON.stringify(r.res.body)).toBe(200);
    expect(r.res.body.data).toMatchObject({ created: 100, failed: 0 });
    report('POST /subscriptions/batch (100)', r.requests, 25);
    expect(r.requests).toBeLessThanOrEqual(25);
  });

  it("POST /subscriptions/events/batch of 100 ≤ 25; one customer's history in time order is written once per transaction, not once per event", async () => {
    const { token } = await newMerchant();
    const customer = await newCustomer(token);
    const imported = await api.post('/subscriptions/batch', token, {
      subscriptions: [
        {
          external_id: 'hist',
          customer_id: customer.id,
          plan_name: 'Basic',
          mrr: '100',
          billing_cycle: 'monthly',
          started_at: '2016-01-01T00:00:00Z',
        },
      ],
    });
    expect(imported.body.data.created).toBe(1);
    // 100 monthly changes of one subscription, in time order.
    const events = Array.from({ length: 100 }, (_, i) => ({
      customer_id: customer.id,
      subscription_external_id: 'hist',
      event_type: 'upgrade',
      old_amount: String(100 + i),
      new_amount: String(101 + i),
      occurred_at: new Date(Date.UTC(2016, 1 + i, 1)).toISOString(),
    }));
    const r = await api.counted('POST', '/subscriptions/events/batch', { token, body: { events } });
    expect(r.res.status, JSON.stringify(r.res.body)).toBe(200);
    expect(r.res.body.data).toMatchObject({ created: 100, failed: 0 });
    report('POST /subscriptions/events/batch (100, one customer)', r.requests, 25);
    expect(r.requests).toBeLessThanOrEqual(25);
    // One timeline write per transaction: far fewer transactions than events.
    expect(r.byCommand.TransactWriteItemsCommand ?? r.byCommand.TransactWriteCommand).toBeLessThan(10);
    expect((await api.get('/metrics/summary', token)).body.data.current_mrr).toBe('200.00');
  });

  it('POST /subscriptions/events ≤ 5 (with and without subscription_id)', async () => {
    const { token } = await newMerchant();
    const customer = await newCustomer(token);
    const sub = await api.post('/subscriptions', token, subscriptionBody(customer.id));
    expect(sub.status).toBe(201);
    const body = {
      customer_id: customer.id,
      event_type: 'upgrade',
      old_amount: '10',
      new_amount: '20',
      occurred_at: '2025-06-01T00:00:00Z',
    };

    const bare = await api.counted('POST', '/subscriptions/events', { token, body });
    expect(bare.res.status, JSON.stringify(bare.res.body)).toBe(201);
    report('POST /subscriptions/events (no subscription_id)', bare.requests, 5);
    expect(bare.requests).toBeLessThanOrEqual(5);

    const withSub = await api.counted('POST', '/subscriptions/events', { token, body: { ...body, subscription_id: sub.body.data.id } });
    expect(withSub.res.status, JSON.stringify(withSub.res.body)).toBe(201);
    report('POST /subscriptions/events (with subscription_id)', withSub.requests, 5);
    expect(withSub.requests).toBeLessThanOrEqual(5);
  });

  it('GET /subscriptions/events page 1 ≤ 4, unfiltered and by event_type — the same for 100 and 20,000 events', async () => {
    const small = await merchantWithEvents(100);
    const large = await merchantWithEvents(20_000);
    const s = await eventReads(small.token);
    const l = await eventReads(large.token);

    expect(s.list.res.body.meta.total).toBe(100);
    expect(s.list.res.body.data).toHaveLength(20);
    expect(l.list.res.body.meta).toEqual({
      current_page: 1,
      from: 1,
      last_page: 1000,
      per_page: 20,
      to: 20,
      total: 20_000,
      next_cursor: expect.any(String),
    });
    expect(l.list.res.body.data).toHaveLength(20);
    // the API's `created` event is the newest (seeded ones occurred in 2025)
    expect(l.list.res.body.data[0]).toMatchObject({ event_type: 'created', source: 'api' });

    expect(s.byType.res.body.meta.total).toBe(seededTypeCounts(99).upgrade);
    expect(l.byType.res.body.meta.total).toBe(seededTypeCounts(19_999).upgrade);
    expect(l.byType.res.body.data).toHaveLength(50);
    expect(l.byType.res.body.data.every((e: { event_type: string }) => e.event_type === 'upgrade')).toBe(true);

    for (const [name, label] of [
      ['list', 'GET /subscriptions/events page 1'],
      ['byType', 'GET /subscriptions/events?event_type=upgrade page 1'],
    ] as const) {
      expect(s[name].res.status, name).toBe(200);
      expect(l[name].res.status, name).toBe(200);
      report(`${label} (100 events)`, s[name].requests, 4);
      report(`${label} (20,000 events)`, l[name].requests, 4);
      expect(s[name].requests, name).toBeLessThanOrEqual(4);
      expect(l[name].requests, name).toBeLessThanOrEqual(4);
      expect(l[name].requests, name).toBe(s[name].requests);
    }
    // A page 200 pages deep (by cursor, 20 a page) costs what page 1 costs.
    const cursor = await cursorAt(api, large.token, '/subscriptions/events', 4_000);
    const deep = await api.counted('GET', `/subscriptions/events?cursor=${encodeURIComponent(cursor)}`, { token: large.token });
    expect(deep.res.body.meta).toMatchObject({ current_page: 201, from: 4_001, to: 4_020, total: 20_000 });
    report('GET /subscriptions/events, a cursor page 200 pages deep (20,000 events)', deep.requests, 4);
    expect(deep.requests).toBe(l.list.requests);
  }, 240_000);
});
