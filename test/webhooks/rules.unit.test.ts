import { describe, expect, it } from 'vitest';
import { decide, newEndpoint, receives, testWebhook, TEST_WEBHOOK_TYPE, type Endpoint } from '#lib/webhooks/rules';

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
