import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';

const api = useApi();

describe('POST /orders/batch', () => {
  it('creates, accumulates, reports failures and stays within budget', async () => {
    const { token } = await newMerchant();
    const orders = Array.from({ length: 100 }, (_, i) => ({ order_no: `B-${i}`, amount: `${i}.50`, customer_email: `c${i}@example.com`, status: i % 2 ? 'paid' : 'pending' }));
    const r = await api.counted('POST', '/orders/batch', { token, body: { orders } });
    console.log(r.requests, r.byCommand);
    expect(r.res.status).toBe(200);
    expect(r.res.body.data.created).toBe(100);
    const second = await api.post('/orders/batch', token, {
      orders: [
        { order_no: 'B-0', status: 'paid', amount: '' },
        { order_no: 'B-0', status: 'refunded' },
        { order_no: 'NEW', amount: '5', customer_email: 'c1@example.com' },
        { order_no: 'NEW2' },
        { order_no: 'bad no', amount: '1', customer_email: 'x@example.com' },
      ],
    });
    expect(second.body.data).toMatchObject({ total: 5, created: 1, updated: 2, failed: 2 });
    const b0 = await api.get('/orders/B-0', token);
    expect(b0.body.data).toMatchObject({ status: 'refunded', amount: '0.50', source: 'import' });
    expect(b0.body.data.paid_at).toBeTruthy();
    const c1 = await api.get('/customers/2', token);
    console.log(c1.body.data);
  });
});
