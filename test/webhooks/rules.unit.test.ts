import { describe, expect, it } from 'vitest';
import {
  decide,
  deliveryFor,
  newEndpoint,
  payloadAbility,
  receives,
  resourceIdOf,
  testWebhook,
  TEST_WEBHOOK_TYPE,
  type Endpoint,
} from '#lib/webhooks/rules';

/** The webhook endpoints' rules (docs/webhook-endpoints.md), decided in memory: no database, no HTTP. */
const NOW = '2026-05-01T12:00:00Z';
const endpoint = (over: Partial<Endpoint> = {}): Endpoint => ({
  ...newEndpoint(3, { url: 'https://hooks.example.com/a', events: ['order.paid'] } as never, 'enc-1', '2026-04-01T00:00:00Z'),
  ...over,
});
const update = (input: object) => ({ kind: 'update', input: input as never }) as const;

describe('a new endpoint', () => {
  it('is enabled, without a description, its secret issued at creation', () => {
    expect(endpoint()).toMatchObject({
      id: 3,
      status: 'enabled',
      description: null,
      secret_encrypted: 'enc-1',
      secret_created_at: '2026-04-01T00:00:00Z',
      version: 1,
    });
  });
});

describe('decide: update', () => {
  it('a request that changes nothing writes nothing', () => {
    const e = endpoint();
    expect(decide(e, update({ url: e.url, events: ['order.paid'] }), NOW)).toEqual({ next: e, unchanged: true });
    expect(decide(e, update({}), NOW).unchanged).toBe(true);
  });

  it('changes the given fields (null clears the description) and moves the version on', () => {
    const plan = decide(endpoint({ description: 'old' }), update({ description: null, events: ['*'] }), NOW);
    expect(plan.next).toMatchObject({ description: null, events: ['*'], updated_at: NOW, version: 2 });
    expect(plan.healthReset).toBe(false);
  });

  it('enabled again: its failures count from scratch', () => {
    expect(decide(endpoint({ status: 'disabled' }), update({ status: 'enabled' }), NOW).healthReset).toBe(true);
  });

  it('drops a replaced secret past its 24 hours, and keeps one within them', () => {
    const kept = { previous_secret_encrypted: 'enc-0', previous_secret_expires_at: '2026-05-01T13:00:00Z' };
    expect(decide(endpoint(kept), update({ description: 'x' }), NOW).next).toMatchObject(kept);
    const expired = decide(
      endpoint({ ...kept, previous_secret_expires_at: '2026-05-01T11:00:00Z' }),
      update({ description: 'x' }),
      NOW,
    ).next;
    expect(expired).not.toHaveProperty('previous_secret_encrypted');
    expect(expired).not.toHaveProperty('previous_secret_expires_at');
  });
});

describe('decide: rotate', () => {
  it('the new secret signs from now; the replaced one is kept 24 hours', () => {
    const { next } = decide(endpoint(), { kind: 'rotate', secretEncrypted: 'enc-2' }, NOW);
    expect(next).toMatchObject({
      secret_encrypted: 'enc-2',
      secret_created_at: NOW,
      previous_secret_encrypted: 'enc-1',
      previous_secret_expires_at: '2026-05-02T12:00:00Z',
      version: 2,
    });
  });
});

describe('who receives what', () => {
  it('an enabled endpoint receives the types it names, or all with *', () => {
    expect(receives({ status: 'enabled', events: ['order.paid'] } as never, 'order.paid')).toBe(true);
    expect(receives({ status: 'enabled', events: ['order.paid'] } as never, 'order.created')).toBe(false);
    expect(receives({ status: 'enabled', events: ['*'] } as never, 'subscription.created')).toBe(true);
    expect(receives({ status: 'disabled', events: ['*'] } as never, 'order.paid')).toBe(false);
  });

  it('the test webhook names its endpoint', () => {
    expect(testWebhook(3, 'evt_1', NOW)).toEqual({
      id: 'evt_1',
      type: TEST_WEBHOOK_TYPE,
      created_at: NOW,
      data: { object: { webhook_endpoint_id: 3, message: 'A test event from the revenue analytics API.' } },
    });
  });
});

describe('what the delivery log shows of a body', () => {
  const body = (type: string, object: object) =>
    JSON.stringify({ id: 'evt_0123456789abcdef01234567', type, created_at: '2026-03-01T10:00:00Z', data: { object } });
  const entry = (type: string, payload: string | null, truncated = false) => ({ event_type: type, payload, payload_truncated: truncated });

  it('needs the read ability of the resource carried; the test event needs none; an unknown type is withheld', () => {
    expect(payloadAbility('order.refunded')).toBe('orders:read');
    expect(payloadAbility('subscription.paused')).toBe('subscriptions:read');
    expect(payloadAbility(TEST_WEBHOOK_TYPE)).toBeNull();
    expect(payloadAbility('customer.created')).toBeUndefined();
    const unknown = deliveryFor(entry('customer.created', body('customer.created', { id: 5 })), ['orders:read', 'subscriptions:read']);
    expect(unknown).toMatchObject({ payload: null, payload_withheld: true, resource_id: 5 });
  });

  it('withholds the body (and its truncation mark) but keeps the resource id, even of a truncated body', () => {
    const long = body('order.paid', { id: 123456, order_no: 'A-1', metadata: { note: 'x'.repeat(9000) } });
    const cut = long.slice(0, 6144);
    expect(deliveryFor(entry('order.paid', cut, true), ['webhooks:read'])).toEqual({
      event_type: 'order.paid',
      payload: null,
      payload_truncated: false,
      resource_id: 123456,
      payload_withheld: true,
    });
    expect(deliveryFor(entry('order.paid', cut, true), ['orders:read'])).toMatchObject({
      payload: cut,
      payload_truncated: true,
      payload_withheld: false,
    });
    expect(deliveryFor(entry('subscription.created', body('subscription.created', { id: 9 })), ['orders:read'])).toMatchObject({
      payload: null,
      resource_id: 9,
    });
  });

  it('a test event, or an entry logged before bodies were kept, has no resource id and nothing withheld', () => {
    const test = body(TEST_WEBHOOK_TYPE, testWebhook(3, 'evt_1', NOW).data.object);
    expect(deliveryFor(entry(TEST_WEBHOOK_TYPE, test), [])).toMatchObject({ payload: test, resource_id: null, payload_withheld: false });
    expect(deliveryFor(entry('order.paid', null), [])).toMatchObject({ payload: null, resource_id: null, payload_withheld: false });
    expect(resourceIdOf('{"id":1}')).toBeNull();
  });
});
