import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { WriteSet } from '#lib/db/writes';
import { presentOrder, type OrderItem } from '#lib/orders/model';
import { newEventId } from '#lib/outbox/store';
import { presentSubscription, type SubscriptionItem } from '#lib/subscriptions/model';
import { webhookBody } from '#lib/webhooks/deliver';
import { addDeliveryLog, LOGGED_PAYLOAD_MAX_BYTES, loggedPayload, type DeliveryLogEntry } from '#lib/webhooks/deliveries';
import { testWebhook } from '#lib/webhooks/rules';
import { URL_MAX } from '#lib/webhooks/schemas';
import { URL_MESSAGES } from '#lib/webhooks/url-safety';

/**
 * The bound on what the delivery log keeps of a body (docs/webhooks.md, The delivery log): the
 * bodies the API sends, at their largest, against LOGGED_PAYLOAD_MAX_BYTES; the cut of a longer
 * one; and the largest log entry, of which a page of 100 must stay one Query answer (1 MB).
 */
const T = '2026-03-01T10:00:00Z';
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
/** The character JSON writes longest (`\u0001`: 6 bytes) `n` times: a field of n characters at its largest as JSON. */
const widest = (n: number) => '\u0001'.repeat(n);
const body = (type: string, object: unknown) => webhookBody({ id: newEventId(), type, created_at: T, data: { object } });
const BIGGEST_ID = Number.MAX_SAFE_INTEGER;

describe('webhook bodies and the log bound', () => {
  it('a subscription event, a test event and an order without metadata, at their largest, are logged whole', () => {
    const subscription: SubscriptionItem = {
      pk: 'p',
      sk: 's',
      id: BIGGEST_ID,
      customer_id: BIGGEST_ID,
      external_id: widest(255),
      status: 'cancelled',
      plan_name: widest(255),
      mrr: '9999999999999.99',
      currency: 'USD',
      billing_cycle: 'semi-annual' as SubscriptionItem['billing_cycle'],
      source: 'import' as SubscriptionItem['source'],
      started_at: T,
      current_period_start: T,
      cancelled_at: T,
      cancel_at: T,
      paused_at: T,
      cancel_reason: widest(255),
      created_at: T,
      updated_at: T,
      version: 1,
    };
    const order = {
      pk: 'p',
      sk: 's',
      id: BIGGEST_ID,
      order_no: widest(100),
      amount: '9999999999999.99',
      currency: 'USD',
      status: 'refunded',
      payment_method: 'wallet_a_pay',
      source: 'webhook',
      billing_cycle: 'semi-annual',
      paid_at: T,
      refunded_at: T,
      failed_at: T,
      metadata: null,
      customer_id: BIGGEST_ID,
      created_at: T,
      updated_at: T,
      version: 1,
    } as OrderItem;
    // An email is at most 255 characters, a customer's name too.
    const customer = { email: widest(255), name: widest(255) };
    const bodies = {
      subscription: body('subscription.reactivated', presentSubscription(subscription, 'USD')),
      order: body('order.refunded', presentOrder(order, customer)),
      test: webhookBody(testWebhook(BIGGEST_ID, newEventId(), T)),
    };
    for (const [name, b] of Object.entries(bodies)) {
      expect(bytes(b), name).toBeLessThanOrEqual(LOGGED_PAYLOAD_MAX_BYTES);
      expect(loggedPayload(b), name).toEqual({ payload: b, payload_truncated: false });
    }
    // Only an order's metadata (up to 16 KiB) can take a body past the bound.
    const metadata = JSON.stringify({ note: 'é'.repeat(8 * 1024 - 20) });
    expect(bytes(metadata)).toBeLessThanOrEqual(16 * 1024);
    const large = body('order.paid', presentOrder({ ...order, metadata }, customer));
    expect(bytes(large)).toBeGreaterThan(LOGGED_PAYLOAD_MAX_BYTES);
    expect(loggedPayload(large).payload_truncated).toBe(true);
  });

  it('a longer body is cut to its first bytes within the bound, never inside a character', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', '"', 'é', '€', '😀', '\u0001'), minLength: 1, maxLength: 4 * LOGGED_PAYLOAD_MAX_BYTES }),
        (text) => {
          const b = JSON.stringify({ text });
          const kept = loggedPayload(b);
          expect(kept.payload_truncated).toBe(bytes(b) > LOGGED_PAYLOAD_MAX_BYTES);
          expect(b.startsWith(kept.payload)).toBe(true);
          expect(bytes(kept.payload)).toBeLessThanOrEqual(LOGGED_PAYLOAD_MAX_BYTES);
          // Cut at most one character (4 bytes) short of the bound.
          if (kept.payload_truncated) expect(bytes(kept.payload)).toBeGreaterThan(LOGGED_PAYLOAD_MAX_BYTES - 4);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('the largest log entry stays under 9 KB, so a page of 100 is one Query answer (DynamoDB stops one at 1 MB)', () => {
    const puts: Record<string, Record<string, unknown>> = {};
    const ws = {
      put: (tag: string, item: Record<string, unknown>) => (puts[tag] = item),
      update: () => ({ add: () => ({ set: () => undefined }) }),
      shard: 0,
    } as unknown as WriteSet;
    // The longest error: a refused address names the host, which a URL of at most 2,048 characters bounds.
    const longestMessage = Object.values(URL_MESSAGES).reduce((a, b) => (a.length > b.length ? a : b));
    const entry: DeliveryLogEntry = {
      event_id: newEventId(),
      event_type: 'subscription.reactivated',
      attempt: 999,
      status: null,
      error: `refused url: ${'h'.repeat(URL_MAX)}: ${longestMessage}`,
      duration_ms: 30_000,
      at: T,
      next_attempt_at: T,
      payload: JSON.stringify({ text: '😀'.repeat(20_000) }),
      payload_truncated: false,
    };
    addDeliveryLog(ws, `mer_${'f'.repeat(20)}`, BIGGEST_ID, entry, '2026-03-01T10:00:00.000Z');
    const item = puts['webhook-delivery'];
    expect(item.payload_truncated).toBe(true);
    expect(bytes(item.payload as string)).toBeLessThanOrEqual(LOGGED_PAYLOAD_MAX_BYTES);
    // DynamoDB's item size: attribute names and values in UTF-8 (numbers counted generously as their text).
    const size = Object.entries(item).reduce((n, [k, v]) => n + bytes(k) + bytes(String(v)), 0);
    expect(size).toBeLessThan(9_000);
    expect(100 * size).toBeLessThan(1_000_000);
  });
});
