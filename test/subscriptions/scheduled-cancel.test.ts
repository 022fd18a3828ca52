import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { checkScheduledCancel } from '#lib/subscriptions/schedule';
import { readTimeline } from '#lib/metrics/store';
import { toEntry } from '#lib/outbox/relay';
import { ensureTable } from '../../infra/local/dynamodb.ts';
import { LocalBus } from '../../infra/local/local-bus.ts';
import { startLocalCancelScheduler } from '../../infra/local/cancel-scheduler.ts';
import { useApi } from '../support/api.ts';
import { factoriesFor } from '../support/factories.ts';
import { eventually } from '../support/eventually.ts';
import { outboxEvents } from '../orders/helpers.ts';

const api = useApi();
const { merchantWithSubscription, merchantWithCustomer, newCustomerId } = factoriesFor(api);
afterEach(() => resetClock());

const setup = (startedAt = '2026-01-01T00:00:00Z') => merchantWithSubscription({ mrr: '100', started_at: startedAt });
const summary = async (token: string) => (await api.get('/metrics/summary', token)).body.data;
const events = async (token: string, subId: number) => (await api.get(`/subscriptions/events?subscription_id=${subId}`, token)).body.data;

describe('scheduled cancellation (a future cancelled_at)', () => {
  it('counts until cancel_at, reads as cancelled from then, and the scheduler books the cancel event there and sends subscription.cancelled', async () => {
    const clock = fixedClock('2026-03-01T00:00:00Z');
    const { token, merchantId, sub } = await setup();
    const scheduled = await api.put(`/subscriptions/${sub.id}/cancel`, token, { cancelled_at: '2026-03-10T12:00:00Z', reason: 'moving' });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    expect(scheduled.body.data).toMatchObject({
      status: 'active',
      cancel_at: '2026-03-10T12:00:00Z',
      cancelled_at: null,
      cancel_reason: 'moving',
    });
    expect((await events(token, sub.id)).map((e: { event_type: string }) => e.event_type)).toEqual(['created']);
    expect(await summary(token)).toMatchObject({ current_mrr: '100.00', active_subscriptions: 1 });
    // Both at one clock time: the outbox orders them by event id, so compared as a set.
    expect((await outboxEvents(merchantId)).map((e) => e.type).sort()).toEqual(['subscription.created', 'subscription.updated']);

    // From cancel_at on every read shows it cancelled, before the scheduler has run.
    clock.set('2026-03-10T12:00:01Z');
    const due = (await api.get(`/subscriptions/${sub.id}`, token)).body.data;
    expect(due).toMatchObject({ status: 'cancelled', cancelled_at: '2026-03-10T12:00:00Z', cancel_at: null, cancel_reason: 'moving' });
    expect((await api.get('/subscriptions', token)).body.data[0]).toMatchObject({ status: 'cancelled' });

    const armedFor = { merchant_id: merchantId, subscription_id: sub.id, cancel_at: '2026-03-10T12:00:00Z' };
    expect(await checkScheduledCancel(armedFor)).toEqual({ due: true, applied: true });
    expect(await checkScheduledCancel(armedFor)).toEqual({ due: true, applied: false }); // once
    expect((await events(token, sub.id)).map((e: { event_type: string; occurred_at: string }) => [e.event_type, e.occurred_at])).toEqual([
      ['cancel', '2026-03-10T12:00:00Z'],
      ['created', '2026-01-01T00:00:00Z'],
    ]);
    const cancelled = (await outboxEvents(merchantId)).filter((e) => e.type === 'subscription.cancelled');
    expect(cancelled).toHaveLength(1);
    expect(cancelled[0].data.object).toMatchObject({ id: sub.id, status: 'cancelled', cancelled_at: '2026-03-10T12:00:00Z' });
    const s = await summary(token);
    expect(s).toMatchObject({ current_mrr: '0.00', active_subscriptions: 0 });
    expect((await api.get('/subscriptions?status=active', token)).body.meta.total).toBe(s.active_subscriptions);
    const march = (await api.get('/metrics/mrr?start_date=2026-03-01&end_date=2026-03-10&interval=day', token)).body.data;
    expect(march.at(-1)).toMatchObject({ date: '2026-03-10', churn: '-100.00', mrr: '0.00' });
  });

  it('applies a cancellation to a customer with a long history (the timeline in chunks, read by Query)', async () => {
    const clock = fixedClock('2026-03-01T00:00:00Z');
    const { token, merchantId, customer, sub } = await setup();
    // 300 paid monthly orders a week apart: the customer's timeline no longer fits its head.
    for (let batch = 0; batch < 3; batch++) {
      const orders = Array.from({ length: 100 }, (_, i) => {
        const n = batch * 100 + i;
        const paidAt = new Date(Date.parse('2020-01-06T10:00:00Z') + n * 7 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
        return {
          order_no: `LONG-${n}`,
          amount: '10',
          customer_email: customer.email,
          status: 'paid',
          billing_cycle: 'monthly',
          created_at: paidAt,
          paid_at: paidAt,
        };
      });
      const res = await api.post('/orders/batch', token, { orders });
      expect(res.body.data.failed, JSON.stringify(res.body.data.results)).toBe(0);
    }
    expect((await readTimeline(merchantId, customer.id)).chunks?.size).toBeGreaterThan(1);
    expect((await api.put(`/subscriptions/${sub.id}/cancel`, token, { cancelled_at: '2026-03-10T12:00:00Z' })).status).toBe(200);
    clock.set('2026-03-10T12:00:01Z');
    const armedFor = { merchant_id: merchantId, subscription_id: sub.id, cancel_at: '2026-03-10T12:00:00Z' };
    expect(await checkScheduledCancel(armedFor)).toEqual({ due: true, applied: true });
    expect((await events(token, sub.id)).map((e: { event_type: string }) => e.event_type)).toEqual(['cancel', 'created']);
  }, 60_000);

  it('a later cancel replaces the schedule, reactivate or cancel_at: null clears it, and a stale schedule applies nothing', async () => {
    const clock = fixedClock('2026-03-01T00:00:00Z');
    const { token, merchantId, sub } = await setup();
    await api.put(`/subscriptions/${sub.id}/cancel`, token, { cancelled_at: '2026-03-10T00:00:00Z' });
    const replaced = await api.put(`/subscriptions/${sub.id}/cancel`, token, { cancelled_at: '2026-04-01T00:00:00Z' });
    expect(replaced.body.data).toMatchObject({ status: 'active', cancel_at: '2026-04-01T00:00:00Z' });
    clock.set('2026-03-11T00:00:00Z');
    expect(await checkScheduledCancel({ merchant_id: merchantId, subscription_id: sub.id, cancel_at: '2026-03-10T00:00:00Z' })).toEqual({
      due: true,
      applied: false,
    });
    expect((await api.get(`/subscriptions/${sub.id}`, token)).body.data).toMatchObject({
      status: 'active',
      cancel_at: '2026-04-01T00:00:00Z',
    });

    const cleared = await api.put(`/subscriptions/${sub.id}`, token, { cancel_at: null });
    expect(cleared.body.data).toMatchObject({ status: 'active', cancel_at: null });
    await api.put(`/subscriptions/${sub.id}`, token, { cancel_at: '2026-05-01T00:00:00Z' });
    expect((await api.get(`/subscriptions/${sub.id}`, token)).body.data.cancel_at).toBe('2026-05-01T00:00:00Z');
    const reactivated = await api.put(`/subscriptions/${sub.id}/reactivate`, token, {});
    expect(reactivated.status, JSON.stringify(reactivated.body)).toBe(200);
    expect(reactivated.body.data).toMatchObject({ status: 'active', cancel_at: null });
    expect((await events(token, sub.id)).map((e: { event_type: string }) => e.event_type)).toEqual(['created']);
    clock.set('2026-06-01T00:00:00Z');
    expect((await api.get(`/subscriptions/${sub.id}`, token)).body.data.status).toBe('active');

    const past = await api.put(`/subscriptions/${sub.id}`, token, { cancel_at: '2026-05-31T00:00:00Z' });
    expect(past.status).toBe(422);
    expect(past.body.errors).toEqual({ cancel_at: ['The cancel at field must be a date after now.'] });
  });

  it('a change after cancel_at (scheduler not yet run) starts from the cancelled subscription; the customer may subscribe again', async () => {
    const clock = fixedClock('2026-03-01T00:00:00Z');
    const { token, customer, sub } = await setup();
    await api.put(`/subscriptions/${sub.id}/cancel`, token, { cancelled_at: '2026-03-05T00:00:00Z' });
    clock.set('2026-03-06T00:00:00Z');
    const update = await api.put(`/subscriptions/${sub.id}`, token, { mrr: '200' });
    expect(update.status).toBe(422);
    expect(update.body.errors).toEqual({ status: ['A cancelled subscription cannot be updated.'] });
    expect((await events(token, sub.id)).map((e: { event_type: string }) => e.event_type)).toEqual(['cancel', 'created']);
    await api
      .put(`/subscriptions/${sub.id}/cancel`, token, { cancelled_at: '2026-03-20T00:00:00Z' })
      .then((r) => expect(r.status).toBe(422));

    const other = await setup();
    await api.put(`/subscriptions/${other.sub.id}/cancel`, other.token, { cancelled_at: '2026-03-07T00:00:00Z' });
    clock.set('2026-03-08T00:00:00Z');
    const again = await api.post('/subscriptions', other.token, {
      customer_id: other.customer.id,
      plan_name: 'Pro',
      mrr: '50',
      billing_cycle: 'monthly',
    });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect((await api.get(`/subscriptions/${other.sub.id}`, other.token)).body.data).toMatchObject({
      status: 'cancelled',
      cancelled_at: '2026-03-07T00:00:00Z',
    });
    expect(customer.id).toBeGreaterThan(0);
  });

  it("npm start's scheduler applies a schedule at its time: armed from the bus, or from the table at start", async () => {
    // Re-arming Scans the table (fine for npm start's): on a table of this test's own, not the shared
    // one, whose Scan would hold DynamoDB Local for seconds late in a run (docs/testing.md).
    const sharedTable = process.env.TABLE_NAME;
    process.env.TABLE_NAME = `sched-scan-${process.pid}`;
    await ensureTable(process.env.DYNAMODB_ENDPOINT, process.env.TABLE_NAME, { stream: false });
    const { token, merchantId, sub } = await setup(new Date(Date.now() - 86_400_000).toISOString());
    const bus = new LocalBus();
    const scheduler = startLocalCancelScheduler(bus);
    try {
      const at = new Date(Math.ceil((Date.now() + 1500) / 1000) * 1000).toISOString().replace('.000', '');
      const r = await api.put(`/subscriptions/${sub.id}/cancel`, token, { cancelled_at: at });
      expect(r.body.data.cancel_at).toBe(at);
      // What the outbox relay publishes for that change.
      await bus.publish([
        {
          Source: 'revenue-analytics-api',
          DetailType: 'subscription.updated',
          Detail: JSON.stringify({
            id: 'evt_1',
            type: 'subscription.updated',
            created_at: at,
            merchant_id: merchantId,
            data: { object: r.body.data },
          }),
        },
      ]);
      await eventually(() => scheduler.pending === 1, 2_000, 'the schedule armed');
      await eventually(
        async () => (await events(token, sub.id)).some((e: { event_type: string }) => e.event_type === 'cancel'),
        10_000,
        'the cancel event',
      );
      expect((await api.get(`/subscriptions/${sub.id}`, token)).body.data).toMatchObject({ status: 'cancelled', cancelled_at: at });

      // Stored before a start: armed from the table.
      const second = await setup(new Date(Date.now() - 86_400_000).toISOString());
      const at2 = new Date(Math.ceil((Date.now() + 1500) / 1000) * 1000).toISOString().replace('.000', '');
      await api.put(`/subscriptions/${second.sub.id}/cancel`, second.token, { cancelled_at: at2 });
      expect(await scheduler.rearm(second.merchantId)).toBe(1);
      await eventually(
        async () => (await events(second.token, second.sub.id)).some((e: { event_type: string }) => e.event_type === 'cancel'),
        10_000,
        'the second cancel event',
      );
    } finally {
      scheduler.stop();
      process.env.TABLE_NAME = sharedTable;
    }
  });
  it("npm start's scheduler converts a trial at its end and cancels a delinquent subscription at its time, armed from the bus or from the table, once each", async () => {
    const sharedTable = process.env.TABLE_NAME;
    process.env.TABLE_NAME = `sched-scan-${process.pid}`;
    await ensureTable(process.env.DYNAMODB_ENDPOINT, process.env.TABLE_NAME, { stream: false });
    const DAY = 86_400_000;
    const stamp = (ms: number) => new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace('.000', '');
    const body = { plan_name: 'Pro', mrr: '100', billing_cycle: 'monthly' };
    /** A merchant with a trial ending in 4 s, and a subscription past due since 30 days (delinquency_days) less 4 s. */
    const trialAndPastDue = async () => {
      const { token, merchantId, customer } = await merchantWithCustomer();
      const dueAt = stamp(Date.now() + 4000);
      const trial = await api.post('/subscriptions', token, {
        ...body,
        customer_id: customer.id,
        started_at: stamp(Date.now() - DAY),
        trial_ends_at: dueAt,
      });
      expect(trial.body.data, JSON.stringify(trial.body)).toMatchObject({ status: 'trialing', trial_ends_at: dueAt });
      const created = await api.post('/subscriptions', token, {
        ...body,
        customer_id: await newCustomerId(token),
        started_at: stamp(Date.now() - 40 * DAY),
      });
      const failedAt = stamp(Date.parse(dueAt) - 30 * DAY);
      const failed = await api.put(`/subscriptions/${created.body.data.id}/past-due`, token, { failed_at: failedAt });
      expect(failed.body.data, JSON.stringify(failed.body)).toMatchObject({ status: 'past_due', failed_at: failedAt });
      return { token, merchantId, trialId: trial.body.data.id as number, pastDueId: failed.body.data.id as number, dueAt };
    };
    const typesOf = async (token: string, subId: number) =>
      (await events(token, subId)).map((e: { event_type: string; occurred_at: string }) => [e.event_type, e.occurred_at]);
    /** Both applied at their time: converted (trial_converted at its end), cancelled as delinquent; one webhook each. */
    const appliedOnce = async (m: Awaited<ReturnType<typeof trialAndPastDue>>) => {
      expect(await typesOf(m.token, m.trialId)).toEqual([
        ['trial_converted', m.dueAt],
        ['created', expect.any(String)],
      ]);
      expect(await typesOf(m.token, m.pastDueId)).toEqual([
        ['cancel', m.dueAt],
        ['past_due', expect.any(String)],
        ['created', expect.any(String)],
      ]);
      expect((await api.get(`/subscriptions/${m.trialId}`, m.token)).body.data).toMatchObject({ status: 'active', trial_ends_at: m.dueAt });
      expect((await api.get(`/subscriptions/${m.pastDueId}`, m.token)).body.data).toMatchObject({
        status: 'cancelled',
        cancelled_at: m.dueAt,
        cancel_reason: 'delinquent',
        failed_at: null,
      });
      const hooks = (await outboxEvents(m.merchantId)).map((e) => [e.type, e.data.object.id]);
      expect(hooks.filter(([type]) => type === 'subscription.trial_converted')).toEqual([['subscription.trial_converted', m.trialId]]);
      expect(hooks.filter(([type]) => type === 'subscription.cancelled')).toEqual([['subscription.cancelled', m.pastDueId]]);
    };
    /** What the outbox relay publishes: the merchant's webhooks so far. */
    const publishWebhooks = async (merchantId: string) =>
      bus.publish((await outboxEvents(merchantId)).map((e) => toEntry(e as never, { source: 'revenue-analytics-api' })));
    const bothApplied = (m: Awaited<ReturnType<typeof trialAndPastDue>>) =>
      eventually(
        async () =>
          (await typesOf(m.token, m.trialId))[0]?.[0] === 'trial_converted' && (await typesOf(m.token, m.pastDueId))[0]?.[0] === 'cancel',
        15_000,
        'the conversion and the delinquent cancellation',
      );

    const bus = new LocalBus();
    const applied: string[] = [];
    const scheduler = startLocalCancelScheduler(bus, { log: (line) => applied.push(line) });
    const appliedTo = (m: { merchantId: string }) => applied.filter((line) => line.includes(`(${m.merchantId})`)).sort();
    try {
      // Armed from the bus: the trial's subscription.created carries its end, subscription.past_due its failure.
      const fromBus = await trialAndPastDue();
      await publishWebhooks(fromBus.merchantId);
      await eventually(() => scheduler.pending === 2, 2_000, 'both schedules armed');
      await bothApplied(fromBus);
      await appliedOnce(fromBus);
      expect(appliedTo(fromBus)).toEqual(
        [
          `subscription ${fromBus.trialId} (${fromBus.merchantId}): scheduled convert of ${fromBus.dueAt} applied`,
          `subscription ${fromBus.pastDueId} (${fromBus.merchantId}): scheduled delinquent of ${stamp(Date.parse(fromBus.dueAt) - 30 * DAY)} applied`,
        ].sort(),
      );
      // The same events delivered again (an at-least-once bus): armed again, due at once, nothing applied twice.
      await publishWebhooks(fromBus.merchantId);
      await eventually(() => scheduler.pending === 0, 10_000, 'the repeated schedules checked');
      await appliedOnce(fromBus);
      expect(appliedTo(fromBus)).toHaveLength(2);

      // Stored before a start: armed from the table (twice: still one timer each), applied once.
      const stored = await trialAndPastDue();
      expect(await scheduler.rearm(stored.merchantId)).toBe(2);
      expect(await scheduler.rearm(stored.merchantId)).toBe(2);
      expect(scheduler.pending).toBe(2);
      await bothApplied(stored);
      await eventually(() => scheduler.pending === 0, 10_000, 'the stored schedules checked');
      await appliedOnce(stored);
      expect(appliedTo(stored)).toHaveLength(2);
      // Nothing left to arm once applied.
      expect(await scheduler.rearm(stored.merchantId)).toBe(0);
    } finally {
      scheduler.stop();
      process.env.TABLE_NAME = sharedTable;
    }
  }, 60_000);

  it("npm start's scheduler settles a customer whose order renewal grace runs out: armed from the bus (the internal event) or from the table", async () => {
    const sharedTable = process.env.TABLE_NAME;
    process.env.TABLE_NAME = `sched-scan-${process.pid}`;
    await ensureTable(process.env.DYNAMODB_ENDPOINT, process.env.TABLE_NAME, { stream: false });
    const stamp = (ms: number) => new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace('.000', '');
    /** A merchant whose customer's yearly order ended 30 days (its grace) less 4 s ago: the grace runs out in 4 s. */
    const lapsing = async () => {
      const { token, merchantId } = await merchantWithCustomer();
      const ended = new Date(Date.parse(stamp(Date.now() + 4000)) - 30 * 86_400_000);
      const paid = new Date(ended);
      paid.setUTCFullYear(paid.getUTCFullYear() - 1);
      const order = await api.post('/orders', token, {
        order_no: 'Y-1',
        amount: '1200',
        status: 'paid',
        billing_cycle: 'yearly',
        customer_email: 'lapse@scheduler.test',
        paid_at: stamp(paid.getTime()),
      });
      expect(order.status, JSON.stringify(order.body)).toBe(201);
      const customerId = order.body.data.customer_id as number;
      const [armed] = (await outboxEvents(merchantId)).filter((e) => e.type === 'customer.renewal_grace');
      expect(armed.data.object).toEqual({ customer_id: customerId, grace_ends_at: stamp(ended.getTime() + 30 * 86_400_000) });
      // In its grace the order still counts.
      expect((await api.get(`/customers/${customerId}`, token)).body.data.mrr).toBe('100.00');
      return { token, merchantId, customerId, armed };
    };
    const settled = (m: Awaited<ReturnType<typeof lapsing>>) =>
      eventually(async () => (await api.get(`/customers/${m.customerId}`, m.token)).body.data.mrr === '0.00', 15_000, 'the grace settled');
    const bus = new LocalBus();
    const applied: string[] = [];
    const scheduler = startLocalCancelScheduler(bus, { log: (line) => applied.push(line) });
    try {
      const fromBus = await lapsing();
      await bus.publish([toEntry(fromBus.armed as never, { source: 'revenue-analytics-api' })]);
      await eventually(() => scheduler.pending === 1, 2_000, 'the renewal check armed');
      await settled(fromBus);
      expect(applied.filter((line) => line.includes(`(${fromBus.merchantId})`))).toEqual([
        `customer ${fromBus.customerId} (${fromBus.merchantId}): renewal grace of ${fromBus.armed.data.object.grace_ends_at} ran out, figures restated`,
      ]);
      // Restated: churn at the end of the year it paid for, not when the grace ran out.
      const [latest] = (await api.get(`/customers/${fromBus.customerId}/activities`, fromBus.token)).body.data;
      expect(latest).toMatchObject({
        type: 'churn',
        amount: '-100.00',
        date: stamp(Date.parse(fromBus.armed.data.object.grace_ends_at) - 30 * 86_400_000),
      });
      // From the table: every customer with recurring orders is checked at start.
      const stored = await lapsing();
      expect(await scheduler.rearm(stored.merchantId)).toBe(1);
      await settled(stored);
    } finally {
      scheduler.stop();
      process.env.TABLE_NAME = sharedTable;
    }
  }, 60_000);
});
