import { CUSTOMER_INVALID } from '#lib/subscriptions/events';
import { LIVE_TAKEN } from '#lib/subscriptions/service';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { useApi } from '../support/api.ts';
import { factoriesFor } from '../support/factories.ts';
import { activityRecords, outboxEvents } from '../orders/helpers.ts';

const api = useApi();
const { merchantWithCustomer } = factoriesFor(api);
afterEach(() => resetClock());

const sub = (over: Record<string, unknown> = {}) => ({ plan_name: 'Basic', mrr: '100', billing_cycle: 'monthly', ...over });
const summary = async (token: string) => (await api.get('/metrics/summary', token)).body.data;
const series = async (token: string) => (await api.get('/metrics/mrr?start_date=2025-01-01&end_date=2026-03-15', token)).body.data;

describe('POST /subscriptions/batch', () => {
  it('creates subscriptions by customer id or email (creating the customer), cancelled ones with both events; no webhook; figures as if made through the API', async () => {
    fixedClock('2026-03-15T00:00:00Z');
    const { token, merchantId, customer } = await merchantWithCustomer();
    const res = await api.post('/subscriptions/batch', token, {
      subscriptions: [
        sub({ external_id: 'sub_a', customer_id: customer.id, started_at: '2025-06-01T00:00:00Z' }),
        sub({
          external_id: 'sub_b',
          customer_email: 'New@Example.com',
          customer_name: 'New',
          mrr: '50.5',
          started_at: '2025-07-10T00:00:00Z',
          cancelled_at: '2025-12-10T00:00:00Z',
          cancel_reason: 'too expensive',
        }),
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ total: 2, created: 2, updated: 0, skipped: 0, failed: 0 });
    expect(res.body.data.results.created.map((c: { identifier: string }) => c.identifier)).toEqual(['sub_a', 'sub_b']);

    const [a, b] = res.body.data.results.created.map((c: { id: number }) => c.id);
    const got = (await api.get(`/subscriptions/${a}`, token)).body.data;
    expect(got).toMatchObject({
      external_id: 'sub_a',
      currency: 'TWD',
      source: 'import',
      status: 'active',
      started_at: '2025-06-01T00:00:00Z',
      cancel_at: null,
    });
    const cancelled = (await api.get(`/subscriptions/${b}`, token)).body.data;
    expect(cancelled).toMatchObject({
      status: 'cancelled',
      cancelled_at: '2025-12-10T00:00:00Z',
      cancel_reason: 'too expensive',
      mrr: '50.50',
    });
    const newCustomer = (await api.get(`/customers/${cancelled.customer_id}`, token)).body.data;
    expect(newCustomer).toMatchObject({ email: 'new@example.com', name: 'New' });

    const events = (await api.get(`/subscriptions/events?subscription_id=${b}`, token)).body.data;
    expect(events.map((e: { event_type: string; occurred_at: string; source: string }) => [e.event_type, e.occurred_at, e.source])).toEqual(
      [
        ['cancel', '2025-12-10T00:00:00Z', 'import'],
        ['created', '2025-07-10T00:00:00Z', 'import'],
      ],
    );

    const points = await series(token);
    const at = (m: string) => points.find((p: { date: string }) => p.date.startsWith(m));
    expect(at('2025-06')).toMatchObject({ mrr: '100.00', new: '100.00' });
    expect(at('2025-07')).toMatchObject({ mrr: '150.50', new: '50.50' });
    expect(at('2025-12')).toMatchObject({ mrr: '100.00', churn: '-50.50' });
    expect(await summary(token)).toMatchObject({ current_mrr: '100.00', active_subscriptions: 1 });
    expect((await api.get('/subscriptions?status=active', token)).body.meta.total).toBe(1);
    expect(await outboxEvents(merchantId)).toEqual([]);
    expect(await activityRecords(merchantId)).toEqual([
      expect.objectContaining({ type: 'subscriptions.batch', total: 2, created: 2, updated: 0, skipped: 0, failed: 0 }),
    ]);
  });

  it('an external id already taken (stored or earlier in the batch) is skipped; a second live subscription fails on customer_id; deleting frees the external id', async () => {
    const { token, customer } = await merchantWithCustomer();
    const first = await api.post('/subscriptions/batch', token, { subscriptions: [sub({ external_id: 'x1', customer_id: customer.id })] });
    expect(first.body.data.created).toBe(1);
    const res = await api.post('/subscriptions/batch', token, {
      subscriptions: [
        sub({ external_id: 'x1', customer_id: customer.id }),
        sub({ external_id: 'x2', customer_email: 'two@example.com' }),
        sub({ external_id: 'x2', customer_email: 'three@example.com' }),
        sub({ external_id: 'x3', customer_id: customer.id }),
      ],
    });
    expect(res.body.data).toMatchObject({ total: 4, created: 1, skipped: 2, failed: 1 });
    expect(res.body.data.results.skipped).toEqual([
      { index: 0, reason: 'duplicate_external_id', identifier: 'x1' },
      { index: 2, reason: 'duplicate_external_id', identifier: 'x2' },
    ]);
    expect(res.body.data.results.failed).toEqual([{ index: 3, reason: 'validation_error', message: LIVE_TAKEN, identifier: 'x3' }]);
    // Nothing was stored for the refused ones.
    expect((await api.get('/customers?search=three@example.com', token)).body.meta.total).toBe(0);
    expect((await api.get('/subscriptions', token)).body.meta.total).toBe(2);

    const id = first.body.data.results.created[0].id;
    expect((await api.del(`/subscriptions/${id}`, token)).status).toBe(204);
    const again = await api.post('/subscriptions/batch', token, { subscriptions: [sub({ external_id: 'x1', customer_id: customer.id })] });
    expect(again.body.data).toMatchObject({ created: 1, skipped: 0 });
  });

  it('refuses bad items with messages that help, and stores nothing for them', async () => {
    fixedClock('2026-03-15T00:00:00Z');
    const { token, customer } = await merchantWithCustomer();
    const res = await api.post('/subscriptions/batch', token, {
      subscriptions: [
        sub({ external_id: 'v0', customer_id: customer.id, mrr: '0' }),
        sub({ external_id: 'v1' }),
        sub({ external_id: 'v2', customer_id: customer.id, started_at: '2026-01-01T00:00:00Z', cancelled_at: '2025-12-01T00:00:00Z' }),
        sub({ external_id: 'v3', customer_id: customer.id, currency: 'JPY', mrr: '3561.50' }),
        sub({ external_id: 'v4', customer_id: customer.id, cancelled_at: '2026-04-01T00:00:00Z' }),
        sub({ external_id: 'v5', customer_id: 999999 }),
        sub({ external_id: 'v6', customer_id: customer.id, billing_cycle: 'weekly' }),
        'nope',
        sub({ external_id: 'v8\ud800', customer_id: customer.id }),
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ total: 9, created: 0, failed: 9 });
    expect(res.body.data.results.failed.map((f: { message: string }) => f.message)).toEqual([
      'The mrr field must be greater than 0.',
      'The customer id field is required when customer email is not present.',
      'The cancelled at field must be a date after or equal to started at.',
      'The mrr field must be a whole number in JPY, which has no minor unit.',
      'The cancelled at field must be a date before or equal to now.',
      CUSTOMER_INVALID,
      'The selected billing cycle is invalid. Allowed: monthly, quarterly, semi-annual, yearly.',
      'The subscriptions.7 field must be an object.',
      'The external id field must be valid Unicode text.',
    ]);
    expect((await api.get('/subscriptions', token)).body.meta.total).toBe(0);
    expect((await api.post('/subscriptions/batch', token, { subscriptions: [] })).body).toMatchObject({
      errors: { subscriptions: ['The subscriptions field must contain at least 1 item.'] },
    });
  });

  it('a subscription in another currency is listed with it and left out of the figures', async () => {
    const { token, customer } = await merchantWithCustomer();
    const res = await api.post('/subscriptions/batch', token, {
      subscriptions: [sub({ external_id: 'usd', customer_id: customer.id, currency: 'usd', started_at: '2026-01-01T00:00:00Z' })],
    });
    expect(res.body.data.created).toBe(1);
    expect((await api.get(`/subscriptions/${res.body.data.results.created[0].id}`, token)).body.data).toMatchObject({
      currency: 'USD',
      status: 'active',
    });
    expect(await summary(token)).toMatchObject({ current_mrr: '0.00', active_customers: 0 });
  });
});

describe('POST /subscriptions/events/batch', () => {
  it('records events in array order, naming subscriptions by id or external id; identifier is the external id, else the customer id', async () => {
    fixedClock('2026-03-15T00:00:00Z');
    const { token, customer } = await merchantWithCustomer();
    const imported = await api.post('/subscriptions/batch', token, {
      subscriptions: [sub({ external_id: 'ext', customer_id: customer.id, started_at: '2025-03-01T00:00:00Z' })],
    });
    const subId = imported.body.data.results.created[0].id;
    const res = await api.post('/subscriptions/events/batch', token, {
      events: [
        { customer_id: customer.id, event_type: 'created', old_amount: '0', new_amount: '40', occurred_at: '2024-01-01T00:00:00Z' },
        { customer_id: customer.id, event_type: 'upgrade', old_amount: '40', new_amount: '60', occurred_at: '2024-06-01T00:00:00Z' },
        {
          customer_id: customer.id,
          subscription_external_id: 'ext',
          event_type: 'upgrade',
          old_amount: '100',
          new_amount: '200',
          occurred_at: '2025-05-01T00:00:00Z',
        },
        {
          customer_id: customer.id,
          subscription_id: subId,
          event_type: 'downgrade',
          old_amount: '200',
          new_amount: '150',
          occurred_at: '2025-09-01T00:00:00Z',
        },
        { customer_id: customer.id, event_type: 'upgrade', old_amount: '60', new_amount: '70', occurred_at: '2025-04-01T00:00:00Z' },
        { customer_id: customer.id, subscription_external_id: 'nope', event_type: 'cancel', old_amount: '10', new_amount: '0' },
        { customer_id: customer.id, event_type: 'upgrade', old_amount: '900', new_amount: '100' },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ total: 7, created: 4, failed: 3 });
    expect(res.body.data.results.created.map((c: { identifier: string }) => c.identifier)).toEqual([
      String(customer.id),
      String(customer.id),
      'ext',
      'ext',
    ]);
    expect(res.body.data.results.failed).toEqual([
      {
        index: 4,
        reason: 'validation_error',
        message:
          "The subscription id field is required for an event at or after 2025-03-01T00:00:00Z, when the customer's first subscription started: name the subscription this event belongs to.",
        identifier: String(customer.id),
      },
      { index: 5, reason: 'validation_error', message: 'The selected subscription external id is invalid.', identifier: 'nope' },
      {
        index: 6,
        reason: 'validation_error',
        message: 'The upgrade event type needs new amount greater than old amount.',
        identifier: String(customer.id),
      },
    ]);
    const points = await series(token);
    const at = (m: string) => points.find((p: { date: string }) => p.date.startsWith(m));
    expect(at('2025-02')).toMatchObject({ mrr: '60.00' });
    // The imported line ends where the subscription starts: one instant, one movement (60 → 100).
    expect(at('2025-03')).toMatchObject({ mrr: '100.00', expansion: '40.00', new: '0.00' });
    expect(at('2025-05')).toMatchObject({ mrr: '200.00', expansion: '100.00' });
    expect(at('2025-09')).toMatchObject({ mrr: '150.00', contraction: '-50.00' });
    const listed = (await api.get(`/subscriptions/events?customer_id=${customer.id}&per_page=20`, token)).body;
    expect(listed.meta.total).toBe(5);
  });

  it('POST /subscriptions/events also takes subscription_external_id; an unknown one is a 422 on it', async () => {
    const { token, customer } = await merchantWithCustomer();
    await api.post('/subscriptions/batch', token, {
      subscriptions: [sub({ external_id: 'one', customer_id: customer.id, started_at: '2025-03-01T00:00:00Z' })],
    });
    const ok = await api.post('/subscriptions/events', token, {
      customer_id: customer.id,
      subscription_external_id: 'one',
      event_type: 'upgrade',
      old_amount: '100',
      new_amount: '120',
      occurred_at: '2025-04-01T00:00:00Z',
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(ok.body.data).toMatchObject({ subscription_id: expect.any(Number), amount_change: '20.00', source: 'import' });
    const bad = await api.post('/subscriptions/events', token, {
      customer_id: customer.id,
      subscription_external_id: 'two',
      event_type: 'upgrade',
      old_amount: '1',
      new_amount: '2',
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual({ subscription_external_id: ['The selected subscription external id is invalid.'] });
    // Without customer_id the subscription's external id names the customer too.
    const byExternal = await api.post('/subscriptions/events/batch', token, {
      events: [
        {
          subscription_external_id: 'one',
          event_type: 'downgrade',
          old_amount: '120',
          new_amount: '90',
          occurred_at: '2025-05-01T00:00:00Z',
        },
        { subscription_external_id: 'nope', event_type: 'downgrade', old_amount: '120', new_amount: '90' },
        { event_type: 'downgrade', old_amount: '120', new_amount: '90' },
      ],
    });
    expect(byExternal.body.data.results.created).toEqual([{ index: 0, id: expect.any(Number), identifier: 'one' }]);
    expect(byExternal.body.data.results.failed.map((f: { message: string }) => f.message)).toEqual([
      'The selected subscription external id is invalid.',
      'The customer id field is required when subscription external id is not present.',
    ]);
    expect((await api.get(`/subscriptions/events?customer_id=${customer.id}&event_type=downgrade`, token)).body.data[0]).toMatchObject({
      customer_id: customer.id,
      new_amount: '90.00',
    });
  });
});

describe('X-Idempotency-Key on the batch endpoints', () => {
  it('a repeat with the same key and body replays the first answer and applies nothing; another body under the key is a 422', async () => {
    const { token, customer } = await merchantWithCustomer();
    const body = { subscriptions: [sub({ external_id: 'idem_1', customer_id: customer.id, started_at: '2025-01-01T00:00:00Z' })] };
    const first = await api.request('POST', '/subscriptions/batch', {
      token,
      body,
      headers: { 'x-idempotency-key': 'run-1:subscriptions:1' },
    });
    expect(first.body.data.created).toBe(1);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await api.request('POST', '/subscriptions/batch', {
      token,
      body,
      headers: { 'x-idempotency-key': 'run-1:subscriptions:1' },
    });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const other = await api.request('POST', '/subscriptions/batch', {
      token,
      body: { subscriptions: [sub({ external_id: 'idem_2', customer_id: customer.id })] },
      headers: { 'x-idempotency-key': 'run-1:subscriptions:1' },
    });
    expect(other.status).toBe(422);
    expect(other.body.errors).toEqual({ idempotency_key: ['The idempotency key has already been used with a different request.'] });
    expect((await api.get('/subscriptions', token)).body.meta.total).toBe(1);

    const orders = { orders: [{ order_no: `IDEM-${Math.random()}`, amount: '10', customer_email: 'idem@example.com' }] };
    const o1 = await api.request('POST', '/orders/batch', { token, body: orders, headers: { 'x-idempotency-key': 'run-1:orders:1' } });
    const o2 = await api.request('POST', '/orders/batch', { token, body: orders, headers: { 'x-idempotency-key': 'run-1:orders:1' } });
    expect(o1.body.data.created).toBe(1);
    expect(o2.headers.get('idempotent-replayed')).toBe('true');
    expect(o2.body).toEqual(o1.body);
  });

  it('recorded events applied by an attempt that never answered are skipped when the batch is sent again under its key', async () => {
    const { token, merchantId, customer } = await merchantWithCustomer();
    const events = [1, 2, 3].map((n) => ({
      customer_id: customer.id,
      event_type: n === 1 ? 'created' : 'upgrade',
      old_amount: String(n === 1 ? 0 : n * 10 - 10),
      new_amount: String(n * 10),
      occurred_at: `2024-0${n}-01T00:00:00Z`,
    }));
    // The first attempt applied its items but stopped before its answer was recorded.
    const { importSubscriptionEvents } = await import('#lib/subscriptions/recorded');
    const partial = await importSubscriptionEvents(
      { merchantId, reportingCurrency: 'TWD', timezone: 'UTC', generation: 0 },
      events.slice(0, 2),
      'run-2:events:1',
    );
    expect(partial.created).toBe(2);
    const retry = await api.request('POST', '/subscriptions/events/batch', {
      token,
      body: { events },
      headers: { 'x-idempotency-key': 'run-2:events:1' },
    });
    expect(retry.status).toBe(200);
    expect(retry.body.data).toMatchObject({ created: 1, skipped: 2 });
    expect(retry.body.data.results.skipped.map((s: { reason: string }) => s.reason)).toEqual(['already_recorded', 'already_recorded']);
    expect((await api.get(`/subscriptions/events?customer_id=${customer.id}`, token)).body.meta.total).toBe(3);
    expect((await summary(token)).current_mrr).toBe('30.00');
  });

  it('a body nested past the call stack is still hashed: 200 with failed items, and the repeat replays', async () => {
    const { token } = await merchantWithCustomer();
    const rawBody = `{"subscriptions":[${'['.repeat(5_000)}${']'.repeat(5_000)}]}`;
    const headers = { 'x-idempotency-key': 'deep-1', 'content-type': 'application/json' };
    const first = await api.request('POST', '/subscriptions/batch', { token, rawBody, headers });
    expect(first.status, JSON.stringify(first.body).slice(0, 200)).toBe(200);
    expect(first.body.data).toMatchObject({ total: 1, failed: 1 });
    const again = await api.request('POST', '/subscriptions/batch', { token, rawBody, headers });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });
});
