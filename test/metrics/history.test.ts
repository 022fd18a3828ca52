import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, ok, useApi } from '../support/api.ts';

/**
 * History you can trust, through the API: corrections leave every figure as if the mistake had
 * never been made, whenever they are made.
 */
const api = useApi();
afterEach(() => resetClock());

describe('deleting corrects a mistake', () => {
  it('a subscription created by mistake and deleted books no churn: every figure equals the history without it', async () => {
    /** The same history for a new merchant, with or without the mistake; its figures read on 03-20. */
    const history = async (mistake: boolean) => {
      const clock = fixedClock('2026-03-01T09:00:00Z');
      const { token } = await newMerchant();
      const customer = async (email: string) => (await ok(api.post('/customers', token, { email, name: email }), 201)).data.id as number;
      const [a, b, c] = [await customer('a@delete.test'), await customer('b@delete.test'), await customer('c@delete.test')];
      const subs = [];
      for (const [id, mrr] of [
        [a, '700'],
        [b, '100'],
      ] as const) {
        subs.push(
          (
            await ok(
              api.post('/subscriptions', token, {
                customer_id: id,
                plan_name: 'P',
                mrr,
                billing_cycle: 'monthly',
                started_at: '2026-01-10T00:00:00Z',
              }),
              201,
            )
          ).data.id,
        );
      }
      clock.set('2026-03-10T09:00:00Z');
      await ok(api.put(`/subscriptions/${subs[0]}`, token, { mrr: '650' })); // a real contraction, kept in the figures
      let events = 0;
      if (mistake) {
        // A subscription for C, back-dated into February, deleted a week later.
        clock.set('2026-03-12T09:00:00Z');
        const wrong = (
          await ok(
            api.post('/subscriptions', token, {
              customer_id: c,
              plan_name: 'Oops',
              mrr: '1200',
              billing_cycle: 'monthly',
              started_at: '2026-02-15T00:00:00Z',
            }),
            201,
          )
        ).data;
        expect((await ok(api.get('/metrics/summary', token))).data.current_mrr).toBe('1950.00');
        clock.set('2026-03-19T09:00:00Z');
        await ok(api.del(`/subscriptions/${wrong.id}`, token), 204);
        events = (await ok(api.get(`/subscriptions/events?subscription_id=${wrong.id}`, token))).meta.total;
      }
      clock.set('2026-03-20T09:00:00Z');
      return {
        events,
        summary: (await ok(api.get('/metrics/summary', token))).data,
        months: (await ok(api.get('/metrics/mrr?start_date=2026-01-01&end_date=2026-03-20&interval=month', token))).data,
        days: (await ok(api.get('/metrics/mrr?start_date=2026-02-01&end_date=2026-03-20&interval=day', token))).data,
        cohorts: (await ok(api.get('/metrics/cohorts?start_month=2026-01&end_month=2026-03', token))).data,
      };
    };
    const clean = await history(false);
    const corrected = await history(true);
    expect(corrected.events).toBe(1); // its events stay listed
    expect({ ...corrected, events: 0 }).toEqual(clean);
    expect(corrected.summary).toMatchObject({ current_mrr: '750.00', active_customers: 2, active_subscriptions: 2 });
    expect(corrected.days.every((d: { churn: string }) => d.churn === '0.00')).toBe(true);
  });

  it('deleting a customer changes no figure', async () => {
    fixedClock('2026-03-01T09:00:00Z');
    const { token } = await newMerchant();
    const id = (await ok(api.post('/customers', token, { email: 'gone@delete.test', name: 'G' }), 201)).data.id;
    await ok(
      api.post('/subscriptions', token, {
        customer_id: id,
        plan_name: 'P',
        mrr: '300',
        billing_cycle: 'monthly',
        started_at: '2026-02-01T00:00:00Z',
      }),
      201,
    );
    await ok(
      api.post('/orders', token, {
        order_no: 'G-1',
        amount: '120',
        customer_email: 'gone@delete.test',
        status: 'paid',
        billing_cycle: 'quarterly',
        paid_at: '2026-02-10T00:00:00Z',
      }),
      201,
    );
    const figures = async () => [
      (await ok(api.get('/metrics/summary', token))).data,
      (await ok(api.get('/metrics/mrr?start_date=2026-01-01&end_date=2026-03-01&interval=month', token))).data,
      (await ok(api.get('/metrics/cohorts?start_month=2026-01&end_month=2026-03', token))).data,
    ];
    const before = await figures();
    expect(before[0]).toMatchObject({ current_mrr: '340.00', active_customers: 1 });
    await ok(api.del(`/customers/${id}`, token), 204);
    expect(await figures()).toEqual(before);
  });
});

describe('no double counting', () => {
  it("the imported line ends where the customer's first subscription starts; later events must name their subscription", async () => {
    fixedClock('2026-03-01T09:00:00Z');
    const { token } = await newMerchant();
    const customer = async (email: string) => (await ok(api.post('/customers', token, { email, name: email }), 201)).data.id as number;
    const [a, b] = [await customer('a@double.test'), await customer('b@double.test')];
    const record = (body: Record<string, unknown>) => api.post('/subscriptions/events', token, body);
    // A's history from elsewhere, then A's subscription here (the same 700 going on).
    await ok(
      record({ customer_id: a, event_type: 'created', old_amount: '0', new_amount: '100', occurred_at: '2025-06-01T00:00:00Z' }),
      201,
    );
    await ok(
      record({ customer_id: a, event_type: 'upgrade', old_amount: '100', new_amount: '700', occurred_at: '2025-09-01T00:00:00Z' }),
      201,
    );
    const sub = (
      await ok(
        api.post('/subscriptions', token, {
          customer_id: a,
          plan_name: 'P',
          mrr: '700',
          billing_cycle: 'monthly',
          started_at: '2026-01-01T00:00:00Z',
        }),
        201,
      )
    ).data;
    // B has only imported history: MRR, but no subscription.
    await ok(
      record({ customer_id: b, event_type: 'created', old_amount: '0', new_amount: '100', occurred_at: '2025-10-01T00:00:00Z' }),
      201,
    );

    const summary = (await ok(api.get('/metrics/summary', token))).data;
    expect(summary).toMatchObject({ current_mrr: '800.00', active_customers: 2 });
    expect(summary.active_subscriptions).toBe((await ok(api.get('/subscriptions?status=active', token))).meta.total);
    expect(summary.active_subscriptions).toBe(1);
    // One instant, one movement: the imported 700 ending and the subscription's 700 starting move nothing.
    const months = (await ok(api.get('/metrics/mrr?start_date=2025-06-01&end_date=2026-02-28&interval=month', token))).data;
    expect(months.map((m: any) => [m.date, m.mrr, m.new, m.expansion, m.churn, m.active_subscriptions])).toEqual([
      ['2025-06-01', '100.00', '100.00', '0.00', '0.00', 0],
      ['2025-07-01', '100.00', '0.00', '0.00', '0.00', 0],
      ['2025-08-01', '100.00', '0.00', '0.00', '0.00', 0],
      ['2025-09-01', '700.00', '0.00', '600.00', '0.00', 0],
      ['2025-10-01', '800.00', '100.00', '0.00', '0.00', 0],
      ['2025-11-01', '800.00', '0.00', '0.00', '0.00', 0],
      ['2025-12-01', '800.00', '0.00', '0.00', '0.00', 0],
      ['2026-01-01', '800.00', '0.00', '0.00', '0.00', 1],
      ['2026-02-01', '800.00', '0.00', '0.00', '0.00', 1],
    ]);

    // From the subscription's start on, an event without a subscription is refused; nothing is stored.
    const events = async () => (await ok(api.get(`/subscriptions/events?customer_id=${a}`, token))).meta.total;
    const before = await events();
    for (const occurred_at of ['2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z', undefined]) {
      const r = await record({ customer_id: a, event_type: 'upgrade', old_amount: '700', new_amount: '800', occurred_at });
      expect(r.status, String(occurred_at)).toBe(422);
      expect(r.body.errors).toEqual({
        subscription_id: [
          "The subscription id field is required for an event at or after 2026-01-01T00:00:00Z, when the customer's first subscription started: name the subscription this event belongs to.",
        ],
      });
    }
    expect(await events()).toBe(before);
    expect((await ok(api.get('/metrics/summary', token))).data.current_mrr).toBe('800.00');
    // Named, it counts on the subscription's line; before the start, history may still be added.
    await ok(
      record({
        customer_id: a,
        subscription_id: sub.id,
        event_type: 'upgrade',
        old_amount: '700',
        new_amount: '750',
        occurred_at: '2026-02-01T00:00:00Z',
      }),
      201,
    );
    await ok(
      record({ customer_id: a, event_type: 'downgrade', old_amount: '700', new_amount: '650', occurred_at: '2025-12-01T00:00:00Z' }),
      201,
    );
    const after = (await ok(api.get('/metrics/mrr?start_date=2025-12-01&end_date=2026-02-28&interval=month', token))).data;
    expect(after.map((m: any) => [m.date, m.mrr, m.expansion, m.contraction])).toEqual([
      ['2025-12-01', '750.00', '0.00', '-50.00'],
      ['2026-01-01', '800.00', '50.00', '0.00'],
      ['2026-02-01', '850.00', '50.00', '0.00'],
    ]);
  });
});

describe('a change of plan alone keeps the line amount', () => {
  it('history recorded later before it moves it too: the next mrr change is measured from the recorded amount', async () => {
    const clock = fixedClock('2026-11-20T09:00:00Z');
    const { token } = await newMerchant();
    const customer = (await ok(api.post('/customers', token, { email: 'kept@history.test', name: 'Kept' }), 201)).data.id as number;
    const created = await ok(
      api.post('/subscriptions', token, {
        customer_id: customer,
        plan_name: 'Basic',
        mrr: '587.53',
        billing_cycle: 'monthly',
        started_at: '2025-08-26T00:00:00Z',
      }),
      201,
    );
    const id = created.data.id as number;
    await ok(api.put(`/subscriptions/${id}`, token, { plan_name: 'Pro' }));
    clock.set('2026-11-20T09:00:01Z');
    await ok(api.put(`/subscriptions/${id}`, token, { mrr: '479.53' }));
    const today = async () =>
      (await ok(api.get('/metrics/mrr?start_date=2026-11-20&end_date=2026-11-20&interval=day', token))).data[0] as Record<string, string>;
    expect([(await today()).expansion, (await today()).contraction]).toEqual(['0.00', '-108.00']);
    await ok(
      api.post('/subscriptions/events', token, {
        subscription_id: id,
        customer_id: customer,
        event_type: 'downgrade',
        old_amount: '587.53',
        new_amount: '120.00',
        occurred_at: '2026-10-25T00:00:00Z',
      }),
      201,
    );
    const point = await today();
    expect([point.mrr, point.expansion, point.contraction]).toEqual(['479.53', '359.53', '0.00']);
    // A further change is measured from there too.
    await ok(api.put(`/subscriptions/${id}`, token, { mrr: '350.53' }));
    const later = await today();
    expect([later.mrr, later.expansion, later.contraction]).toEqual(['350.53', '230.53', '0.00']);
  });
});
