import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { createOrder } from '../orders/helpers.ts';
import { eventually, registerEndpoint, useDeliveryPipeline } from './support/pipeline.ts';

/**
 * Webhooks end to end on the local stack: a committed change reaches a real receiver, signed so
 * that `standardwebhooks` verifies it, through the same consumers the deployed stack runs.
 */
const pipe = useDeliveryPipeline('wh-local');
const api = useApi();

describe('local delivery end to end', () => {
  it('order pending then paid: the receiver gets order.created then order.paid, verified, with the order as the API returns it', async () => {
    const { token } = await newMerchant();
    const receiver = await pipe.receiver();
    const endpoint = await registerEndpoint(api, token, receiver.url);
    receiver.secrets.push(endpoint.secret);

    const order = await createOrder(api, token, { status: 'pending' });
    const paid = await api.patch(`/orders/${order.order_no}`, token, { status: 'paid' });
    expect(paid.status).toBe(200);

    await eventually(() => receiver.received.length >= 2, 15_000, 'two deliveries');
    const [created, paidEvt] = receiver.received;
    expect(created.event?.type).toBe('order.created');
    expect(paidEvt.event?.type).toBe('order.paid');
    expect(created.event?.data.object).toEqual(order);
    expect(paidEvt.event?.data.object).toEqual(paid.body.data);
    expect(created.id).toBe(created.event?.id);
    expect(created.id).toMatch(/^evt_/);

    const log = await eventually(async () => {
      const r = await api.get(`/webhook-endpoints/${endpoint.id}/deliveries`, token);
      return r.body.data?.length === 2 ? r.body : undefined;
    });
    expect(log.data.map((d: any) => [d.event_type, d.attempt, d.status])).toEqual(
      expect.arrayContaining([
        ['order.created', 1, 204],
        ['order.paid', 1, 204],
      ]),
    );
  });
});
