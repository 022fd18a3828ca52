import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { createOrder, expect422, orderBody, outboxEvents, storedCounts } from './helpers.ts';

const api = useApi();
afterEach(() => resetClock());

const key = (k: string) => ({ 'x-idempotency-key': k });

describe('POST /orders with X-Idempotency-Key', () => {
  it('a repeat returns the first response with Idempotent-Replayed and creates nothing', async () => {
    const clock = fixedClock('2026-04-01T09:00:00Z');
    const { merchantId, token } = await newMerchant();
    const body = orderBody({ status: 'paid', amount: '42.10', metadata: { a: 1 } });
    const first = await api.post('/orders', token, body, key('K-1'));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const stored = await storedCounts(merchantId);
    expect(stored).toEqual({ orders: 1, customers: 1, outbox: 2 });

    clock.advance(3600_000); // the replay is the first response, not a re-rendering at the new time
    const again = await api.post('/orders', token, body, key('K-1'));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await storedCounts(merchantId)).toEqual(stored);

    // The same fields in another key order are the same request.
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const third = await api.post('/orders', token, reordered, key('K-1'));
    expect(third.status).toBe(201);
    expect(third.headers.get('idempotent-replayed')).toBe('true');
    expect(third.body).toEqual(first.body);

    const c = await api.get(`/customers/${first.body.data.customer_id}`, token);
    expect(c.body.data).toMatchObject({ ltv: '42.10', order_count: 1 });
    expect((await api.get('/orders/stats', token)).body.data).toMatchObject({ today_count: 1, today_revenue: '42.10' });
    expect(await storedCounts(merchantId)).toEqual(stored);
  });

  it('the same key with a different body is a 422 on idempotency_key and creates nothing', async () => {
    const { merchantId, token } = await newMerchant();
    const body = orderBody();
    await createOrder(api, token, body, key('K-2'));
    const stored = await storedCounts(merchantId);
    for (const other of [
      { ...body, amount: '1200.01' },
      { ...body, order_no: `${body.order_no}-x` },
      { ...body, metadata: { x: 1 } },
    ]) {
      const r = await api.post('/orders', token, other, key('K-2'));
      expect422(r, 'idempotency_key');
      expect(r.headers.get('idempotent-replayed')).toBeNull();
    }
    expect(await storedCounts(merchantId)).toEqual(stored);
  });

  it('keys are scoped to the merchant', async () => {
    const a = await newMerchant();
    const b = await newMerchant();
    const body = orderBody();
    const ra = await api.post('/orders', a.token, body, key('shared-key'));
    const rb = await api.post('/orders', b.token, body, key('shared-key'));
    expect(ra.status).toBe(201);
    expect(rb.status).toBe(201);
    expect(rb.headers.get('idempotent-replayed')).toBeNull();
    expect((await storedCounts(b.merchantId)).orders).toBe(1);
    expect((await storedCounts(a.merchantId)).orders).toBe(1);
  });

  it('only successful creations are remembered: a refused request may be retried with its key', async () => {
    const { merchantId, token } = await newMerchant();
    const bad = await api.post('/orders', token, orderBody({ amount: 'abc' }), key('K-3'));
    expect422(bad, 'amount');
    const good = await api.post('/orders', token, orderBody(), key('K-3'));
    expect(good.status).toBe(201);
    expect(good.headers.get('idempotent-replayed')).toBeNull();

    // A taken order_no under a fresh key is refused, and the key stays free.
    await createOrder(api, token, { order_no: 'TAKEN' });
    expect422(await api.post('/orders', token, orderBody({ order_no: 'TAKEN' }), key('K-4')), 'order_no');
    const retry = await api.post('/orders', token, orderBody({ order_no: 'FREE' }), key('K-4'));
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect((await storedCounts(merchantId)).orders).toBe(3);
  });

  it('a key is valid for 24 hours; after that it is free again (the lagging TTL record is ignored)', async () => {
    const clock = fixedClock('2026-05-10T12:00:00Z');
    const { merchantId, token } = await newMerchant();
    const body1 = orderBody({ order_no: 'EXP-1' });
    const body2 = orderBody({ order_no: 'EXP-2', amount: '5' });
    const first = await api.post('/orders', token, body1, key('K-exp'));
    expect(first.status).toBe(201);

    clock.advance(24 * 3600_000 - 1000);
    expect422(await api.post('/orders', token, body2, key('K-exp')), 'idempotency_key');
    const replay = await api.post('/orders', token, body1, key('K-exp'));
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);

    clock.advance(2000); // 24 h + 1 s
    const fresh = await api.post('/orders', token, body2, key('K-exp'));
    expect(fresh.status).toBe(201);
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
    expect(fresh.body.data).toMatchObject({ order_no: 'EXP-2', amount: '5.00', created_at: '2026-05-11T12:00:01Z' });
    expect((await storedCounts(merchantId)).orders).toBe(2);

    // The key now belongs to the new request.
    const replay2 = await api.post('/orders', token, body2, key('K-exp'));
    expect(replay2.headers.get('idempotent-replayed')).toBe('true');
    expect(replay2.body).toEqual(fresh.body);
    expect422(await api.post('/orders', token, body1, key('K-exp')), 'idempotency_key');
  });

  for (const status of ['pending', 'paid'] as const) {
    it(`20 concurrent requests with one key and one body (${status}) make one order; all get its 201`, async () => {
      fixedClock('2026-06-15T12:00:00Z');
      const { merchantId, token } = await newMerchant();
      const body = orderBody({ status, amount: '7.25', customer_email: 'concurrent@example.com' });
      const results = await Promise.all(Array.from({ length: 20 }, () => api.post('/orders', token, body, key('K-conc'))));
      for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(201);
      const bodies = new Set(results.map((r) => JSON.stringify(r.body)));
      expect(bodies.size).toBe(1);
      expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);

      const events = await outboxEvents(merchantId);
      expect(events.map((e) => e.type).sort()).toEqual(status === 'paid' ? ['order.created', 'order.paid'] : ['order.created']);
      expect(await storedCounts(merchantId)).toMatchObject({ orders: 1, customers: 1 });
      const order = results[0].body.data;
      const c = await api.get(`/customers/${order.customer_id}`, token);
      expect(c.body.data).toMatchObject({ order_count: status === 'paid' ? 1 : 0, ltv: status === 'paid' ? '7.25' : '0.00' });
      const stats = await api.get('/orders/stats', token);
      expect(stats.body.data).toMatchObject({ today_count: 1, today_revenue: status === 'paid' ? '7.25' : '0.00' });
      expect((await api.get('/orders', token)).body.meta.total).toBe(1);
    });
  }
});

describe('POST /orders: concurrent creates of one order_no', () => {
  it('exactly one wins; the others get 422 order_no; figures count the winner only', async () => {
    fixedClock('2026-06-15T12:00:00Z');
    const { merchantId, token } = await newMerchant();
    const bodies = Array.from({ length: 20 }, (_, i) => ({
      order_no: 'RACE-1',
      amount: `${i + 1}.00`,
      status: 'paid',
      customer_email: i % 2 ? 'odd@example.com' : 'even@example.com',
    }));
    const results = await Promise.all(bodies.map((b) => api.post('/orders', token, b)));
    const winners = results.filter((r) => r.status === 201);
    expect(winners).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 201)) expect422(r, 'order_no');
    const won = winners[0].body.data;

    expect((await api.get('/orders/RACE-1', token)).body.data).toEqual(won);
    const counts = await storedCounts(merchantId);
    expect(counts).toEqual({ orders: 1, customers: 1, outbox: 2 });
    const customers = (await api.get('/customers', token)).body;
    expect(customers.data.map((c: { email: string }) => c.email)).toEqual([won.customer_email]);
    expect(customers.data[0]).toMatchObject({
      ltv: won.amount,
      order_count: 1,
      first_payment_at: won.paid_at,
      last_payment_at: won.paid_at,
    });
    expect((await api.get('/orders/stats', token)).body.data).toEqual({
      today_revenue: won.amount,
      monthly_revenue: won.amount,
      today_count: 1,
      today_success_rate: 100,
    });
  });
});

describe('idempotency compares the validated request', () => {
  it('an ignored unknown field, however deep, neither changes the request nor breaks the hash', async () => {
    const { token } = await newMerchant();
    const body = { order_no: 'IDK-1', amount: '7', customer_email: 'k@example.com' };
    const first = await api.post('/orders', token, body, { 'x-idempotency-key': 'deep' });
    expect(first.status).toBe(201);
    const n = 100_000;
    const rawBody = `{"order_no":"IDK-1","amount":"7","customer_email":"k@example.com","junk":${'['.repeat(n)}${']'.repeat(n)}}`;
    const again = await api.request('POST', '/orders', {
      token,
      rawBody,
      headers: { 'content-type': 'application/json', 'x-idempotency-key': 'deep' },
    });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('replays when nested metadata keys come in another order (canonical JSON of the validated request)', async () => {
    const { token } = await newMerchant();
    const body = orderBody({ metadata: { b: 1, a: { y: 2, x: [{ q: 1, p: 2 }] } } });
    const first = await api.post('/orders', token, body, key('K-nested'));
    expect(first.status).toBe(201);
    const again = await api.post('/orders', token, { ...body, metadata: { a: { x: [{ p: 2, q: 1 }], y: 2 }, b: 1 } }, key('K-nested'));
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    // Array order is data: a different order is a different request.
    const other = await api.post('/orders', token, { ...body, metadata: { b: 1, a: { y: 2, x: [{ q: 1, p: 2 }, 3] } } }, key('K-nested'));
    expect(other.status).toBe(422);
    expect(Object.keys(other.body.errors)).toEqual(['idempotency_key']);
  });

  it('values equal to the defaults (null, TWD, one-time, pending) are the same request', async () => {
    const { token } = await newMerchant();
    const body = orderBody();
    const first = await api.post('/orders', token, body, key('K-defaults'));
    expect(first.status).toBe(201);
    for (const extra of [
      { currency: null },
      { currency: 'TWD' },
      { currency: 'twd' },
      { metadata: null },
      { billing_cycle: 'one-time' },
      { status: 'pending' },
      { payment_method: null, customer_name: null, paid_at: null },
      { amount: 1200 },
    ]) {
      const again = await api.post('/orders', token, { ...body, ...extra }, key('K-defaults'));
      expect(again.status, `${JSON.stringify(extra)} → ${JSON.stringify(again.body)}`).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    }
    const changed = await api.post('/orders', token, { ...body, currency: 'USD' }, key('K-defaults'));
    expect(changed.status).toBe(422);
  });
});
