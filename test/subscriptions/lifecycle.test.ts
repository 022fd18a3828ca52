import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { useApi } from '../support/api.ts';
import { factoriesFor } from '../support/factories.ts';
import { outboxEvents } from '../orders/helpers.ts';

const api = useApi();
const { merchantWithCustomer } = factoriesFor(api);
afterEach(() => resetClock());

/** The customer's current MRR as the API shows it (`GET /customers/{id}`). */
const customerMrr = async (token: string, customerId: number) => {
  const r = await api.get(`/customers/${customerId}`, token);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data.mrr as string;
};

const create = async (token: string, customerId: number, over: Record<string, unknown> = {}) =>
  api.post('/subscriptions', token, { customer_id: customerId, plan_name: 'Basic', mrr: '100.00', billing_cycle: 'monthly', ...over });

describe('subscription lifecycle', () => {
  it('create → upgrade → downgrade → plan-only → pause → reactivate → cancel → reactivate: states, events, MRR, webhooks', async () => {
    const clock = fixedClock('2026-03-01T10:00:00Z');
    const { token, merchantId, customer } = await merchantWithCustomer();
    const created = await create(token, customer.id, { started_at: '2026-02-15T00:00:00+08:00' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const sub = created.body.data;
    expect(sub).toEqual({
      id: expect.any(Number),
      customer_id: customer.id,
      external_id: null,
      status: 'active',
      plan_name: 'Basic',
      mrr: '100.00',
      currency: 'TWD',
      billing_cycle: 'monthly',
      source: 'api',
      started_at: '2026-02-14T16:00:00Z',
      current_period_start: '2026-02-14T16:00:00Z',
      cancelled_at: null,
      cancel_at: null,
      paused_at: null,
      cancel_reason: null,
      trial_ends_at: null,
      failed_at: null,
      created_at: '2026-03-01T10:00:00Z',
      updated_at: '2026-03-01T10:00:00Z',
    });
    expect(await customerMrr(token, customer.id)).toBe('100.00');

    clock.set('2026-03-02T10:00:00Z');
    expect((await api.put(`/subscriptions/${sub.id}`, token, { mrr: '150', plan_name: 'Pro' })).body.data).toMatchObject({
      mrr: '150.00',
      plan_name: 'Pro',
    });
    clock.set('2026-03-03T10:00:00Z');
    await api.put(`/subscriptions/${sub.id}`, token, { mrr: '120.5' });
    clock.set('2026-03-04T10:00:00Z');
    const planOnly = await api.put(`/subscriptions/${sub.id}`, token, { plan_name: 'Pro+', mrr: '120.50' });
    expect(planOnly.body.data).toMatchObject({ plan_name: 'Pro+', mrr: '120.50', updated_at: '2026-03-04T10:00:00Z' });
    expect(await customerMrr(token, customer.id)).toBe('120.50');

    clock.set('2026-03-05T10:00:00Z');
    const paused = await api.put(`/subscriptions/${sub.id}/pause`, token, {});
    expect(paused.body.data).toMatchObject({ status: 'paused', paused_at: '2026-03-05T10:00:00Z' });
    expect(await customerMrr(token, customer.id)).toBe('0.00');
    clock.set('2026-03-06T10:00:00Z');
    expect((await api.put(`/subscriptions/${sub.id}/reactivate`, token)).body.data).toMatchObject({ status: 'active', paused_at: null });
    clock.set('2026-03-07T10:00:00Z');
    const cancelled = await api.put(`/subscriptions/${sub.id}/cancel`, token, {
      reason: 'too expensive',
      cancelled_at: '2026-03-06T23:00:00Z',
    });
    expect(cancelled.body.data).toMatchObject({
      status: 'cancelled',
      cancelled_at: '2026-03-06T23:00:00Z',
      cancel_reason: 'too expensive',
    });
    expect(await customerMrr(token, customer.id)).toBe('0.00');
    clock.set('2026-03-08T10:00:00Z');
    expect((await api.put(`/subscriptions/${sub.id}/reactivate`, token)).body.data).toMatchObject({
      status: 'active',
      cancelled_at: null,
      cancel_reason: null,
    });
    expect(await customerMrr(token, customer.id)).toBe('120.50');

    const events = (await api.get(`/subscriptions/events?subscription_id=${sub.id}&per_page=100`, token)).body;
    expect(events.meta.total).toBe(6);
    const rows = events.data.map((e: any) => [
      e.event_type,
      e.old_amount,
      e.new_amount,
      e.amount_change,
      e.old_plan,
      e.new_plan,
      e.occurred_at,
      e.source,
    ]);
    expect(rows).toEqual(
      [
        ['reactivated', '0.00', '120.50', '120.50', 'Pro+', 'Pro+', '2026-03-08T10:00:00Z', 'api'],
        ['reactivated', '0.00', '120.50', '120.50', 'Pro+', 'Pro+', '2026-03-06T10:00:00Z', 'api'],
        ['cancel', '120.50', '0.00', '-120.50', 'Pro+', 'Pro+', '2026-03-06T23:00:00Z', 'api'],
        ['downgrade', '150.00', '120.50', '-29.50', 'Pro', 'Pro', '2026-03-03T10:00:00Z', 'api'],
        ['upgrade', '100.00', '150.00', '50.00', 'Basic', 'Pro', '2026-03-02T10:00:00Z', 'api'],
        ['created', '0.00', '100.00', '100.00', null, 'Basic', '2026-02-14T16:00:00Z', 'api'],
      ].sort((a, b) => String(b[6]).localeCompare(String(a[6]))),
    );
    const hooks = (await outboxEvents(merchantId)).map((e) => e.type);
    expect(hooks).toEqual([
      'subscription.created',
      'subscription.updated',
      'subscription.updated',
      'subscription.updated',
      'subscription.paused',
      'subscription.reactivated',
      'subscription.cancelled',
      'subscription.reactivated',
    ]);
  });

  it('a recorded event that is (or becomes) the latest change shows on the record: mrr and plan_name, whatever order history arrives in', async () => {
    fixedClock('2026-06-01T00:00:00Z');
    const { token, customer } = await merchantWithCustomer();
    const sub = (await create(token, customer.id, { started_at: '2026-01-01T00:00:00Z' })).body.data;
    const record = async (body: Record<string, unknown>) => {
      const r = await api.post('/subscriptions/events', token, { subscription_id: sub.id, customer_id: customer.id, ...body });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    };
    const shown = async () => (await api.get(`/subscriptions/${sub.id}`, token)).body.data;
    await record({ event_type: 'upgrade', old_amount: '100', new_amount: '250.50', new_plan: 'Pro', occurred_at: '2026-03-01T00:00:00Z' });
    expect(await shown()).toMatchObject({ mrr: '250.50', plan_name: 'Pro' });
    // An older event arriving later is history: the record keeps the latest.
    await record({ event_type: 'upgrade', old_amount: '100', new_amount: '150', occurred_at: '2026-02-01T00:00:00Z' });
    expect(await shown()).toMatchObject({ mrr: '250.50', plan_name: 'Pro' });
    // A later one without a plan keeps the plan; the list's MRR equals the metrics'.
    await record({ event_type: 'downgrade', old_amount: '250.50', new_amount: '200', occurred_at: '2026-04-01T00:00:00Z' });
    expect(await shown()).toMatchObject({ mrr: '200.00', plan_name: 'Pro' });
    expect((await api.get('/metrics/summary', token)).body.data.current_mrr).toBe('200.00');
    // A change through the API may not be dated before it.
    const early = await api.put(`/subscriptions/${sub.id}`, token, { mrr: '300', effective_at: '2026-03-15T00:00:00Z' });
    expect(early.status).toBe(422);
    expect(Object.keys(early.body.errors)).toEqual(['effective_at']);
  });

  it('a PUT that changes nothing answers the stored subscription and writes nothing (no event, no webhook)', async () => {
    const clock = fixedClock('2026-04-01T00:00:00Z');
    const { token, merchantId, customer } = await merchantWithCustomer();
    const sub = (await create(token, customer.id)).body.data;
    clock.set('2026-04-02T00:00:00Z');
    const same = await api.put(`/subscriptions/${sub.id}`, token, { mrr: 100, plan_name: 'Basic' });
    expect(same.status).toBe(200);
    expect(same.body.data).toEqual(sub);
    expect((await outboxEvents(merchantId)).map((e) => e.type)).toEqual(['subscription.created']);
    expect((await api.get('/subscriptions/events', token)).body.meta.total).toBe(1);
  });
});
