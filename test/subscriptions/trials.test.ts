import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { checkScheduledCancel, scheduleOf } from '#lib/subscriptions/schedule';
import { useApi } from '../support/api.ts';
import { factoriesFor } from '../support/factories.ts';
import { outboxEvents } from '../orders/helpers.ts';

const api = useApi();
const { merchantWithCustomer, newCustomerId } = factoriesFor(api);
afterEach(() => resetClock());

const trial = { plan_name: 'Pro', mrr: '100', billing_cycle: 'monthly' };
const events = async (token: string, subId: number) =>
  (await api.get(`/subscriptions/events?subscription_id=${subId}`, token)).body.data.map(
    (e: { event_type: string; occurred_at: string; old_amount: string; new_amount: string }) => [
      e.event_type,
      e.occurred_at,
      e.old_amount,
      e.new_amount,
    ],
  );
const trials = async (token: string, query: string) => {
  const res = await api.get(`/metrics/trials?${query}`, token);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

describe('trials', () => {
  it('a trial counts in no figure until trial_ends_at, then the scheduler converts it: trial_converted, a new movement, the webhook', async () => {
    const clock = fixedClock('2026-03-01T00:00:00Z');
    const { token, merchantId, customer } = await merchantWithCustomer();
    const created = await api.post('/subscriptions', token, {
      ...trial,
      customer_id: customer.id,
      started_at: '2026-03-01T00:00:00Z',
      trial_ends_at: '2026-03-15T00:00:00Z',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.data).toMatchObject({ status: 'trialing', mrr: '100.00', trial_ends_at: '2026-03-15T00:00:00Z' });
    const id = created.body.data.id;
    expect((await api.get('/subscriptions?status=trialing', token)).body).toMatchObject({ data: [{ id }], meta: { total: 1 } });
    expect((await api.get('/subscriptions?status=active', token)).body.meta.total).toBe(0);
    expect((await api.get('/metrics/summary', token)).body.data).toMatchObject({
      current_mrr: '0.00',
      active_subscriptions: 0,
      active_customers: 0,
    });
    expect((await api.get(`/customers/${customer.id}`, token)).body.data).toMatchObject({ mrr: '0.00', subscription_status: 'trialing' });

    // A second live subscription is refused while the trial holds the customer's slot.
    const second = await api.post('/subscriptions', token, { ...trial, customer_id: customer.id });
    expect(second.status).toBe(422);

    // Moving the end while trialing; a past end is refused.
    expect((await api.put(`/subscriptions/${id}`, token, { trial_ends_at: '2026-02-01T00:00:00Z' })).status).toBe(422);
    const moved = await api.put(`/subscriptions/${id}`, token, { trial_ends_at: '2026-03-20T00:00:00Z', mrr: '120' });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(moved.body.data).toMatchObject({ status: 'trialing', mrr: '120.00', trial_ends_at: '2026-03-20T00:00:00Z' });
    expect(await events(token, id)).toEqual([['created', '2026-03-01T00:00:00Z', '0.00', '0.00']]);

    // A check before the end waits; at the end it converts, once.
    expect(
      await checkScheduledCancel({ merchant_id: merchantId, subscription_id: id, cancel_at: '2026-03-20T00:00:00Z', kind: 'convert' }),
    ).toEqual({
      due: false,
      wake_at: '2026-03-20T00:00:00Z',
      far: false,
    });
    clock.set('2026-03-20T00:00:30Z');
    // Reads show it converted before the scheduler runs.
    expect((await api.get(`/subscriptions/${id}`, token)).body.data).toMatchObject({ status: 'active' });
    const armed = { merchant_id: merchantId, subscription_id: id, cancel_at: '2026-03-20T00:00:00Z', kind: 'convert' as const };
    expect(await checkScheduledCancel(armed)).toEqual({ due: true, applied: true });
    expect(await checkScheduledCancel(armed)).toEqual({ due: true, applied: false });
    expect(await events(token, id)).toEqual([
      ['trial_converted', '2026-03-20T00:00:00Z', '0.00', '120.00'],
      ['created', '2026-03-01T00:00:00Z', '0.00', '0.00'],
    ]);
    const converted = (await outboxEvents(merchantId)).filter((e) => e.type === 'subscription.trial_converted');
    expect(converted.map((e) => e.data.object)).toMatchObject([{ id, status: 'active' }]);
    expect((await api.get('/subscriptions?status=active', token)).body.meta.total).toBe(1);
    expect((await api.get('/subscriptions?status=trialing', token)).body.meta.total).toBe(0);
    const march = (await api.get('/metrics/mrr?start_date=2026-03-01&end_date=2026-03-20&interval=day', token)).body.data;
    expect(march.at(-1)).toMatchObject({ date: '2026-03-20', new: '120.00', mrr: '120.00', active_subscriptions: 1 });
    expect(march.slice(0, -1).every((p: { mrr: string; new: string }) => p.mrr === '0.00' && p.new === '0.00')).toBe(true);

    const { data, summary } = await trials(token, 'start_date=2026-03-01&end_date=2026-03-20&interval=month');
    expect(data).toEqual([
      {
        date: '2026-03-01',
        trials_started: 1,
        converted: 1,
        cancelled: 0,
        still_trialing: 0,
        conversion_rate: 100,
        avg_days_to_convert: 19,
      },
    ]);
    const { date: _, ...figures } = data[0];
    expect(summary).toEqual(figures);
  });

  it('cancelling during the trial ends it unconverted: trial_cancelled, no churn, no customer churned', async () => {
    fixedClock('2026-03-10T00:00:00Z');
    const { token, merchantId, customer } = await merchantWithCustomer();
    const { body } = await api.post('/subscriptions', token, {
      ...trial,
      customer_id: customer.id,
      started_at: '2026-03-02T00:00:00Z',
      trial_ends_at: '2026-03-16T00:00:00Z',
    });
    const id = body.data.id;
    const cancelled = await api.put(`/subscriptions/${id}/cancel`, token, { reason: 'too dear' });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled', cancelled_at: '2026-03-10T00:00:00Z' });
    expect((await events(token, id))[0]).toEqual(['trial_cancelled', '2026-03-10T00:00:00Z', '0.00', '0.00']);
    expect((await outboxEvents(merchantId)).map((e) => e.type)).toContain('subscription.trial_cancelled');
    const [point] = (await api.get('/metrics/mrr?start_date=2026-03-01&end_date=2026-03-10&interval=month', token)).body.data;
    expect(point).toMatchObject({ churn: '0.00', mrr: '0.00', customer_churn_rate: null });
    expect((await api.get('/metrics/churn-reasons?start_date=2026-03-01&end_date=2026-03-10', token)).body.data).toEqual([]);
    const other = await newCustomerId(token);
    await api.post('/subscriptions', token, {
      ...trial,
      customer_id: other,
      started_at: '2026-03-05T00:00:00Z',
      trial_ends_at: '2026-04-05T00:00:00Z',
    });
    const { data } = await trials(token, 'start_date=2026-03-01&end_date=2026-03-10&interval=day');
    expect(data.filter((p: { trials_started: number }) => p.trials_started)).toEqual([
      {
        date: '2026-03-02',
        trials_started: 1,
        converted: 0,
        cancelled: 1,
        still_trialing: 0,
        conversion_rate: 0,
        avg_days_to_convert: null,
      },
      {
        date: '2026-03-05',
        trials_started: 1,
        converted: 0,
        cancelled: 0,
        still_trialing: 1,
        conversion_rate: null,
        avg_days_to_convert: null,
      },
    ]);
    const csv = await api.get('/metrics/trials?start_date=2026-03-01&end_date=2026-03-10&interval=month', token, { accept: 'text/csv' });
    expect(csv.status).toBe(200);
    const [header, row] = String(csv.body).split(/\r?\n/);
    expect(header).toBe('date,trials_started,converted,cancelled,still_trialing,conversion_rate,avg_days_to_convert');
    expect(row).toBe('2026-03-01,2,0,1,1,0,');
  });

  it('a back-dated trial that has ended is created converted; a batch imports trials with their history; bad trial ends are 422', async () => {
    const clock = fixedClock('2026-06-01T00:00:00Z');
    const { token, merchantId, customer } = await merchantWithCustomer();
    const past = await api.post('/subscriptions', token, {
      ...trial,
      customer_id: customer.id,
      started_at: '2026-01-01T00:00:00Z',
      trial_ends_at: '2026-01-15T12:00:00Z',
    });
    expect(past.status, JSON.stringify(past.body)).toBe(201);
    expect(past.body.data).toMatchObject({ status: 'active', trial_ends_at: '2026-01-15T12:00:00Z' });
    expect(await events(token, past.body.data.id)).toEqual([
      ['trial_converted', '2026-01-15T12:00:00Z', '0.00', '100.00'],
      ['created', '2026-01-01T00:00:00Z', '0.00', '0.00'],
    ]);

    for (const [body, message] of [
      [
        { started_at: '2026-05-01T00:00:00Z', trial_ends_at: '2026-05-01T00:00:00Z' },
        'The trial ends at field must be a date after started at.',
      ],
      [{ trial_ends_at: '2026-05-01T00:00:00Z' }, 'The trial ends at field must be a date after started at.'],
    ] as const) {
      const res = await api.post('/subscriptions', token, { ...trial, customer_id: await newCustomerId(token), ...body });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ trial_ends_at: [message] });
    }

    const batch = await api.post('/subscriptions/batch', token, {
      subscriptions: [
        {
          ...trial,
          external_id: 't-converted',
          customer_email: 'a@example.com',
          started_at: '2026-02-01T00:00:00Z',
          trial_ends_at: '2026-02-08T00:00:00Z',
        },
        {
          ...trial,
          external_id: 't-cancelled',
          customer_email: 'b@example.com',
          started_at: '2026-02-03T00:00:00Z',
          trial_ends_at: '2026-02-17T00:00:00Z',
          cancelled_at: '2026-02-10T00:00:00Z',
        },
        {
          ...trial,
          external_id: 't-running',
          customer_email: 'c@example.com',
          started_at: '2026-05-25T00:00:00Z',
          trial_ends_at: '2026-06-08T00:00:00Z',
        },
        {
          ...trial,
          external_id: 't-bad',
          customer_email: 'd@example.com',
          started_at: '2026-05-25T00:00:00Z',
          trial_ends_at: '2026-05-20T00:00:00Z',
        },
      ],
    });
    expect(batch.body.data, JSON.stringify(batch.body)).toMatchObject({ created: 3, failed: 1 });
    const statuses = (await api.get('/subscriptions?per_page=10', token)).body.data.map((s: { external_id: string; status: string }) => [
      s.external_id,
      s.status,
    ]);
    expect(statuses).toEqual(
      expect.arrayContaining([
        ['t-converted', 'active'],
        ['t-cancelled', 'cancelled'],
        ['t-running', 'trialing'],
      ]),
    );
    const { summary } = await trials(token, 'start_date=2026-01-01&end_date=2026-05-31&interval=month');
    expect(summary).toEqual({
      trials_started: 4,
      converted: 2,
      cancelled: 1,
      still_trialing: 1,
      conversion_rate: 66.67,
      avg_days_to_convert: 10.75,
    });
    const feb = (await api.get('/metrics/mrr?start_date=2026-02-01&end_date=2026-02-28&interval=month', token)).body.data[0];
    expect(feb).toMatchObject({ new: '100.00', churn: '0.00', mrr: '200.00' });
    // The running trial armed the scheduler (an internal bus event: an import sends no webhooks), which converts it at its end.
    const armed = (await outboxEvents(merchantId)).filter((e) => e.type === 'subscription.trial_imported');
    expect(armed.map((e) => [e.type, e.data.object.status, e.data.object.trial_ends_at])).toEqual([
      ['subscription.trial_imported', 'trialing', '2026-06-08T00:00:00Z'],
    ]);
    const [schedule] = scheduleOf({ ...armed[0], merchant_id: merchantId });
    expect(schedule).toEqual({
      merchant_id: merchantId,
      subscription_id: armed[0].data.object.id,
      cancel_at: '2026-06-08T00:00:00Z',
      kind: 'convert',
    });
    clock.set('2026-06-08T00:00:00Z');
    expect(await checkScheduledCancel(schedule)).toEqual({ due: true, applied: true });
    expect((await api.get(`/subscriptions/${armed[0].data.object.id}`, token)).body.data).toMatchObject({ status: 'active' });
  });
});

describe('a recorded event meets a change the scheduler has not applied yet', () => {
  it("applies the trial's conversion first: the same figures, record and events as when the scheduler ran before it", async () => {
    const run = async (schedulerFirst: boolean) => {
      const clock = fixedClock('2026-03-01T00:00:00Z');
      const { token, merchantId, customer } = await merchantWithCustomer();
      const id = (
        await api.post('/subscriptions', token, {
          ...trial,
          customer_id: customer.id,
          started_at: '2026-03-01T00:00:00Z',
          trial_ends_at: '2026-03-15T00:00:00Z',
        })
      ).body.data.id;
      clock.set('2026-03-20T00:00:00Z');
      if (schedulerFirst)
        expect(
          await checkScheduledCancel({ merchant_id: merchantId, subscription_id: id, cancel_at: '2026-03-15T00:00:00Z', kind: 'convert' }),
        ).toEqual({ due: true, applied: true });
      const recorded = await api.post('/subscriptions/events', token, {
        customer_id: customer.id,
        subscription_id: id,
        event_type: 'upgrade',
        old_amount: '100',
        new_amount: '150',
        occurred_at: '2026-03-18T00:00:00Z',
      });
      expect(recorded.status, JSON.stringify(recorded.body)).toBe(201);
      const sub = (await api.get(`/subscriptions/${id}`, token)).body.data;
      const days = (await api.get('/metrics/mrr?start_date=2026-03-14&end_date=2026-03-19&interval=day', token)).body.data;
      return {
        sub: [sub.status, sub.mrr],
        events: (await events(token, id)).map((e: unknown[]) => e.slice(0, 2)),
        days: days.map((d: { date: string; mrr: string; new: string; expansion: string }) => [d.date, d.mrr, d.new, d.expansion]),
        webhooks: (await outboxEvents(merchantId)).filter((e) => e.type === 'subscription.trial_converted').length,
      };
    };
    const first = await run(true);
    expect(first).toEqual({
      sub: ['active', '150.00'],
      // Newest first.
      events: [
        ['upgrade', '2026-03-18T00:00:00Z'],
        ['trial_converted', '2026-03-15T00:00:00Z'],
        ['created', '2026-03-01T00:00:00Z'],
      ],
      days: [
        ['2026-03-14', '0.00', '0.00', '0.00'],
        ['2026-03-15', '100.00', '100.00', '0.00'],
        ['2026-03-16', '100.00', '0.00', '0.00'],
        ['2026-03-17', '100.00', '0.00', '0.00'],
        ['2026-03-18', '150.00', '0.00', '50.00'],
        ['2026-03-19', '150.00', '0.00', '0.00'],
      ],
      webhooks: 1,
    });
    expect(await run(false)).toEqual(first);
  });
});

describe('failed renewals', () => {
  it('past due keeps the MRR (past_due_mrr), recover returns it to active, and a subscription past due delinquency_days is cancelled as delinquent', async () => {
    const clock = fixedClock('2026-03-01T00:00:00Z');
    const { token, merchantId, customer } = await merchantWithCustomer();
    const { body } = await api.post('/subscriptions', token, { ...trial, customer_id: customer.id, started_at: '2026-01-01T00:00:00Z' });
    const id = body.data.id;
    expect((await api.put(`/subscriptions/${id}/recover`, token, {})).body.errors).toEqual({
      status: ['Only a past-due subscription can be recovered; it is active.'],
    });
    const failed = await api.put(`/subscriptions/${id}/past-due`, token, { failed_at: '2026-02-10T00:00:00Z' });
    expect(failed.status, JSON.stringify(failed.body)).toBe(200);
    expect(failed.body.data).toMatchObject({ status: 'past_due', failed_at: '2026-02-10T00:00:00Z', mrr: '100.00' });
    expect((await api.put(`/subscriptions/${id}/past-due`, token, {})).status).toBe(422);
    expect((await api.get('/metrics/summary', token)).body.data).toMatchObject({ current_mrr: '100.00', active_subscriptions: 0 });
    const feb = (await api.get('/metrics/mrr?start_date=2026-02-01&end_date=2026-02-28&interval=month', token)).body.data[0];
    expect(feb).toMatchObject({ mrr: '100.00', past_due_mrr: '100.00' });

    const recovered = await api.put(`/subscriptions/${id}/recover`, token, { recovered_at: '2026-02-20T00:00:00Z' });
    expect(recovered.body.data).toMatchObject({ status: 'active', failed_at: null });
    const febAgain = (await api.get('/metrics/mrr?start_date=2026-02-01&end_date=2026-02-28&interval=month', token)).body.data[0];
    expect(febAgain).toMatchObject({ mrr: '100.00', past_due_mrr: '0.00', churn: '0.00' });
    expect((await events(token, id)).map((e: string[]) => e[0])).toEqual(['recovered', 'past_due', 'created']);

    // Past due again; 30 days later (the default) it is cancelled as delinquent.
    await api.put(`/subscriptions/${id}/past-due`, token, { failed_at: '2026-02-25T00:00:00Z' });
    const armed = { merchant_id: merchantId, subscription_id: id, cancel_at: '2026-02-25T00:00:00Z', kind: 'delinquent' as const };
    expect(await checkScheduledCancel(armed)).toEqual({ due: false, wake_at: '2026-03-27T00:00:00Z', far: false });
    clock.set('2026-03-27T00:00:10Z');
    expect(await checkScheduledCancel(armed)).toEqual({ due: true, applied: true });
    expect((await api.get(`/subscriptions/${id}`, token)).body.data).toMatchObject({
      status: 'cancelled',
      cancelled_at: '2026-03-27T00:00:00Z',
      cancel_reason: 'delinquent',
    });
    const mar = (await api.get('/metrics/mrr?start_date=2026-03-01&end_date=2026-03-27&interval=month', token)).body.data[0];
    expect(mar).toMatchObject({
      churn: '-100.00',
      delinquent_churn: '-100.00',
      voluntary_churn: '0.00',
      past_due_mrr: '0.00',
      mrr: '0.00',
    });
    expect((await outboxEvents(merchantId)).map((e) => e.type)).toEqual(
      expect.arrayContaining(['subscription.past_due', 'subscription.recovered', 'subscription.cancelled']),
    );
    const recovery = (await api.get('/metrics/recovery?start_date=2026-02-01&end_date=2026-03-27&interval=month', token)).body;
    expect(recovery.data).toEqual([
      {
        date: '2026-02-01',
        past_due_started: { mrr: '200.00', subscriptions: 2 },
        recovered: { mrr: '100.00', subscriptions: 1 },
        churned: { mrr: '0.00', subscriptions: 0 },
        recovery_rate: 100,
      },
      {
        date: '2026-03-01',
        past_due_started: { mrr: '0.00', subscriptions: 0 },
        recovered: { mrr: '0.00', subscriptions: 0 },
        churned: { mrr: '100.00', subscriptions: 1 },
        recovery_rate: 0,
      },
    ]);
    expect(recovery.summary).toEqual({
      past_due_started: { mrr: '200.00', subscriptions: 2 },
      recovered: { mrr: '100.00', subscriptions: 1 },
      churned: { mrr: '100.00', subscriptions: 1 },
      recovery_rate: 50,
    });
  });
});

describe('committed MRR (GET /metrics/forecast)', () => {
  it("today's MRR moved by the scheduled conversions, cancellations and delinquent cancellations, at each month end", async () => {
    const clock = fixedClock('2026-11-28T10:00:00Z');
    const { token, merchantId, customer } = await merchantWithCustomer();
    const sub = async (customerId: number, body: Record<string, unknown>) => {
      const res = await api.post('/subscriptions', token, { ...trial, customer_id: customerId, ...body });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.data.id as number;
    };
    const cancelling = await sub(customer.id, { mrr: '100', started_at: '2026-01-01T00:00:00Z' });
    await api.put(`/subscriptions/${cancelling}/cancel`, token, { cancelled_at: '2026-12-15T00:00:00Z' });
    const trialing = await sub(await newCustomerId(token), {
      mrr: '50',
      started_at: '2026-11-20T00:00:00Z',
      trial_ends_at: '2027-01-05T00:00:00Z',
    });
    const failing = await sub(await newCustomerId(token), { mrr: '80', started_at: '2026-02-01T00:00:00Z' });
    await api.put(`/subscriptions/${failing}/past-due`, token, { failed_at: '2026-11-20T00:00:00Z' });
    await sub(await newCustomerId(token), { mrr: '30', started_at: '2026-03-01T00:00:00Z' });

    const forecast = async (query: string) => {
      const res = await api.get(`/metrics/forecast?${query}`, token);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    };
    const three = await forecast('months=3');
    expect(three.data).toEqual([
      { date: '2026-11-30', committed_mrr: '210.00', new: '0.00', churn: '0.00', delinquent_churn: '0.00', unconverted: {} },
      { date: '2026-12-31', committed_mrr: '30.00', new: '0.00', churn: '-180.00', delinquent_churn: '-80.00', unconverted: {} },
      { date: '2027-01-31', committed_mrr: '80.00', new: '50.00', churn: '0.00', delinquent_churn: '0.00', unconverted: {} },
    ]);
    expect(three.summary).toEqual({ current_mrr: '210.00', committed_mrr: '80.00', unconverted: {} });
    expect((await forecast('')).data).toHaveLength(12);

    // Recovered: no delinquent cancellation any more; the schedule cleared: no churn.
    await api.put(`/subscriptions/${failing}/recover`, token, {});
    await api.put(`/subscriptions/${cancelling}`, token, { cancel_at: null });
    expect((await forecast('months=2')).data.map((p: { committed_mrr: string }) => p.committed_mrr)).toEqual(['210.00', '210.00']);

    // Due but not applied yet (the scheduler has a minute): still scheduled; once applied, in the actuals instead.
    clock.set('2027-01-05T00:00:01Z');
    expect((await forecast('months=1')).summary).toEqual({ current_mrr: '210.00', committed_mrr: '260.00', unconverted: {} });
    expect(
      await checkScheduledCancel({
        merchant_id: merchantId,
        subscription_id: trialing,
        cancel_at: '2027-01-05T00:00:00Z',
        kind: 'convert',
      }),
    ).toEqual({ due: true, applied: true });
    const after = await forecast('months=1');
    expect(after.summary).toEqual({ current_mrr: '260.00', committed_mrr: '260.00', unconverted: {} });
    expect(after.data[0]).toMatchObject({ date: '2027-01-31', new: '0.00' });

    for (const bad of ['months=0', 'months=25', 'months=x', 'start_date=2026-01-01']) {
      const res = await api.get(`/metrics/forecast?${bad}`, token);
      expect(res.status, bad).toBe(422);
    }
    expect((await api.get('/metrics/forecast?months=25', token)).body.errors).toEqual({
      months: ['The months field must be an integer between 1 and 24.'],
    });
  });
});
