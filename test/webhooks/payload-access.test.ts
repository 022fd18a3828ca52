import { parse } from 'csv-parse/sync';
import { afterAll, describe, expect, it } from 'vitest';
import { ABILITIES, type Ability } from '#lib/auth/abilities';
import { DASHBOARD_READS } from '#lib/api/handler';
import { routeList } from '#lib/api/routes';
import { createToken, revokeToken } from '#lib/merchants/service';
import { newEventId } from '#lib/outbox/store';
import { deliverTask } from '#lib/webhooks/delivery';
import { startWebhookReceiver } from '../../infra/local/webhook-receiver.ts';
import { backofficeJwt } from '../backoffice/support.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { registerEndpoint } from './support/pipeline.ts';

/**
 * The delivery log shows a body only to a caller that may read the resource it carries: an order
 * event's to `orders:read`, a subscription event's to `subscriptions:read`; others get the event's
 * id, type and resource id, with `payload` null and `payload_withheld`. The same holds for the
 * retry answer, and the dashboard (which reads orders and subscriptions anyway) sees every body.
 */
const api = useApi();
const receivers: Awaited<ReturnType<typeof startWebhookReceiver>>[] = [];
afterAll(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

const EMAIL = 'private.buyer@example.com';

// Its own: a merchant with an endpoint and deliveries of private payloads made, not a customer.
const setup = async () => {
  const m = await newMerchant();
  const secrets: string[] = [];
  const r = await startWebhookReceiver({ secrets });
  receivers.push(r);
  const endpoint = await registerEndpoint(api, m.token, r.url);
  secrets.push(endpoint.secret);
  const event = (type: string, object: Record<string, unknown>) => ({
    id: newEventId(),
    type,
    created_at: '2026-03-01T10:00:00Z',
    data: { object },
  });
  const order = event('order.paid', { id: 41, order_no: 'A-41', amount: '10.00', customer_email: EMAIL, customer_name: 'Private Buyer' });
  const subscription = event('subscription.created', { id: 7, customer_id: 3, plan_name: 'Gold', mrr: '99.00' });
  for (const e of [order, subscription]) {
    const outcome = await deliverTask({ merchant_id: m.merchantId, endpoint_id: endpoint.id, event: e });
    expect(outcome).toMatchObject({ action: 'done', reason: 'delivered' });
  }
  const test = (await api.post(`/webhook-endpoints/${endpoint.id}/test`, m.token)).body.data;
  // A merchant has one valid token at a time: each new one replaces the last.
  const token = async (abilities: Ability[]) => {
    await revokeToken(m.merchantId);
    return (await createToken(m.merchantId, abilities)).token;
  };
  const bodyOf = (id: string) => r.received.find((d) => d.id === id)!.body;
  return { ...m, endpoint, order, subscription, test, token, bodyOf };
};

const log = async (endpointId: number, auth: string) => {
  const res = await api.get(`/webhook-endpoints/${endpointId}/deliveries`, auth);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as Record<string, unknown>[];
};
const byEvent = (rows: Record<string, unknown>[], id: string) => rows.find((d) => d.event_id === id)!;

describe('the delivery log and who may read the bodies', () => {
  it('a webhooks:read token gets ids, types and resource ids but no order or subscription body; orders:read shows orders', async () => {
    const s = await setup();
    const hooksOnly = await s.token(['webhooks:read']);
    // The same token may not read the orders themselves.
    expect((await api.get('/orders', hooksOnly)).status).toBe(403);

    const rows = await log(s.endpoint.id, hooksOnly);
    expect(byEvent(rows, s.order.id)).toMatchObject({
      event_type: 'order.paid',
      status: 204,
      resource_id: 41,
      payload: null,
      payload_truncated: false,
      payload_withheld: true,
    });
    expect(byEvent(rows, s.subscription.id)).toMatchObject({
      event_type: 'subscription.created',
      resource_id: 7,
      payload: null,
      payload_withheld: true,
    });
    // The test event carries nothing of the merchant's: shown.
    expect(byEvent(rows, s.test.event_id)).toMatchObject({
      payload: s.bodyOf(s.test.event_id),
      resource_id: null,
      payload_withheld: false,
    });
    expect(JSON.stringify(rows)).not.toContain(EMAIL);
    const csv = await api.get(`/webhook-endpoints/${s.endpoint.id}/deliveries`, hooksOnly, { accept: 'text/csv' });
    expect(csv.status).toBe(200);
    expect(csv.body as string).not.toContain(EMAIL);
    expect(parse(csv.body as string, { columns: true })).toContainEqual(
      expect.objectContaining({ event_id: s.order.id, resource_id: '41', payload: '', payload_withheld: 'true' }),
    );

    const withOrders = await log(s.endpoint.id, await s.token(['webhooks:read', 'orders:read']));
    expect(byEvent(withOrders, s.order.id)).toMatchObject({ payload: s.bodyOf(s.order.id), resource_id: 41, payload_withheld: false });
    expect(byEvent(withOrders, s.subscription.id)).toMatchObject({ payload: null, payload_withheld: true });

    const withSubscriptions = await log(s.endpoint.id, await s.token(['webhooks:read', 'subscriptions:read']));
    expect(byEvent(withSubscriptions, s.order.id)).toMatchObject({ payload: null, payload_withheld: true });
    expect(byEvent(withSubscriptions, s.subscription.id)).toMatchObject({ payload: s.bodyOf(s.subscription.id), payload_withheld: false });
  });

  it('the retry answer follows the same rule; the dashboard sees every body', async () => {
    const s = await setup();
    const writeOnly = await s.token(['webhooks:write']);
    const retried = await api.post(`/webhook-endpoints/${s.endpoint.id}/deliveries/${s.order.id}/retry`, writeOnly);
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.data).toMatchObject({
      event_id: s.order.id,
      attempt: 2,
      status: 204,
      resource_id: 41,
      payload: null,
      payload_withheld: true,
    });
    expect(JSON.stringify(retried.body)).not.toContain(EMAIL);
    const full = await api.post(`/webhook-endpoints/${s.endpoint.id}/deliveries/${s.order.id}/retry`, await s.token([...ABILITIES]));
    expect(full.body.data).toMatchObject({ attempt: 3, payload: s.bodyOf(s.order.id), payload_withheld: false });

    for (const role of ['user', 'admin'] as const) {
      const rows = await log(s.endpoint.id, await backofficeJwt(s.merchantId, role));
      expect(rows.every((d) => d.payload_withheld === false && typeof d.payload === 'string')).toBe(true);
      expect(byEvent(rows, s.order.id).payload).toBe(s.bodyOf(s.order.id));
    }
  });

  it('every dashboard role may read what DASHBOARD_READS names through a route of its own', () => {
    for (const ability of DASHBOARD_READS) {
      const open = routeList.filter((r) => r.method === 'GET' && r.ability === ability && r.dashboard);
      expect(
        open.some((r) => ['admin', 'user'].every((role) => (r.dashboard!.roles as readonly string[]).includes(role))),
        ability,
      ).toBe(true);
    }
  });
});
