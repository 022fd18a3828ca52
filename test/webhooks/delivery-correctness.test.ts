import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db, requestCounter, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { WriteSet } from '#lib/db/writes';
import { newEventId } from '#lib/outbox/store';
import { tasksFor } from '#lib/webhooks/consumers';
import { addDeliveryLog, DELIVERY_LOG_TTL_SECONDS, listDeliveries, LOGGED_PAYLOAD_MAX_BYTES } from '#lib/webhooks/deliveries';
import { deliverTask, type DeliveryTask } from '#lib/webhooks/delivery';
import { URL_MAX } from '#lib/webhooks/schemas';
import { backfillEndpointList, endpointsReceiving } from '#lib/webhooks/store';
import { URL_MESSAGES } from '#lib/webhooks/url-safety';
import { startWebhookReceiver } from '../../infra/local/webhook-receiver.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { loseResponseOnce, staleIndexReads } from '../support/faults.ts';
import { cursorAt } from '../support/pages.ts';
import { registerEndpoint } from './support/pipeline.ts';

/**
 * The delivery path's writes and reads at AWS scale: an attempt's record re-sent after its answer
 * was lost counts once; the fan-out sees an endpoint created or re-enabled a moment ago although
 * the index has not caught up; the delivery log's total costs the same on page 1 and deep in a
 * long log.
 */
const api = useApi();
const receivers: Awaited<ReturnType<typeof startWebhookReceiver>>[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

// Its own: a merchant with an endpoint on a receiver answering `status`, not a customer.
const setup = async (status = 204) => {
  const m = await newMerchant();
  const r = await startWebhookReceiver({ respond: () => status });
  receivers.push(r);
  const endpoint = await registerEndpoint(api, m.token, r.url);
  return { ...m, r, endpoint };
};

const task = (merchantId: string, endpointId: number, type = 'order.paid'): DeliveryTask => ({
  merchant_id: merchantId,
  endpoint_id: endpointId,
  event: { id: newEventId(), type, created_at: '2026-03-01T10:00:00Z', data: { object: { order_no: 'A-1' } } },
});

const stateOf = async (t: DeliveryTask) =>
  (
    await db().send(
      new GetCommand({
        TableName: tableName(),
        Key: keys.webhookDeliveryState(t.merchant_id, t.endpoint_id, t.event.id),
        ConsistentRead: true,
      }),
    )
  ).Item!;

const logOf = async (token: string, endpointId: number) => {
  const r = await api.get(`/webhook-endpoints/${endpointId}/deliveries?per_page=100`, token);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { data: { event_id: string; attempt: number }[]; meta: { total: number } };
};

/** The transaction that records an attempt (it writes the delivery's state item). */
const recordsAttempt = (input: Record<string, any>) =>
  (input.TransactItems ?? []).some((a: any) => String(a.Update?.Key?.sk ?? '').startsWith('DELIVERY#'));

describe("an attempt's record whose answer was lost", () => {
  it.each([
    ['a failed attempt', 500, 'retry'],
    ['a successful attempt', 204, 'done'],
  ] as const)('%s is counted once: the re-sent record finds its own write', async (_name, status, action) => {
    const { merchantId, token, r, endpoint } = await setup(status);
    const t = task(merchantId, endpoint.id);
    const lost = loseResponseOnce('TransactWriteItems', { when: recordsAttempt });
    let outcome: Awaited<ReturnType<typeof deliverTask>>;
    try {
      outcome = await deliverTask(t, { random: () => 0.5 });
    } finally {
      lost.uninstall();
    }
    expect(lost.stats.fired).toBe(true);
    expect(outcome).toMatchObject({ action, entry: { attempt: 1, status } });
    expect(r.received).toHaveLength(1);
    const state = await stateOf(t);
    expect(Number(state.attempts)).toBe(1);
    expect(Number(state.scheduled_attempts)).toBe(1);
    const log = await logOf(token, endpoint.id);
    expect(log.data.map((e) => [e.event_id, e.attempt])).toEqual([[t.event.id, 1]]);
    expect(log.meta.total).toBe(1);

    if (action === 'retry') {
      // The next scheduled attempt is numbered 2, as if nothing had gone wrong.
      expect(await deliverTask(t, { random: () => 0.5 })).toMatchObject({ action: 'retry', entry: { attempt: 2 } });
      expect(Number((await stateOf(t)).attempts)).toBe(2);
      expect((await logOf(token, endpoint.id)).meta.total).toBe(2);
    }
  });

  it('two copies of one task attempting at once are numbered 1 and 2 (the later record re-reads the count)', async () => {
    const { merchantId, token, r, endpoint } = await setup(500);
    const t = task(merchantId, endpoint.id);
    const outcomes = await Promise.all([deliverTask(t, { random: () => 0.5 }), deliverTask(t, { random: () => 0.5 })]);
    expect(outcomes.map((o) => o.entry?.attempt).sort()).toEqual([1, 2]);
    expect(r.received).toHaveLength(2);
    expect(Number((await stateOf(t)).attempts)).toBe(2);
    const log = await logOf(token, endpoint.id);
    expect(log.data.map((e) => e.attempt).sort()).toEqual([1, 2]);
    expect(log.meta.total).toBe(2);
  });
});

describe('fan-out while the endpoint list index lags', () => {
  const event = (merchantId: string) => ({
    id: newEventId(),
    type: 'order.paid',
    created_at: '2026-03-01T10:00:00Z',
    merchant_id: merchantId,
    data: { object: { order_no: 'A-1' } },
  });

  it('an endpoint created or re-enabled a moment ago receives the next event; a disabled or deleted one does not', async () => {
    const { merchantId, token, endpoint: first } = await setup();
    const paused = await registerEndpoint(api, token, 'http://127.0.0.1:9/paused');
    const gone = await registerEndpoint(api, token, 'http://127.0.0.1:9/gone');
    expect((await api.patch(`/webhook-endpoints/${paused.id}`, token, { status: 'disabled' })).status).toBe(200);
    const stale = staleIndexReads();
    try {
      // What the list index shows now: first, paused (disabled) and gone.
      await stale.record(async () => {
        await tasksFor(event(merchantId));
        await api.get('/webhook-endpoints', token);
      });
      const fresh = await registerEndpoint(api, token, 'http://127.0.0.1:9/fresh');
      expect((await api.patch(`/webhook-endpoints/${paused.id}`, token, { status: 'enabled' })).status).toBe(200);
      expect((await api.del(`/webhook-endpoints/${gone.id}`, token)).status).toBe(204);
      stale.freeze();
      // The index still shows the old list...
      const listed = (await api.get('/webhook-endpoints', token)).body.data.map((e: { id: number }) => e.id);
      expect(listed).not.toContain(fresh.id);
      expect(stale.stats.served).toBeGreaterThan(0);
      // ...the fan-out does not read it.
      const tasks = await tasksFor(event(merchantId));
      expect(tasks.map((t) => t.endpoint_id).sort((a, b) => a - b)).toEqual([first.id, paused.id, fresh.id].sort((a, b) => a - b));
      expect(stale.stats.passedThrough).toBe(0);
    } finally {
      stale.uninstall();
    }
  });

  it('an endpoint from before list entries is still found (through the index while the count says one is missing), and listed again once written', async () => {
    const { merchantId, token, endpoint } = await setup();
    await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.webhookEndpointListEntry(merchantId, endpoint.id) }));
    expect((await tasksFor(event(merchantId))).map((t) => t.endpoint_id)).toEqual([endpoint.id]);
    expect((await api.post(`/webhook-endpoints/${endpoint.id}/rotate-secret`, token)).status).toBe(200);
    const entry = await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.webhookEndpointListEntry(merchantId, endpoint.id), ConsistentRead: true }),
    );
    expect(entry.Item).toMatchObject({ id: endpoint.id, status: 'enabled', events: ['*'] });
  });
});

describe('ops webhooks backfill', () => {
  it('writes the list entries and count heads endpoints from before them lack (by key, not from the index); a second run writes nothing', async () => {
    const { merchantId, token, endpoint } = await setup();
    const other = await registerEndpoint(api, token, 'http://127.0.0.1:9/other', ['order.refunded']);
    const deleted = await registerEndpoint(api, token, 'http://127.0.0.1:9/deleted');
    expect((await api.del(`/webhook-endpoints/${deleted.id}`, token)).status).toBe(204);
    for (const id of [endpoint.id, other.id]) {
      for (const key of [keys.webhookEndpointListEntry(merchantId, id), keys.webhookDeliveryDaysHead(merchantId, id)]) {
        await db().send(new DeleteCommand({ TableName: tableName(), Key: key }));
      }
    }
    const stale = staleIndexReads();
    try {
      stale.freeze();
      expect(await backfillEndpointList(merchantId)).toEqual({ endpoints: 2, written: 2 });
      expect(await backfillEndpointList(merchantId)).toEqual({ endpoints: 2, written: 0 });
      expect(stale.stats.passedThrough).toBe(0);
      requestCounter.reset();
      expect((await endpointsReceiving(merchantId, 'order.refunded')).map((e) => e.id).sort((a, b) => a - b)).toEqual([
        endpoint.id,
        other.id,
      ]);
      // The list alone (one Query), beside the count (one BatchGetItem): no index read any more.
      expect(requestCounter.byCommand).toEqual({ QueryCommand: 1, BatchGetItemCommand: 1 });
      expect(stale.stats.passedThrough).toBe(0);
    } finally {
      stale.uninstall();
    }
    // The log's total: counted item by item while the window still holds uncounted days, from the counts after.
    const listed = async (daysLater: number) => {
      requestCounter.reset();
      const r = await listDeliveries(
        merchantId,
        endpoint.id,
        { page: 1, per_page: 20 },
        Math.floor(Date.now() / 1000) + daysLater * 24 * 3600,
      );
      return { total: r.meta.total, requests: requestCounter.total };
    };
    await deliverTask(task(merchantId, endpoint.id));
    expect(await listed(0)).toEqual({ total: 1, requests: 4 });
    // An attempt tomorrow, the first whole counted day; 30 days on, the window starts there.
    fixedClock(new Date(Date.now() + 24 * 3600 * 1000).toISOString());
    try {
      await deliverTask(task(merchantId, endpoint.id));
    } finally {
      resetClock();
    }
    expect(await listed(29)).toEqual({ total: 2, requests: 4 });
    expect(await listed(30)).toEqual({ total: 1, requests: 2 });
  });
});

describe('GET /webhook-endpoints/{id}/deliveries: the total from day counts', () => {
  /** `n` attempts spread over the last 29 days, newest first, and one past its 30 days that TTL has not removed yet. */
  const seedLog = async (merchantId: string, endpointId: number, n: number) => {
    const now = Date.now();
    const step = Math.floor((29 * 24 * 3600 * 1000) / n);
    const at = (msAgo: number) => new Date(now - msAgo).toISOString();
    const entries = Array.from({ length: n }, (_, i) => at((i + 1) * step));
    entries.push(at(DELIVERY_LOG_TTL_SECONDS * 1000 + 3600_000));
    for (let i = 0; i < entries.length; i += 45) {
      const ws = new WriteSet();
      for (const sortAt of entries.slice(i, i + 45)) {
        const e = {
          event_id: newEventId(),
          event_type: 'order.paid',
          attempt: 1,
          status: 204,
          error: null,
          duration_ms: 5,
          at: `${sortAt.slice(0, 19)}Z`,
          next_attempt_at: null,
          payload: '{}',
          payload_truncated: false,
        };
        addDeliveryLog(ws, merchantId, endpointId, e, sortAt);
      }
      await ws.commit();
    }
  };

  it('page 1 and a cursor page 2,000 attempts deep cost the same requests, on a long log as on a short one', async () => {
    const long = await setup();
    const short = await setup();
    await seedLog(long.merchantId, long.endpoint.id, 2_500);
    await seedLog(short.merchantId, short.endpoint.id, 30);
    const costs: Record<string, number> = {};
    for (const [name, m, deep] of [
      ['long', long, 2_000],
      ['short', short, 0],
    ] as const) {
      const path = `/webhook-endpoints/${m.endpoint.id}/deliveries`;
      const page1 = await api.counted('GET', `${path}?per_page=20`, { token: m.token });
      expect(page1.res.status).toBe(200);
      expect(page1.res.body.meta).toMatchObject({ total: name === 'long' ? 2_500 : 30, current_page: 1 });
      costs[`${name} page 1`] = page1.requests;
      const cursor = deep ? await cursorAt(api, m.token, path, deep) : page1.res.body.meta.next_cursor;
      const next = await api.counted('GET', `${path}?per_page=20&cursor=${encodeURIComponent(cursor)}`, { token: m.token });
      expect(next.res.status).toBe(200);
      expect(next.res.body.data).toHaveLength(name === 'long' ? 20 : 10);
      expect(next.res.body.meta).toMatchObject(
        name === 'long' ? { total: 2_500, from: 2_001, to: 2_020 } : { total: 30, from: 21, to: 30, next_cursor: null },
      );
      costs[`${name} cursor page`] = next.requests;
    }
    // token, rate, the day counts with their head ‖ the page.
    expect(costs).toEqual({ 'long page 1': 4, 'long cursor page': 4, 'short page 1': 4, 'short cursor page': 4 });
  });

  it('a page of 100 attempts each holding the most the log keeps (payload and error) is still one Query: 4 requests', async () => {
    const { merchantId, token, endpoint } = await setup();
    const now = Date.now();
    // Bodies past the bound (kept truncated) and the longest error: a refused host of a 2,048-character URL.
    const body = JSON.stringify({ note: '😀'.repeat(LOGGED_PAYLOAD_MAX_BYTES) });
    const error = `refused url: ${'h'.repeat(URL_MAX)}: ${URL_MESSAGES.refused}`;
    for (let i = 0; i < 100; i += 25) {
      const ws = new WriteSet();
      for (let j = i; j < i + 25; j++) {
        const sortAt = new Date(now - (j + 1) * 1000).toISOString();
        addDeliveryLog(
          ws,
          merchantId,
          endpoint.id,
          {
            event_id: newEventId(),
            event_type: 'subscription.reactivated',
            attempt: 1,
            status: null,
            error,
            duration_ms: 10_000,
            at: `${sortAt.slice(0, 19)}Z`,
            next_attempt_at: `${sortAt.slice(0, 19)}Z`,
            payload: body,
            payload_truncated: false,
          },
          sortAt,
        );
      }
      await ws.commit();
    }
    const page = await api.counted('GET', `/webhook-endpoints/${endpoint.id}/deliveries?per_page=100`, { token });
    expect(page.res.status).toBe(200);
    expect(page.res.body.data).toHaveLength(100);
    for (const e of page.res.body.data) {
      expect(e.payload_truncated).toBe(true);
      expect(body.startsWith(e.payload)).toBe(true);
      expect(Buffer.byteLength(e.payload)).toBeGreaterThan(LOGGED_PAYLOAD_MAX_BYTES - 4);
    }
    // token, rate, the day counts with their head ‖ the page: the page did not spill into a second Query.
    expect(page.requests).toBe(4);
  });

  it('the total equals what the pages list, and moves with each attempt', async () => {
    const { merchantId, token, endpoint } = await setup();
    await seedLog(merchantId, endpoint.id, 7);
    expect((await logOf(token, endpoint.id)).meta.total).toBe(7);
    expect((await logOf(token, endpoint.id)).data).toHaveLength(7);
    await deliverTask(task(merchantId, endpoint.id));
    expect(await api.post(`/webhook-endpoints/${endpoint.id}/test`, token)).toMatchObject({ status: 200 });
    const log = await logOf(token, endpoint.id);
    expect(log.meta.total).toBe(9);
    expect(log.data).toHaveLength(9);
  });
});
