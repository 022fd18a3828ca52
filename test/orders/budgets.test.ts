import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';

/**
 * Request budgets of the order writes, counted with the shared DynamoDB request counter. The reads,
 * measured flat on a merchant with 100 orders and on one with 20,000, are in
 * read-budgets.scale.test.ts (the scale suite: seeding 20,000 orders takes a minute).
 */
const api = useApi();

describe('request budgets (DynamoDB requests per API call)', () => {
  it('POST /orders ≤ 6 (new and existing customer, with an idempotency key)', async () => {
    const { token } = await newMerchant();
    const fresh = await api.counted('POST', '/orders', {
      token,
      body: { order_no: 'P-1', amount: '5', customer_email: 'new@example.com', status: 'paid' },
      headers: { 'x-idempotency-key': 'budget-1' },
    });
    expect(fresh.res.status).toBe(201);
    expect(fresh.requests).toBeLessThanOrEqual(6);
    const existing = await api.counted('POST', '/orders', {
      token,
      body: { order_no: 'P-2', amount: '5', customer_email: 'new@example.com', status: 'paid' },
      headers: { 'x-idempotency-key': 'budget-2' },
    });
    expect(existing.res.status).toBe(201);
    expect(existing.requests).toBeLessThanOrEqual(6);
    const replay = await api.counted('POST', '/orders', {
      token,
      body: { order_no: 'P-2', amount: '5', customer_email: 'new@example.com', status: 'paid' },
      headers: { 'x-idempotency-key': 'budget-2' },
    });
    expect(replay.res.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.requests).toBeLessThanOrEqual(3);
    // An order in another currency is converted when written (its sales figures): its rates come with the first read.
    const foreign = await api.counted('POST', '/orders', {
      token,
      body: { order_no: 'P-3', amount: '5', currency: 'USD', customer_email: 'new@example.com', status: 'paid' },
    });
    expect(foreign.res.status).toBe(201);
    expect(foreign.requests).toBeLessThanOrEqual(6);
    const refund = await api.counted('PATCH', '/orders/P-3', { token, body: { status: 'refunded' } });
    expect(refund.res.status).toBe(200);
    expect(refund.requests).toBeLessThanOrEqual(5);
  });

  it('POST /orders/batch of 100 new orders for 100 new customers ≤ 25', async () => {
    const { token } = await newMerchant();
    const orders = Array.from({ length: 100 }, (_, i) => ({
      order_no: `N-${i}`,
      amount: '19.99',
      customer_email: `n${i}@example.com`,
      status: i % 3 === 0 ? 'paid' : 'pending',
    }));
    const batch = await api.counted('POST', '/orders/batch', { token, body: { orders } });
    expect(batch.res.status).toBe(200);
    expect(batch.res.body.data.created).toBe(100);
    expect(batch.requests).toBeLessThanOrEqual(25);
  });
});
