import { NOT_FOUND as NOT_FOUND_MESSAGE } from '#lib/errors';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { parse } from 'csv-parse/sync';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { ABILITIES } from '#lib/auth/abilities';
import { fixedClock, resetClock } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { WriteSet } from '#lib/db/writes';
import { newEventId } from '#lib/outbox/store';
import { formatTimestamp } from '#lib/shared/time';
import { addDeliveryLog, DELIVERY_LOG_TTL_SECONDS, LOGGED_PAYLOAD_MAX_BYTES } from '#lib/webhooks/deliveries';
import { deliverTask, type DeliveryTask, type TaskOutcome } from '#lib/webhooks/delivery';
import { AUTO_DISABLE_AFTER_MS, MAX_ATTEMPTS, nextRetryDelaySeconds, RETRY_DELAYS_SECONDS, RETRY_JITTER } from '#lib/webhooks/schedule';
import { endpointsReceiving } from '#lib/webhooks/store';
import { startWebhookReceiver } from '../../infra/local/webhook-receiver.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { registerEndpoint } from './support/pipeline.ts';

/**
 * The delivery API (test event, delivery log, manual retry) and one queued task's life
 * (`deliverTask`): dedupe after success, disabled / deleted / unsubscribed endpoints, the retry
 * schedule, the dead-letter decision, rotation's two signatures and the 5-day auto-disable.
 */
const api = useApi();
const receivers: Awaited<ReturnType<typeof startWebhookReceiver>>[] = [];
afterEach(async () => {
  resetClock();
  for (const r of receivers.splice(0)) await r.close();
});

const receiver = async (respond?: (n: number) => number | Promise<number>) => {
  const secrets: string[] = [];
  const r = await startWebhookReceiver({ secrets, respond: respond ? (_d, n) => respond(n) : undefined });
  receivers.push(r);
  return Object.assign(r, { secrets });
};

/** A merchant with one endpoint pointing at a fresh receiver that verifies with its secret. */
// Its own: a merchant with an endpoint on this file's receiver (its responses scripted), not a customer.
const setup = async (opts: { events?: string[]; respond?: (n: number) => number | Promise<number> } = {}) => {
  const m = await newMerchant();
  const r = await receiver(opts.respond);
  const endpoint = await registerEndpoint(api, m.token, r.url, opts.events);
  r.secrets.push(endpoint.secret);
  return { ...m, r, endpoint };
};

const NOT_FOUND = { message: NOT_FOUND_MESSAGE };
const ATTEMPT_FIELDS = [
  'event_id',
  'event_type',
  'attempt',
  'status',
  'error',
  'duration_ms',
  'at',
  'next_attempt_at',
  'payload',
  'payload_truncated',
  'resource_id',
  'payload_withheld',
];

const task = (merchantId: string, endpointId: number, type = 'order.paid'): DeliveryTask => ({
  merchant_id: merchantId,
  endpoint_id: endpointId,
  event: { id: newEventId(), type, created_at: '2026-03-01T10:00:00Z', data: { object: { order_no: 'A-1', amount: '10.00' } } },
});

const storedEndpoint = async (merchantId: string, id: number) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: keys.webhookEndpoint(merchantId, id), ConsistentRead: true }))).Item;

describe('POST /webhook-endpoints/{id}/test', () => {
  it('sends one verified webhook.test now and answers the attempt, which the log lists', async () => {
    const { token, r, endpoint } = await setup({ events: ['order.paid'] });
    const res = await api.post(`/webhook-endpoints/${endpoint.id}/test`, token);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const a = res.body.data;
    expect(Object.keys(a).sort()).toEqual([...ATTEMPT_FIELDS].sort());
    // A test event is not retried by the queue: no next attempt.
    expect(a).toMatchObject({ event_type: 'webhook.test', attempt: 1, status: 204, error: null, next_attempt_at: null });
    expect(a.event_id).toMatch(/^evt_[0-9a-f]{24}$/);
    expect(a.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    expect(r.received).toHaveLength(1);
    expect(r.received[0].id).toBe(a.event_id);
    expect(r.received[0].event).toMatchObject({
      id: a.event_id,
      type: 'webhook.test',
      data: { object: { webhook_endpoint_id: endpoint.id } },
    });
    // The payload is the very body the receiver verified.
    expect(a).toMatchObject({ payload: r.received[0].body, payload_truncated: false });

    const log = await api.get(`/webhook-endpoints/${endpoint.id}/deliveries`, token);
    expect(log.status).toBe(200);
    expect(log.body).toEqual({ data: [a], meta: expect.objectContaining({ current_page: 1, total: 1, last_page: 1 }) });
    // As CSV the payload is one cell holding the body's text.
    const csv = await api.get(`/webhook-endpoints/${endpoint.id}/deliveries`, token, { accept: 'text/csv' });
    expect(parse(csv.body as string, { columns: true })).toEqual([
      expect.objectContaining({ event_id: a.event_id, next_attempt_at: '', payload: a.payload, payload_truncated: 'false' }),
    ]);
  });

  it('a failing receiver is still a 200 answer carrying the status; a disabled endpoint is tested too', async () => {
    const { token, r, endpoint } = await setup({ respond: () => 503 });
    await api.patch(`/webhook-endpoints/${endpoint.id}`, token, { status: 'disabled' });
    const res = await api.post(`/webhook-endpoints/${endpoint.id}/test`, token);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ attempt: 1, status: 503, error: null });
    expect(r.received).toHaveLength(1);
  });

  it('an unreachable receiver, a closed port or a black hole, answers "could not connect" alike', async () => {
    const { token, r, endpoint } = await setup();
    await r.close();
    const res = await api.post(`/webhook-endpoints/${endpoint.id}/test`, token);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: null, error: 'could not connect' });
    // A black hole: the connection is accepted and nothing ever comes back (the attempt's 10 s).
    const sockets: Socket[] = [];
    const blackHole = createTcpServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(blackHole.address() as AddressInfo).port}/hook`;
      expect((await api.patch(`/webhook-endpoints/${endpoint.id}`, token, { url })).status).toBe(200);
      const silent = await api.post(`/webhook-endpoints/${endpoint.id}/test`, token);
      expect(silent.status).toBe(200);
      expect(silent.body.data).toMatchObject({ status: null, error: 'could not connect' });
      expect(silent.body.data.duration_ms).toBeGreaterThanOrEqual(9_900);
      expect(sockets).toHaveLength(1);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => blackHole.close(resolve));
    }
  });
});

describe('POST /webhook-endpoints/{id}/deliveries/{event_id}/retry', () => {
  it('sends the same event again as the next attempt (same webhook-id, same body)', async () => {
    const { token, r, endpoint } = await setup({ respond: (n) => (n === 1 ? 500 : 204) });
    const first = (await api.post(`/webhook-endpoints/${endpoint.id}/test`, token)).body.data;
    expect(first.status).toBe(500);
    const res = await api.post(`/webhook-endpoints/${endpoint.id}/deliveries/${first.event_id}/retry`, token);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ event_id: first.event_id, event_type: 'webhook.test', attempt: 2, status: 204 });
    expect(r.received.map((d) => d.id)).toEqual([first.event_id, first.event_id]);
    expect(r.received[1].body).toBe(r.received[0].body);

    const log = (await api.get(`/webhook-endpoints/${endpoint.id}/deliveries`, token)).body.data;
    expect(log.map((e: any) => e.attempt).sort()).toEqual([1, 2]);
  });

  it('404 for an unknown event, an event of another endpoint, another merchant, malformed or oversized ids; nothing is sent', async () => {
    const a = await setup();
    const b = await setup();
    const otherEndpoint = await registerEndpoint(api, a.token, a.r.url);
    const evt = (await api.post(`/webhook-endpoints/${a.endpoint.id}/test`, a.token)).body.data.event_id;
    const bEvt = (await api.post(`/webhook-endpoints/${b.endpoint.id}/test`, b.token)).body.data.event_id;
    const sent = a.r.received.length;
    for (const [endpointId, eventId, token] of [
      [a.endpoint.id, newEventId(), a.token],
      [otherEndpoint.id, evt, a.token],
      [b.endpoint.id, bEvt, a.token],
      [a.endpoint.id, bEvt, a.token],
      [a.endpoint.id, evt, b.token],
      ['abc', evt, a.token],
      [999_999, evt, a.token],
      [a.endpoint.id, 'x'.repeat(2000), a.token],
      [a.endpoint.id, encodeURIComponent('evt#1/2'), a.token],
    ] as [number | string, string, string][]) {
      const res = await api.post(`/webhook-endpoints/${endpointId}/deliveries/${eventId}/retry`, token);
      expect(res.status, `${endpointId} ${eventId.slice(0, 40)}`).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
    expect(a.r.received).toHaveLength(sent);
  });
});

describe('GET /webhook-endpoints/{id}/deliveries', () => {
  it("pages newest first; 404 for an unknown or another merchant's endpoint; 422 on bad paging", async () => {
    const a = await setup();
    const b = await setup();
    for (let i = 0; i < 3; i++) expect((await api.post(`/webhook-endpoints/${a.endpoint.id}/test`, a.token)).status).toBe(200);
    const page1 = await api.get(`/webhook-endpoints/${a.endpoint.id}/deliveries?per_page=2`, a.token);
    expect(page1.body.meta).toMatchObject({ current_page: 1, per_page: 2, total: 3, last_page: 2 });
    const page2 = await api.get(`/webhook-endpoints/${a.endpoint.id}/deliveries?per_page=2&page=2`, a.token);
    expect(page2.body.data).toHaveLength(1);
    const all = [...page1.body.data, ...page2.body.data];
    expect(new Set(all.map((e: any) => e.event_id)).size).toBe(3);
    expect(all.map((e: any) => e.at)).toEqual([...all.map((e: any) => e.at)].sort().reverse());

    for (const id of [b.endpoint.id + 1000, 'abc']) {
      const r = await api.get(`/webhook-endpoints/${id}/deliveries`, a.token);
      expect(r.status).toBe(404);
    }
    expect((await api.get(`/webhook-endpoints/${a.endpoint.id}/deliveries`, b.token)).status).toBe(
      b.endpoint.id === a.endpoint.id ? 200 : 404,
    );
    expect((await api.get(`/webhook-endpoints/${a.endpoint.id}/deliveries?per_page=0`, a.token)).status).toBe(422);
  });

  it('request budgets: test 4, retry 4, list page 1 4 (token, rate, the count ‖ the page with the log head)', async () => {
    const { token, endpoint } = await setup();
    const empty = await api.counted('GET', `/webhook-endpoints/${endpoint.id}/deliveries`, { token });
    expect(empty.res.status).toBe(200);
    expect(empty.res.body.data).toEqual([]);
    expect(empty.requests).toBe(4);
    const test = await api.counted('POST', `/webhook-endpoints/${endpoint.id}/test`, { token });
    expect(test.res.status).toBe(200);
    expect(test.requests).toBeLessThanOrEqual(4);
    const retry = await api.counted('POST', `/webhook-endpoints/${endpoint.id}/deliveries/${test.res.body.data.event_id}/retry`, { token });
    expect(retry.res.status).toBe(200);
    expect(retry.requests).toBeLessThanOrEqual(4);
    const list = await api.counted('GET', `/webhook-endpoints/${endpoint.id}/deliveries`, { token });
    expect(list.res.status).toBe(200);
    expect(list.res.body.data).toHaveLength(2);
    expect(list.requests).toBe(4);
  });
});

describe('GET /webhook-endpoints/{id}/deliveries: the log head (existence without reading the endpoint)', () => {
  /**
   * `n` live attempts one second apart and one past its 30 days that TTL has not removed yet;
   * answers the live attempts' times, newest first.
   */
  const seedLog = async (merchantId: string, endpointId: number, n: number) => {
    const now = Date.now();
    const at = (secondsAgo: number) => `${new Date(now - secondsAgo * 1000).toISOString().slice(0, 19)}Z`;
    const entry = (secondsAgo: number) => ({
      event_id: newEventId(),
      event_type: 'order.paid',
      attempt: 1,
      status: 204,
      error: null,
      duration_ms: 5,
      at: at(secondsAgo),
      next_attempt_at: null,
      payload: '{}',
      payload_truncated: false,
    });
    const ws = new WriteSet();
    const live = Array.from({ length: n }, (_, i) => entry(i + 1));
    for (const e of [...live, entry(DELIVERY_LOG_TTL_SECONDS + 3600)]) addDeliveryLog(ws, merchantId, endpointId, e);
    await ws.commit();
    return live.map((e) => e.at);
  };
  const head = async (merchantId: string, id: number) =>
    (await db().send(new GetCommand({ TableName: tableName(), Key: keys.webhookDeliveryLogHead(merchantId, id), ConsistentRead: true })))
      .Item;
  const list = (id: number | string, token: string, query = '') =>
    api.counted('GET', `/webhook-endpoints/${id}/deliveries${query}`, { token });

  it('more than a page: page 1 in 4 requests without the head or expired attempts; deeper pages; past the end 200 empty', async () => {
    const { merchantId, token, endpoint } = await setup();
    expect(await head(merchantId, endpoint.id)).toBeDefined();
    const ats = await seedLog(merchantId, endpoint.id, 7);
    const page1 = await list(endpoint.id, token, '?per_page=3');
    expect(page1.res.status).toBe(200);
    expect(page1.requests).toBe(4);
    expect(page1.res.body.meta).toMatchObject({ current_page: 1, per_page: 3, total: 7, last_page: 3 });
    expect(page1.res.body.data.map((e: any) => e.at)).toEqual(ats.slice(0, 3));
    const pages = [page1.res.body.data];
    for (const page of [2, 3]) {
      const r = await list(endpoint.id, token, `?per_page=3&page=${page}`);
      expect(r.res.status).toBe(200);
      // Deeper pages by number: the day counts with their head, then the keys-only skip and the page.
      expect(r.requests).toBe(5);
      pages.push(r.res.body.data);
    }
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(new Set(pages.flat().map((e: any) => e.event_id)).size).toBe(7);
    const past = await list(endpoint.id, token, '?per_page=3&page=4');
    expect(past.res.status).toBe(200);
    expect(past.requests).toBe(3);
    expect(past.res.body).toMatchObject({ data: [], meta: { total: 7 } });
  });

  it('404 for a deleted endpoint whose log items remain and for a never-created id, on page 1 and past the end', async () => {
    const { merchantId, token, endpoint } = await setup();
    await seedLog(merchantId, endpoint.id, 3);
    expect((await api.del(`/webhook-endpoints/${endpoint.id}`, token)).status).toBe(204);
    expect(await head(merchantId, endpoint.id)).toBeUndefined();
    for (const [id, query] of [
      [endpoint.id, ''],
      [endpoint.id, '?per_page=2&page=2'],
      [endpoint.id, '?page=9'],
      [endpoint.id + 1000, ''],
      [endpoint.id + 1000, '?page=9'],
    ] as const) {
      const r = await list(id, token, query);
      expect(r.res.status, `${id}${query}`).toBe(404);
      expect(r.res.body).toEqual(NOT_FOUND);
    }
  });

  it('an endpoint created before the heads existed still lists (counted item by item, the endpoint read by key)', async () => {
    const { merchantId, token, endpoint } = await setup();
    const ats = await seedLog(merchantId, endpoint.id, 3);
    for (const key of [keys.webhookDeliveryLogHead(merchantId, endpoint.id), keys.webhookDeliveryDaysHead(merchantId, endpoint.id)]) {
      await db().send(new DeleteCommand({ TableName: tableName(), Key: key }));
    }
    const page1 = await list(endpoint.id, token, '?per_page=2');
    expect(page1.res.status).toBe(200);
    // token, rate, the day counts (no head), then the count of the log ‖ the endpoint's existence, and the page.
    expect(page1.requests).toBe(6);
    expect(page1.res.body).toMatchObject({ data: [{ at: ats[0] }, { at: ats[1] }], meta: { total: 3, last_page: 2 } });
    expect((await list(endpoint.id, token, '?per_page=2&page=2')).res.body.data).toHaveLength(1);
    expect((await list(endpoint.id, token, '?per_page=2&page=3')).res.body.data).toEqual([]);
    // Its delete (no head to remove) leaves a 404.
    expect((await api.del(`/webhook-endpoints/${endpoint.id}`, token)).status).toBe(204);
    expect((await list(endpoint.id, token)).res.status).toBe(404);
  });
});

describe('access', () => {
  const routes = [
    { method: 'POST', path: (id: number) => `/webhook-endpoints/${id}/test`, ability: 'webhooks:write' },
    { method: 'GET', path: (id: number) => `/webhook-endpoints/${id}/deliveries`, ability: 'webhooks:read' },
    { method: 'POST', path: (id: number) => `/webhook-endpoints/${id}/deliveries/${newEventId()}/retry`, ability: 'webhooks:write' },
  ] as const;

  it.each(routes.map((r) => [`${r.method} ${r.path(1)}`, r] as const))(
    '%s: 401 without a token, 403 without its ability; nothing sent',
    async (_n, route) => {
      const { r, endpoint } = await setup();
      const noToken = await api.request(route.method, route.path(endpoint.id), { token: null });
      expect(noToken.status).toBe(401);
      const others = ABILITIES.filter((a) => a !== route.ability);
      const { token } = await newMerchant(others);
      const forbidden = await api.request(route.method, route.path(endpoint.id), { token });
      expect(forbidden.status).toBe(403);
      expect(r.received).toHaveLength(0);
    },
  );
});

describe('deliverTask (one queued task)', () => {
  it('delivers once: a repeat of the task after success sends nothing', async () => {
    const { merchantId, r, endpoint } = await setup();
    const t = task(merchantId, endpoint.id);
    expect(await deliverTask(t)).toMatchObject({ action: 'done', reason: 'delivered', entry: { attempt: 1, status: 204 } });
    expect(await deliverTask(t)).toEqual({ action: 'done', reason: 'already delivered' });
    expect(r.received).toHaveLength(1);
    expect(r.received[0].event).toEqual(t.event);
  });

  it('health is written only when it changes: successes to a healthy endpoint write 3 items, failures after the first 3', async () => {
    let answer = 204;
    const { merchantId, endpoint } = await setup({ respond: () => answer });
    const sizes: number[] = [];
    const name = 'test:transaction-sizes';
    db().middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'TransactWriteItemsCommand')
          sizes.push((args.input as { TransactItems: unknown[] }).TransactItems.length);
        return next(args);
      },
      { step: 'initialize', name },
    );
    try {
      for (const a of [204, 204, 500, 500, 204, 204]) {
        answer = a;
        await deliverTask(task(merchantId, endpoint.id));
      }
    } finally {
      db().middlewareStack.remove(name);
    }
    // log + its day count + state, plus health on the first failure (set) and the first success after it (delete).
    expect(sizes).toEqual([3, 3, 4, 3, 4, 3]);
  });

  it('disabled, deleted and no-longer-subscribed endpoints get nothing', async () => {
    const { merchantId, token, r, endpoint } = await setup({ events: ['order.paid'] });
    expect(await deliverTask(task(merchantId, endpoint.id, 'order.created'))).toEqual({ action: 'done', reason: 'not subscribed' });
    await api.patch(`/webhook-endpoints/${endpoint.id}`, token, { status: 'disabled' });
    expect(await deliverTask(task(merchantId, endpoint.id))).toEqual({ action: 'done', reason: 'endpoint disabled' });
    await api.del(`/webhook-endpoints/${endpoint.id}`, token);
    expect(await deliverTask(task(merchantId, endpoint.id))).toEqual({ action: 'done', reason: 'endpoint deleted' });
    expect(r.received).toHaveLength(0);
  });

  it('a failing endpoint: retries on the schedule (± jitter), then the 9th failure is dead-lettered', async () => {
    const { merchantId, r, endpoint } = await setup({ respond: () => 500 });
    const t = task(merchantId, endpoint.id);
    const outcomes = [];
    for (let i = 0; i < MAX_ATTEMPTS; i++) outcomes.push(await deliverTask(t, { random: () => (i % 2 ? 0 : 0.999999) }));
    expect(outcomes.map((o) => o.action)).toEqual([...Array(MAX_ATTEMPTS - 1).fill('retry'), 'dead-letter']);
    outcomes.slice(0, -1).forEach((o, i) => {
      const delay = (o as { delaySeconds: number }).delaySeconds;
      expect(delay).toBeGreaterThanOrEqual(RETRY_DELAYS_SECONDS[i] * (1 - RETRY_JITTER));
      expect(delay).toBeLessThanOrEqual(RETRY_DELAYS_SECONDS[i] * (1 + RETRY_JITTER));
    });
    expect(outcomes.map((o) => o.entry?.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(r.received).toHaveLength(MAX_ATTEMPTS);
    expect(new Set(r.received.map((d) => d.id))).toEqual(new Set([t.event.id]));
  });

  it('manual retries are numbered in the log but do not use up the automatic schedule', async () => {
    const { merchantId, token, r, endpoint } = await setup({ respond: () => 500 });
    const t = task(merchantId, endpoint.id);
    const first = await deliverTask(t, { random: () => 0.5 });
    expect(first).toMatchObject({ action: 'retry', delaySeconds: RETRY_DELAYS_SECONDS[0], entry: { attempt: 1 } });
    const manual = await api.post(`/webhook-endpoints/${endpoint.id}/deliveries/${t.event.id}/retry`, token);
    expect(manual.body.data).toMatchObject({ attempt: 2, status: 500 });
    const second = await deliverTask(t, { random: () => 0.5 });
    expect(second).toMatchObject({ action: 'retry', delaySeconds: RETRY_DELAYS_SECONDS[1], entry: { attempt: 3 } });
    expect(r.received).toHaveLength(3);
  });

  it('after a rotation both secrets verify for 24 hours; then only the new one signs', async () => {
    const { merchantId, token, r, endpoint } = await setup();
    const rotated = await api.post(`/webhook-endpoints/${endpoint.id}/rotate-secret`, token);
    const fresh = rotated.body.data.secret as string;
    await deliverTask(task(merchantId, endpoint.id));
    const d = r.received[0];
    expect(d.signature.split(' ')).toHaveLength(2);
    const headers = { 'webhook-id': d.id, 'webhook-timestamp': d.timestamp, 'webhook-signature': d.signature };
    for (const secret of [fresh, endpoint.secret]) expect(new Webhook(secret).verify(d.body, headers)).toMatchObject({ id: d.id });
    // Only this signature is checked below (its timestamp is the fake clock's, past any tolerance).
    fixedClock(new Date(Date.now() + 24 * 3600 * 1000 + 60_000).toISOString());
    await deliverTask(task(merchantId, endpoint.id));
    expect(r.received[1].signature.split(' ')).toHaveLength(1);
  });

  it('an endpoint failing every attempt for 5 days is disabled; enabling it again starts the count afresh', async () => {
    const { merchantId, token, r, endpoint } = await setup({ respond: () => 500 });
    const clock = fixedClock('2026-03-01T00:00:00Z');
    await deliverTask(task(merchantId, endpoint.id));
    clock.advance(AUTO_DISABLE_AFTER_MS - 1000);
    await deliverTask(task(merchantId, endpoint.id));
    expect((await storedEndpoint(merchantId, endpoint.id))?.status).toBe('enabled');
    clock.advance(1000);
    await deliverTask(task(merchantId, endpoint.id));
    expect((await api.get(`/webhook-endpoints/${endpoint.id}`, token)).body.data.status).toBe('disabled');
    // Its list entry went with it: the fan-out queues nothing more for it.
    expect(await endpointsReceiving(merchantId, 'order.paid')).toEqual([]);
    expect(await deliverTask(task(merchantId, endpoint.id))).toEqual({ action: 'done', reason: 'endpoint disabled' });
    expect(r.received).toHaveLength(3);

    expect((await api.patch(`/webhook-endpoints/${endpoint.id}`, token, { status: 'enabled' })).status).toBe(200);
    expect((await endpointsReceiving(merchantId, 'order.paid')).map((e) => e.id)).toEqual([endpoint.id]);
    clock.advance(AUTO_DISABLE_AFTER_MS);
    await deliverTask(task(merchantId, endpoint.id));
    expect((await storedEndpoint(merchantId, endpoint.id))?.status).toBe('enabled');
  });

  it('one success resets the failing streak', async () => {
    let answer = 500;
    const { merchantId, r, endpoint } = await setup({ respond: () => answer });
    const clock = fixedClock('2026-03-01T00:00:00Z');
    await deliverTask(task(merchantId, endpoint.id));
    clock.advance(AUTO_DISABLE_AFTER_MS / 2);
    answer = 204;
    await deliverTask(task(merchantId, endpoint.id));
    answer = 500;
    clock.advance(AUTO_DISABLE_AFTER_MS / 2 + 1000);
    await deliverTask(task(merchantId, endpoint.id));
    expect((await storedEndpoint(merchantId, endpoint.id))?.status).toBe('enabled');
    expect(r.received).toHaveLength(3);
  });
});

describe("the log's next attempt and payload", () => {
  /** A fixed clock at the current whole second: exact times, and signatures the receiver accepts. */
  const frozenNow = () => fixedClock(new Date(Math.floor(Date.now() / 1000) * 1000).toISOString());
  const logOf = async (token: string, id: number) => {
    const r = await api.get(`/webhook-endpoints/${id}/deliveries?per_page=100`, token);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.data as { attempt: number; at: string; duration_ms: number; next_attempt_at: string | null; payload: string | null }[];
  };

  it('a failed attempt shows the queue’s next try (its end plus the schedule’s pause); the last one, dead-lettered, none; the payload is the body received', async () => {
    const { merchantId, token, r, endpoint } = await setup({ respond: () => 500 });
    frozenNow();
    const t = task(merchantId, endpoint.id);
    const randoms = [0, 0.5, 0.999999, 0.25, 0.75, 0, 0.5, 0.999999, 0.5];
    const outcomes: TaskOutcome[] = [];
    for (const random of randoms) outcomes.push(await deliverTask(t, { random: () => random }));
    const log = (await logOf(token, endpoint.id)).reverse();
    expect(log.map((e) => e.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    log.forEach((e, i) => {
      const o = outcomes[i];
      // The list adds what the caller may see of the body (this object has no id; the token reads orders).
      expect({ ...o.entry, resource_id: null, payload_withheld: false }, `attempt ${i + 1} answered as logged`).toEqual(e);
      if (i === MAX_ATTEMPTS - 1) {
        expect(o.action).toBe('dead-letter');
        expect(e.next_attempt_at).toBeNull();
        return;
      }
      // The pause the queue postpones the message by, which is the schedule's (± jitter)...
      const delay = (o as { delaySeconds: number }).delaySeconds;
      expect(o.action).toBe('retry');
      expect(delay).toBe(nextRetryDelaySeconds(i + 1, () => randoms[i]));
      expect(delay).toBeGreaterThanOrEqual(RETRY_DELAYS_SECONDS[i] * (1 - RETRY_JITTER));
      expect(delay).toBeLessThanOrEqual(RETRY_DELAYS_SECONDS[i] * (1 + RETRY_JITTER));
      // ...counted from the attempt's end, to the second.
      expect(e.next_attempt_at, `attempt ${i + 1}`).toBe(formatTimestamp(new Date(Date.parse(e.at) + e.duration_ms + delay * 1000)));
    });
    // Nominal pauses at random 0.5: 1 min after attempt 2, 10 h after attempt 7 (the clock stood still).
    expect(Date.parse(log[1].next_attempt_at!) - Date.parse(log[1].at)).toBe(Math.floor((60_000 + log[1].duration_ms) / 1000) * 1000);
    expect(Date.parse(log[6].next_attempt_at!) - Date.parse(log[6].at)).toBe(Math.floor((36_000_000 + log[6].duration_ms) / 1000) * 1000);
    expect(r.received).toHaveLength(MAX_ATTEMPTS);
    r.received.forEach((d, i) => {
      expect(d.event, `delivery ${i + 1} verified`).toEqual(t.event);
      expect(log[i]).toMatchObject({ payload: d.body, payload_truncated: false });
    });
  });

  it('after a success no next try; a manual retry shows the queue’s pending one while failing, none once delivered', async () => {
    const answers = [500, 500, 204, 500];
    // The first answer takes over a second: the pause is counted from the attempt's end, not its start.
    const { merchantId, token, r, endpoint } = await setup({
      respond: async (n) => {
        if (n === 1) await new Promise((done) => setTimeout(done, 1_200));
        return answers[n - 1];
      },
    });
    frozenNow();
    const t = task(merchantId, endpoint.id);
    const first = await deliverTask(t, { random: () => 0.5 });
    expect(first).toMatchObject({ action: 'retry', entry: { attempt: 1, status: 500 } });
    expect(first.entry!.duration_ms).toBeGreaterThanOrEqual(1_200);
    const pending = first.entry!.next_attempt_at;
    expect(pending).toBe(
      formatTimestamp(new Date(Date.parse(first.entry!.at) + first.entry!.duration_ms + RETRY_DELAYS_SECONDS[0] * 1000)),
    );
    const retry = () => api.post(`/webhook-endpoints/${endpoint.id}/deliveries/${t.event.id}/retry`, token);
    // A failed manual retry leaves the queue's retry where it was.
    expect((await retry()).body.data).toMatchObject({ attempt: 2, status: 500, next_attempt_at: pending });
    // The queue's retry succeeds: nothing more is due.
    expect(await deliverTask(t, { random: () => 0.5 })).toMatchObject({
      action: 'done',
      reason: 'delivered',
      entry: { attempt: 3, status: 204, next_attempt_at: null },
    });
    // A manual retry failing after that: still nothing due (the delivery is delivered).
    expect((await retry()).body.data).toMatchObject({ attempt: 4, status: 500, next_attempt_at: null });
    expect(await deliverTask(t)).toEqual({ action: 'done', reason: 'already delivered' });

    const log = (await logOf(token, endpoint.id)).reverse();
    expect(log.map((e) => [e.attempt, e.next_attempt_at])).toEqual([
      [1, pending],
      [2, pending],
      [3, null],
      [4, null],
    ]);
    expect(r.received).toHaveLength(4);
    r.received.forEach((d, i) => {
      expect(d.event).toEqual(t.event);
      expect(log[i].payload).toBe(d.body);
    });
  });

  it(`a body longer than ${LOGGED_PAYLOAD_MAX_BYTES} bytes is sent whole and logged as its first bytes, marked truncated`, async () => {
    const { merchantId, token, r, endpoint } = await setup();
    const t = task(merchantId, endpoint.id);
    // An order whose metadata is near its 16 KiB limit, in 2-byte characters.
    t.event.data.object = { order_no: 'A-1', metadata: { note: 'é'.repeat(8 * 1024 - 20) } };
    expect(await deliverTask(t)).toMatchObject({ action: 'done', reason: 'delivered' });
    expect(r.received).toHaveLength(1);
    expect(r.received[0].event).toEqual(t.event);
    const [entry] = await logOf(token, endpoint.id);
    const sent = r.received[0].body;
    expect(Buffer.byteLength(sent)).toBeGreaterThan(16 * 1024);
    expect(entry).toMatchObject({ payload_truncated: true, next_attempt_at: null });
    expect(sent.startsWith(entry.payload!)).toBe(true);
    expect(Buffer.byteLength(entry.payload!)).toBeLessThanOrEqual(LOGGED_PAYLOAD_MAX_BYTES);
    expect(Buffer.byteLength(entry.payload!)).toBeGreaterThan(LOGGED_PAYLOAD_MAX_BYTES - 4);
    // A manual retry still sends the whole body (kept with the delivery's state).
    expect((await api.post(`/webhook-endpoints/${endpoint.id}/deliveries/${t.event.id}/retry`, token)).status).toBe(200);
    expect(r.received[1].body).toBe(sent);
  });
});
