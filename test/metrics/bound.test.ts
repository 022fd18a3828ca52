import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { TOO_FAR_BACK } from '#lib/metrics/store';
import { newMerchant, useApi } from '../support/api.ts';

/**
 * The bound of a back-dated change (README "Revenue metrics"): a change is one transaction of at
 * most 100 actions, so one that would reclassify more of a customer's history than fits (here:
 * 100 movements on 100 distinct days, each turned from reactivation/churn into
 * expansion/contraction) is refused with a 422 on the date that reaches back, and nothing of it is
 * stored. The same change in smaller steps (fewer days reclassified at once) goes through.
 */
const api = useApi();
afterEach(() => resetClock());

describe('a back-dated change reclassifying more than one transaction can hold', () => {
  it('is a 422 on the field that reaches back; nothing is stored', { timeout: 120_000 }, async () => {
    fixedClock('2024-06-01T00:00:00Z');
    const { token } = await newMerchant();
    const customer = (await api.post('/customers', token, { email: 'far@bound.test', name: 'F' })).body.data.id;
    const day = (i: number) => new Date(Date.parse('2024-01-01T00:00:00Z') + i * 86_400_000).toISOString().slice(0, 19) + 'Z';
    for (let i = 0; i < 100; i++) {
      const r = await api.post('/subscriptions/events', token, { customer_id: customer, event_type: i % 2 ? 'cancel' : 'reactivated', old_amount: i % 2 ? '10' : '0', new_amount: i % 2 ? '0' : '10', occurred_at: day(i) });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const series = async () => (await api.get('/metrics/mrr?start_date=2023-12-01&end_date=2024-05-31&interval=day', token)).body;
    const before = await series();
    expect(before.data.filter((e: { churn: string }) => e.churn === '-10.00')).toHaveLength(50);

    const sub = await api.post('/subscriptions', token, { customer_id: customer, plan_name: 'P', mrr: '5', billing_cycle: 'monthly', started_at: '2023-12-01T00:00:00Z' });
    expect(sub.status).toBe(422);
    expect(sub.body.errors).toEqual({ started_at: [TOO_FAR_BACK] });
    const order = await api.post('/orders', token, { order_no: 'FAR-1', amount: '120', customer_email: 'far@bound.test', status: 'paid', billing_cycle: 'yearly', paid_at: '2023-12-15T00:00:00Z' });
    expect(order.status).toBe(422);
    expect(order.body.errors).toEqual({ paid_at: [TOO_FAR_BACK] });
    const batch = await api.post('/orders/batch', token, { orders: [{ order_no: 'FAR-2', amount: '120', customer_email: 'far@bound.test', status: 'paid', billing_cycle: 'yearly', paid_at: '2023-12-15T00:00:00Z' }] });
    expect(batch.status).toBe(200);
    expect(batch.body.data.results.failed).toEqual([{ index: 0, reason: 'validation_error', message: TOO_FAR_BACK, identifier: 'FAR-2' }]);

    expect(await series()).toEqual(before);
    expect((await api.get(`/subscriptions?customer_id=${customer}`, token)).body.meta.total).toBe(0);
    expect((await api.get('/orders/FAR-1', token)).status).toBe(404);
    expect((await api.get('/orders/FAR-2', token)).status).toBe(404);
    // A recorded event on another line (a subscription starting in 2030) reaching back as far: refused too.
    const later = await api.post('/subscriptions', token, { customer_id: customer, plan_name: 'P', mrr: '5', billing_cycle: 'monthly', started_at: '2030-01-01T00:00:00Z' });
    expect(later.status, JSON.stringify(later.body)).toBe(201);
    const event = await api.post('/subscriptions/events', token, { customer_id: customer, subscription_id: later.body.data.id, event_type: 'created', old_amount: '0', new_amount: '5', occurred_at: '2023-12-01T00:00:00Z' });
    expect(event.status).toBe(422);
    expect(event.body.errors).toEqual({ occurred_at: [TOO_FAR_BACK] });
    expect((await api.get(`/subscriptions/events?customer_id=${customer}&event_type=created`, token)).body.meta.total).toBe(1); // the 2030 subscription's own
    expect(await series()).toEqual(before);

    // Reaching back less far (a quarter of the movements reclassified) fits. The subscription's line
    // now starts on day 75, where the imported line ends: 10 → 5 that day, nothing after it.
    const near = await api.post('/subscriptions/events', token, { customer_id: customer, subscription_id: later.body.data.id, event_type: 'created', old_amount: '0', new_amount: '5', occurred_at: day(75) });
    expect(near.status, JSON.stringify(near.body)).toBe(201);
    const after = await series();
    expect(after.data.filter((e: { contraction: string }) => e.contraction !== '0.00').map((e: { date: string; contraction: string }) => [e.date, e.contraction])).toEqual([[day(75).slice(0, 10), '-5.00']]);
    expect(after.data.filter((e: { churn: string }) => e.churn === '-10.00')).toHaveLength(37);
    expect(after.data.at(-1).mrr).toBe('5.00');
  });
});
