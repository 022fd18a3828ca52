import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { checkScheduledCancel } from '#lib/subscriptions/schedule';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { newMerchant, useApi } from '../support/api.ts';
import { runRenewalChecks } from '../support/renewals.ts';

/** Customers' `mrr` and `subscription_status`, and GET /customers/{id}/activities (docs/customers.md). */
const api = useApi();
afterEach(() => resetClock());

const customer = async (token: string, email: string) => {
  const r = await api.post('/customers', token, { email });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data as { id: number; mrr: string; subscription_status: string | null };
};
const shown = async (token: string, id: number) => {
  const one = (await api.get(`/customers/${id}`, token)).body.data;
  const listed = (await api.get('/customers?per_page=100', token)).body.data.find((c: { id: number }) => c.id === id);
  expect(listed.mrr, 'the list shows what the customer shows').toBe(one.mrr);
  expect(listed.subscription_status).toBe(one.subscription_status);
  return [one.mrr, one.subscription_status];
};

describe('a customer shows its MRR and subscription status now', () => {
  it('follows its subscription through upgrade, pause, a scheduled cancellation and a new subscription', async () => {
    fixedClock('2026-03-01T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    const c = await customer(token, 'sub@example.com');
    expect([c.mrr, c.subscription_status]).toEqual(['0.00', null]);
    const sub = (
      await api.post('/subscriptions', token, { customer_id: c.id, plan_name: 'Basic', mrr: '100.00', billing_cycle: 'monthly' })
    ).body.data;
    expect(await shown(token, c.id)).toEqual(['100.00', 'active']);
    fixedClock('2026-03-05T00:00:00Z');
    expect((await api.put(`/subscriptions/${sub.id}`, token, { mrr: '120.50' })).status).toBe(200);
    expect(await shown(token, c.id)).toEqual(['120.50', 'active']);
    expect((await api.put(`/subscriptions/${sub.id}/pause`, token, {})).status).toBe(200);
    expect(await shown(token, c.id)).toEqual(['0.00', 'paused']);
    expect((await api.put(`/subscriptions/${sub.id}/reactivate`, token, {})).status).toBe(200);
    // Cancelled from a date ahead: active until the scheduler applies it (within a minute of the date), as the subscription shows.
    expect((await api.put(`/subscriptions/${sub.id}/cancel`, token, { cancelled_at: '2026-04-01T00:00:00Z' })).status).toBe(200);
    expect(await shown(token, c.id)).toEqual(['120.50', 'active']);
    fixedClock('2026-04-01T00:00:30Z');
    expect(await checkScheduledCancel({ merchant_id: merchantId, subscription_id: sub.id, cancel_at: '2026-04-01T00:00:00Z' })).toEqual({
      due: true,
      applied: true,
    });
    expect(await shown(token, c.id)).toEqual(['0.00', 'cancelled']);
    expect(
      (await api.post('/subscriptions', token, { customer_id: c.id, plan_name: 'Pro', mrr: '80', billing_cycle: 'monthly' })).status,
    ).toBe(201);
    expect(await shown(token, c.id)).toEqual(['80.00', 'active']);
  });

  it("counts a recurring order's monthly share until its cycle ends and its renewal grace runs out; one-time orders count nothing", async () => {
    fixedClock('2026-03-10T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    const order = (no: string, amount: string, cycle: string) =>
      api.post('/orders', token, {
        order_no: no,
        amount,
        customer_email: 'orders@example.com',
        status: 'paid',
        billing_cycle: cycle,
        paid_at: '2026-03-01T00:00:00Z',
      });
    expect((await order('Q-1', '100.00', 'quarterly')).status).toBe(201);
    expect((await order('ONE-1', '500.00', 'one-time')).status).toBe(201);
    const id = (await api.get('/customers?search=orders@example.com', token)).body.data[0].id as number;
    expect(await shown(token, id)).toEqual(['33.33', null]);
    // Its cycle ended on 06-01: it still counts while its renewal grace (30 days) runs…
    fixedClock('2026-06-02T00:00:00Z');
    expect(await shown(token, id)).toEqual(['33.33', null]);
    // …and once that ran out and the scheduler settled it, it ended with its cycle.
    fixedClock('2026-07-01T00:00:01Z');
    await runRenewalChecks(merchantId, [id]);
    expect(await shown(token, id)).toEqual(['0.00', null]);
  });

  it('a customer whose stored steps do not reach now (or were never stored) is computed from its timeline', async () => {
    fixedClock('2026-03-01T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    const c = await customer(token, 'old@example.com');
    await api.post('/subscriptions', token, { customer_id: c.id, plan_name: 'B', mrr: '40', billing_cycle: 'monthly' });
    const paid = { amount: '120', customer_email: 'old@example.com', status: 'paid', billing_cycle: 'quarterly' };
    expect((await api.post('/orders', token, { ...paid, order_no: 'Q-1', paid_at: '2026-02-01T00:00:00Z' })).status).toBe(201);
    // As a head written before customers showed their standing.
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.customerTimeline(merchantId, c.id),
        UpdateExpression: 'REMOVE standing, standing_complete',
      }),
    );
    expect(await shown(token, c.id)).toEqual(['80.00', 'active']);
    // The order's quarter ended on 05-01: within its renewal grace it still counts.
    fixedClock('2026-05-02T00:00:00Z');
    expect(await shown(token, c.id)).toEqual(['80.00', 'active']);
    fixedClock('2026-06-01T00:00:00Z');
    await runRenewalChecks(merchantId, [c.id]);
    expect(await shown(token, c.id)).toEqual(['40.00', 'active']);
    // Steps cut short (as for a customer with more changes ahead than a head keeps): the same figures.
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.customerTimeline(merchantId, c.id),
        UpdateExpression: 'SET standing = :s, standing_complete = :f',
        ExpressionAttributeValues: { ':s': JSON.stringify([['2026-03-01T00:00:00Z', '999', 'active']]), ':f': false },
      }),
    );
    expect(await shown(token, c.id)).toEqual(['40.00', 'active']);
  });

  it('reading a customer by id reads it and its timeline head in one BatchGetItem: 3 requests in all', async () => {
    const { token } = await newMerchant();
    const c = await customer(token, 'cost@example.com');
    await api.post('/subscriptions', token, { customer_id: c.id, plan_name: 'B', mrr: '10', billing_cycle: 'monthly' });
    const one = await api.counted('GET', `/customers/${c.id}`, { token });
    expect(one.res.status).toBe(200);
    expect(one.res.body.data).toMatchObject({ mrr: '10.00', subscription_status: 'active' });
    expect(one.byCommand).toEqual({ GetItemCommand: 1, UpdateItemCommand: 1, BatchGetItemCommand: 1 });
    expect(one.requests).toBe(3);
  });
});

describe('GET /customers/{id}/activities', () => {
  it("lists the customer's movements newest first, with the subscription or order behind each, by page or cursor", async () => {
    fixedClock('2026-01-10T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    const c = await customer(token, 'moves@example.com');
    const sub = (await api.post('/subscriptions', token, { customer_id: c.id, plan_name: 'B', mrr: '100', billing_cycle: 'monthly' })).body
      .data;
    fixedClock('2026-02-10T00:00:00Z');
    await api.put(`/subscriptions/${sub.id}`, token, { mrr: '150' });
    fixedClock('2026-02-20T00:00:00Z');
    expect(
      (
        await api.post('/orders', token, {
          order_no: 'M-1',
          amount: '30',
          customer_email: 'moves@example.com',
          status: 'paid',
          billing_cycle: 'monthly',
          paid_at: '2026-02-20T00:00:00Z',
        })
      ).status,
    ).toBe(201);
    fixedClock('2026-03-10T00:00:00Z');
    await api.put(`/subscriptions/${sub.id}/cancel`, token, { reason: 'too expensive' });

    const r = await api.get(`/customers/${c.id}/activities`, token);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([
      {
        date: '2026-03-10T00:00:00Z',
        type: 'contraction',
        amount: '-150.00',
        mrr_before: '180.00',
        mrr_after: '30.00',
        subscription_id: sub.id,
        order_no: null,
      },
      {
        date: '2026-02-20T00:00:00Z',
        type: 'expansion',
        amount: '30.00',
        mrr_before: '150.00',
        mrr_after: '180.00',
        subscription_id: null,
        order_no: 'M-1',
      },
      {
        date: '2026-02-10T00:00:00Z',
        type: 'expansion',
        amount: '50.00',
        mrr_before: '100.00',
        mrr_after: '150.00',
        subscription_id: sub.id,
        order_no: null,
      },
      {
        date: '2026-01-10T00:00:00Z',
        type: 'new',
        amount: '100.00',
        mrr_before: '0.00',
        mrr_after: '100.00',
        subscription_id: sub.id,
        order_no: null,
      },
    ]);
    expect(r.body.meta).toMatchObject({ total: 4, current_page: 1, next_cursor: null });
    // The order's month ends on 2026-03-20: its renewal grace runs 30 days, and the churn is listed
    // (at the end of the month it paid for) once that ran out and the scheduler settled it.
    fixedClock('2026-03-20T00:00:00Z');
    expect((await api.get(`/customers/${c.id}/activities`, token)).body.data).toEqual(r.body.data);
    fixedClock('2026-04-19T00:00:01Z');
    await runRenewalChecks(merchantId, [c.id]);
    const later = (await api.get(`/customers/${c.id}/activities`, token)).body;
    expect(later.data[0]).toEqual({
      date: '2026-03-20T00:00:00Z',
      type: 'churn',
      amount: '-30.00',
      mrr_before: '30.00',
      mrr_after: '0.00',
      subscription_id: null,
      order_no: 'M-1',
    });
    expect(later.data.slice(1)).toEqual(r.body.data);
    const all = later.data;
    const first = await api.get(`/customers/${c.id}/activities?per_page=3`, token);
    expect(first.body.data).toEqual(all.slice(0, 3));
    const rest = await api.get(`/customers/${c.id}/activities?per_page=3&cursor=${first.body.meta.next_cursor}`, token);
    expect(rest.body.data).toEqual(all.slice(3));
    expect(all).toHaveLength(5);
    expect(rest.body.meta.next_cursor).toBeNull();
    expect((await api.get(`/customers/${c.id}/activities?per_page=3&page=2`, token)).body.data).toEqual(all.slice(3));

    const csv = await api.get(`/customers/${c.id}/activities`, token, { accept: 'text/csv' });
    expect(csv.headers.get('content-type')).toContain('text/csv');
    expect(String(csv.body).split('\r\n')[0]).toBe('date,type,amount,mrr_before,mrr_after,subscription_id,order_no');

    const counted = await api.counted('GET', `/customers/${c.id}/activities`, { token });
    expect(counted.requests).toBeLessThanOrEqual(4);
  });

  it('answers 404 for an unknown customer and 422 for a foreign cursor', async () => {
    const { token } = await newMerchant();
    expect((await api.get('/customers/999999/activities', token)).status).toBe(404);
    const c = await customer(token, 'none@example.com');
    const empty = await api.get(`/customers/${c.id}/activities`, token);
    expect(empty.body).toMatchObject({ data: [], meta: { total: 0, next_cursor: null } });
    const bad = await api.get(`/customers/${c.id}/activities?cursor=abc`, token);
    expect(bad.status).toBe(422);
    expect(bad.body.errors.cursor[0]).toMatch(/next_cursor/);
  });
});
