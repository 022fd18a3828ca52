import { NOT_FOUND } from '#lib/errors';
import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { factoriesFor } from '../support/factories.ts';
import { createOrder, orderBody, uniqueNo } from '../orders/helpers.ts';
import {
  deliveryLog,
  eventually,
  receiverWithEndpoint,
  registerEndpoint,
  useDeliveryPipeline,
  verifiedEvents,
} from './support/pipeline.ts';

/**
 * Webhooks end to end on the local stack: a committed change reaches a real receiver, signed so
 * that `standardwebhooks` verifies it, through the same consumers the deployed stack runs. What
 * must NOT be delivered is proven with a marker: a later change whose delivery arrives, then the
 * queues drained, then nothing else arrived.
 */
const pipe = useDeliveryPipeline('wh-local');
const api = useApi();
const { newCustomer } = factoriesFor(api);

/** A pending order whose order.created marks "everything committed before it has been published and fanned out". */
const marker = async (token: string, receiver: { received: { event: { data: { object: any } } | null }[] }) => {
  const order = await createOrder(api, token, { status: 'pending', order_no: uniqueNo('MARK') });
  await eventually(
    () => receiver.received.some((d) => d.event?.data.object.order_no === order.order_no),
    15_000,
    'the marker order.created',
  );
  await pipe.settled();
  return order;
};

describe('local delivery end to end', () => {
  it('order pending then paid: the receiver gets order.created then order.paid, verified, with the order as the API returns it', async () => {
    const { token } = await newMerchant();
    const { receiver, endpoint } = await receiverWithEndpoint(pipe, api, token);

    const order = await createOrder(api, token, { status: 'pending' });
    const paid = await api.patch(`/orders/${order.order_no}`, token, { status: 'paid' });
    expect(paid.status).toBe(200);

    await eventually(() => receiver.received.length >= 2, 15_000, 'two deliveries');
    // Events relayed in one batch are delivered by concurrent tasks: arrival order is not promised
    // (docs/webhooks.md does not), `created_at` orders them.
    const events = verifiedEvents(receiver.received);
    const created = events.find((e) => e.type === 'order.created')!;
    const paidEvt = events.find((e) => e.type === 'order.paid')!;
    expect(events.map((e) => e.type).sort()).toEqual(['order.created', 'order.paid']);
    expect(created.created_at <= paidEvt.created_at).toBe(true);
    expect(created.data.object).toEqual(order);
    expect(paidEvt.data.object).toEqual(paid.body.data);
    expect(created.id).toMatch(/^evt_/);

    const log = await eventually(async () => {
      const rows = await deliveryLog(api, token, endpoint.id);
      return rows.length === 2 ? rows : undefined;
    });
    expect(log.map((d) => [d.event_type, d.attempt, d.status, d.error])).toEqual(
      expect.arrayContaining([
        ['order.created', 1, 204, null],
        ['order.paid', 1, 204, null],
      ]),
    );
  });

  it('subscription create / update (mrr) / pause / reactivate / cancel: one verified event each, carrying the subscription as the API answered it', async () => {
    const { token } = await newMerchant();
    const { receiver } = await receiverWithEndpoint(pipe, api, token);
    const customer = await newCustomer(token);

    const created = await api.post('/subscriptions', token, {
      customer_id: customer.id,
      plan_name: 'Basic',
      mrr: '100.00',
      billing_cycle: 'monthly',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.id;
    const steps: [string, { status: number; body: any }][] = [['subscription.created', created]];
    steps.push(['subscription.updated', await api.put(`/subscriptions/${id}`, token, { mrr: '150.00', plan_name: 'Pro' })]);
    steps.push(['subscription.paused', await api.put(`/subscriptions/${id}/pause`, token, {})]);
    steps.push(['subscription.reactivated', await api.put(`/subscriptions/${id}/reactivate`, token)]);
    steps.push(['subscription.cancelled', await api.put(`/subscriptions/${id}/cancel`, token, { reason: 'too expensive' })]);
    for (const [type, r] of steps) expect(r.status, `${type}: ${JSON.stringify(r.body)}`).toBeLessThan(300);

    await eventually(() => receiver.received.length >= steps.length, 15_000, 'five subscription events');
    await pipe.settled();
    const events = verifiedEvents(receiver.received);
    // Delivery tasks run concurrently: arrival order is not commit order.
    expect(events.map((e) => e.type).sort()).toEqual(steps.map(([t]) => t).sort());
    for (const [type, r] of steps) {
      const event = events.find((e) => e.type === type)!;
      expect(event.data.object, type).toEqual(r.body.data);
    }
    expect(events.find((e) => e.type === 'subscription.updated')!.data.object).toMatchObject({ mrr: '150.00', plan_name: 'Pro' });
    expect(new Set(events.map((e) => e.id)).size).toBe(steps.length);
  });

  it('batch import, recorded subscription events and idempotent replays of POST /orders deliver nothing', async () => {
    const { token } = await newMerchant();
    const { receiver } = await receiverWithEndpoint(pipe, api, token);
    const customer = await newCustomer(token);

    const imported = await api.post('/orders/batch', token, {
      orders: [orderBody({ status: 'paid' }), orderBody({ status: 'pending' }), orderBody()],
    });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    expect(imported.body.data.created).toBe(3);

    const recorded = await api.post('/subscriptions/events', token, {
      customer_id: customer.id,
      event_type: 'upgrade',
      old_amount: '10',
      new_amount: '20',
    });
    expect(recorded.status, JSON.stringify(recorded.body)).toBe(201);

    // One POST /orders, replayed twice with the same key: one order.created.
    const body = orderBody({ status: 'pending' });
    const key = { 'x-idempotency-key': uniqueNo('IDEM') };
    const first = await api.post('/orders', token, body, key);
    expect(first.status).toBe(201);
    for (let i = 0; i < 2; i++) {
      const replay = await api.post('/orders', token, body, key);
      expect(replay.status).toBe(201);
      expect(replay.body).toEqual(first.body);
    }

    const mark = await marker(token, receiver);
    const events = verifiedEvents(receiver.received);
    expect(events.map((e) => [e.type, e.data.object.order_no])).toEqual(
      expect.arrayContaining([
        ['order.created', body.order_no],
        ['order.created', mark.order_no],
      ]),
    );
    expect(events).toHaveLength(2);
  });

  it('endpoint filters and disabled endpoints: ["order.paid"] gets order.paid only, ["*"] everything, a disabled endpoint nothing', async () => {
    const { token } = await newMerchant();
    const a = await receiverWithEndpoint(pipe, api, token, { events: ['order.paid'] });
    const b = await receiverWithEndpoint(pipe, api, token, { events: ['*'] });
    const c = await receiverWithEndpoint(pipe, api, token, { events: ['*'] });
    const disabled = await api.patch(`/webhook-endpoints/${c.endpoint.id}`, token, { status: 'disabled' });
    expect(disabled.status).toBe(200);
    expect(disabled.body.data.status).toBe('disabled');

    const order = await createOrder(api, token, { status: 'pending' });
    expect((await api.patch(`/orders/${order.order_no}`, token, { status: 'paid' })).status).toBe(200);
    const customer = await newCustomer(token);
    expect(
      (await api.post('/subscriptions', token, { customer_id: customer.id, plan_name: 'Basic', mrr: '10', billing_cycle: 'monthly' }))
        .status,
    ).toBe(201);
    const mark = await marker(token, b.receiver);

    expect(verifiedEvents(a.receiver.received).map((e) => [e.type, e.data.object.order_no])).toEqual([['order.paid', order.order_no]]);
    expect(
      verifiedEvents(b.receiver.received)
        .map((e) => e.type)
        .sort(),
    ).toEqual(['order.created', 'order.created', 'order.paid', 'subscription.created']);
    expect(
      verifiedEvents(b.receiver.received)
        .filter((e) => e.type === 'order.created')
        .map((e) => e.data.object.order_no)
        .sort(),
    ).toEqual([order.order_no, mark.order_no].sort());
    expect(c.receiver.received).toEqual([]);
    expect(await deliveryLog(api, token, c.endpoint.id)).toEqual([]);

    // Enabled again: it receives what is committed from then on.
    expect((await api.patch(`/webhook-endpoints/${c.endpoint.id}`, token, { status: 'enabled' })).status).toBe(200);
    const later = await createOrder(api, token, { status: 'pending' });
    await eventually(() => c.receiver.received.length >= 1, 15_000, 'the re-enabled endpoint');
    expect(verifiedEvents(c.receiver.received).map((e) => [e.type, e.data.object.order_no])).toEqual([['order.created', later.order_no]]);
    // b gets it too. Waited for, so no delivery is left to fail on b's receiver once it closes: a
    // task left behind would wait for its retry and keep the next test's settle from draining.
    await eventually(() => verifiedEvents(b.receiver.received).some((e) => e.data.object.order_no === later.order_no), 15_000, 'b’s copy');
    await pipe.settled();
  });

  it('POST /webhook-endpoints/{id}/test: a verified webhook.test to that endpoint only, the answer is the attempt (also in the log)', async () => {
    const { token } = await newMerchant();
    const { receiver, endpoint } = await receiverWithEndpoint(pipe, api, token);
    const other = await receiverWithEndpoint(pipe, api, token);

    const r = await api.post(`/webhook-endpoints/${endpoint.id}/test`, token);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toEqual({
      event_id: expect.stringMatching(/^evt_/),
      event_type: 'webhook.test',
      attempt: 1,
      status: 204,
      error: null,
      duration_ms: expect.any(Number),
      at: expect.any(String),
      next_attempt_at: null,
      payload: expect.any(String),
      payload_truncated: false,
      resource_id: null,
      payload_withheld: false,
    });
    // The attempt answered synchronously: the receiver already has it, the body the log keeps.
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0].body).toBe(r.body.data.payload);
    const [event] = verifiedEvents(receiver.received);
    expect(event).toMatchObject({ id: r.body.data.event_id, type: 'webhook.test', data: { object: { webhook_endpoint_id: endpoint.id } } });
    expect(await deliveryLog(api, token, endpoint.id)).toEqual([r.body.data]);
    expect(other.receiver.received).toEqual([]);

    // Sent to a disabled endpoint too (the route says so), and an unknown or foreign endpoint is a 404.
    await api.patch(`/webhook-endpoints/${endpoint.id}`, token, { status: 'disabled' });
    expect((await api.post(`/webhook-endpoints/${endpoint.id}/test`, token)).body.data).toMatchObject({ attempt: 1, status: 204 });
    expect(receiver.received).toHaveLength(2);
    expect((await api.post('/webhook-endpoints/999999/test', token)).status).toBe(404);
    const stranger = await newMerchant();
    expect((await api.post(`/webhook-endpoints/${endpoint.id}/test`, stranger.token)).status).toBe(404);
    expect(receiver.received).toHaveLength(2);
  });

  it('manual retry: the same webhook-id and body again, the next attempt number; 404 for an unknown event or another merchant’s endpoint', async () => {
    const { token } = await newMerchant();
    const { receiver, endpoint } = await receiverWithEndpoint(pipe, api, token);
    const order = await createOrder(api, token, { status: 'pending' });
    await eventually(() => receiver.received.length >= 1, 15_000, 'the order.created');
    await pipe.settled();
    const [first] = receiver.received;

    for (const attempt of [2, 3]) {
      const r = await api.post(`/webhook-endpoints/${endpoint.id}/deliveries/${first.id}/retry`, token);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.data).toMatchObject({ event_id: first.id, event_type: 'order.created', attempt, status: 204, error: null });
      expect(receiver.received).toHaveLength(attempt);
      const again = receiver.received[attempt - 1];
      expect(again.id).toBe(first.id);
      expect(again.body).toBe(first.body);
      expect(verifiedEvents([again])[0].data.object).toEqual(order);
    }
    const log = await deliveryLog(api, token, endpoint.id);
    expect(log.map((d) => [d.event_id, d.attempt, d.status])).toEqual([
      [first.id, 3, 204],
      [first.id, 2, 204],
      [first.id, 1, 204],
    ]);

    expect((await api.post(`/webhook-endpoints/${endpoint.id}/deliveries/evt_000000000000000000000000/retry`, token)).status).toBe(404);
    expect((await api.post(`/webhook-endpoints/999999/deliveries/${first.id}/retry`, token)).status).toBe(404);
    // Another merchant, with an endpoint of the same id of its own: the event was never its to retry.
    const stranger = await newMerchant();
    const strangerEndpoint = await registerEndpoint(api, stranger.token, receiver.url);
    expect(strangerEndpoint.id).toBe(endpoint.id);
    const foreign = await api.post(`/webhook-endpoints/${endpoint.id}/deliveries/${first.id}/retry`, stranger.token);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ message: NOT_FOUND });
    expect(receiver.received).toHaveLength(3);
  });
});
