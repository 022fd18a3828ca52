import { eventually } from '../support/eventually.ts';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { keys } from '#lib/db/keys';
import { WriteSet } from '#lib/db/writes';
import { NotFoundError } from '#lib/errors';
import { newWebhookSecret } from '#lib/webhooks/secrets';
import { addDeliveryLog, listDeliveries, type DeliveryLogEntry } from '#lib/webhooks/deliveries';
import { attemptDelivery, COULD_NOT_CONNECT, signatureHeaders, USER_AGENT, webhookBody } from '#lib/webhooks/deliver';

/**
 * One delivery attempt (docs/webhook-endpoints.md) against a real receiver on 127.0.0.1: Standard Webhooks
 * signatures verified by the `standardwebhooks` library, rotation, failures (5xx, redirects,
 * timeouts, huge answers, refused addresses), and the delivery log in DynamoDB Local.
 */

type Received = { method: string; url: string; headers: IncomingHttpHeaders; body: string };
let received: Received[] = [];
let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(204).end();
let server: Server;
let hookUrl = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  received = [];
  handler = (_req, res) => res.writeHead(204).end();
});

const EVENT = {
  id: 'evt_0123456789abcdef01234567',
  type: 'order.paid',
  created_at: '2026-03-01T10:00:00Z',
  merchant_id: 'mer_not_sent',
  data: { object: { order_no: 'A-1', amount: '12.50', metadata: { note: 'héllo ✓', nested: [1, null] } } },
};
const body = webhookBody(EVENT);

const deliver = (over: Partial<Parameters<typeof attemptDelivery>[0]> = {}) =>
  attemptDelivery({ url: hookUrl, eventId: EVENT.id, body, secrets: [secretA], allowLocal: true, ...over });

/** The headers the library reads, as the receiver got them. */
const wh = (h: IncomingHttpHeaders) => ({
  'webhook-id': String(h['webhook-id']),
  'webhook-timestamp': String(h['webhook-timestamp']),
  'webhook-signature': String(h['webhook-signature']),
});

let secretA: string;
let secretB: string;
beforeAll(() => {
  secretA = newWebhookSecret();
  secretB = newWebhookSecret();
});

describe('webhookBody', () => {
  it('is exactly {id, type, created_at, data: {object}} (no merchant id), in that order', () => {
    expect(body).toBe(
      JSON.stringify({ id: EVENT.id, type: EVENT.type, created_at: EVENT.created_at, data: { object: EVENT.data.object } }),
    );
    expect(Object.keys(JSON.parse(body))).toEqual(['id', 'type', 'created_at', 'data']);
  });
});

describe('attemptDelivery: signing', () => {
  it('POSTs the body with JSON content type, user agent and headers the standardwebhooks library verifies', async () => {
    const r = await deliver();
    expect(r).toEqual({ ok: true, status: 204, durationMs: expect.any(Number) });
    expect(received).toHaveLength(1);
    const [req] = received;
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/hook');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toBe(USER_AGENT);
    expect(req.body).toBe(body);
    expect(req.headers['webhook-id']).toBe(EVENT.id);
    expect(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
    expect(new Webhook(secretA).verify(req.body, wh(req.headers))).toEqual(JSON.parse(body));
  });

  it('the library rejects a tampered body, a wrong secret and a stale timestamp', async () => {
    await deliver();
    const [req] = received;
    expect(() => new Webhook(secretA).verify(req.body.replace('12.50', '99.99'), wh(req.headers))).toThrow(/signature/i);
    expect(() => new Webhook(secretB).verify(req.body, wh(req.headers))).toThrow(/signature/i);

    received = [];
    await deliver({ now: new Date(Date.now() - 10 * 60_000) });
    const [stale] = received;
    expect(() => new Webhook(secretA).verify(stale.body, wh(stale.headers))).toThrow(/too old/i);
  });

  it('with two secrets (rotation) carries two signatures, current first; either secret verifies', async () => {
    await deliver({ secrets: [secretB, secretA] });
    const [req] = received;
    const sigs = String(req.headers['webhook-signature']).split(' ');
    expect(sigs).toHaveLength(2);
    expect(sigs.every((s) => s.startsWith('v1,'))).toBe(true);
    const at = new Date(Number(req.headers['webhook-timestamp']) * 1000);
    expect(sigs[0]).toBe(new Webhook(secretB).sign(EVENT.id, at, body));
    expect(sigs[1]).toBe(new Webhook(secretA).sign(EVENT.id, at, body));
    expect(new Webhook(secretA).verify(req.body, wh(req.headers))).toEqual(JSON.parse(body));
    expect(new Webhook(secretB).verify(req.body, wh(req.headers))).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(req.body, wh(req.headers))).toThrow();
  });

  it('signatureHeaders: Unix seconds of the attempt and the same id every time', () => {
    const h = signatureHeaders(EVENT.id, body, [secretA], new Date('2026-03-01T10:00:05.900Z'));
    expect(h['webhook-timestamp']).toBe(String(Date.parse('2026-03-01T10:00:05Z') / 1000));
    expect(h['webhook-id']).toBe(EVENT.id);
    expect(() => signatureHeaders(EVENT.id, body, [], new Date())).toThrow();
  });
});

describe('attemptDelivery: failures', () => {
  it('a 500 is a failure with its status', async () => {
    handler = (_req, res) => res.writeHead(500).end('boom');
    expect(await deliver()).toEqual({ ok: false, status: 500, durationMs: expect.any(Number) });
  });

  it('a 302 is a failure and the redirect is not followed', async () => {
    handler = (req, res) => (req.url === '/hook' ? res.writeHead(302, { Location: '/elsewhere' }).end() : res.writeHead(200).end());
    const r = await deliver();
    expect(r).toMatchObject({ ok: false, status: 302 });
    expect(received.map((x) => x.url)).toEqual(['/hook']);
  });

  it('a receiver slower than the timeout could not be reached', async () => {
    handler = (_req, res) => setTimeout(() => res.writeHead(200).end(), 1500).unref();
    const r = await deliver({ timeoutMs: 200 });
    expect(r).toMatchObject({ ok: false, error: COULD_NOT_CONNECT });
    expect(r.status).toBeUndefined();
    expect(r.durationMs).toBeGreaterThanOrEqual(190);
    expect(r.durationMs).toBeLessThan(1400);
  });

  it('a huge (never-ending) answer is read only up to the cap, then the socket is dropped', async () => {
    let written = 0;
    let closed = false;
    handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.on('close', () => (closed = true));
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = () => {
        while (!closed && written < 50 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      pump();
    };
    const r = await deliver({ maxResponseBytes: 64 * 1024, timeoutMs: 5000 });
    expect(r).toMatchObject({ ok: true, status: 200 });
    expect(r.durationMs).toBeLessThan(4000);
    // The client has dropped the socket; the server notices on its own schedule.
    await eventually(() => closed, 5_000, 'the receiver to see the connection close', 10);
    expect(written).toBeLessThan(50 * 1024 * 1024);
  });

  it('a host resolving to a private address is refused without any connection', async () => {
    const resolved: string[] = [];
    const r = await attemptDelivery({
      url: 'https://hooks.example.com/receive',
      eventId: EVENT.id,
      body,
      secrets: [secretA],
      allowLocal: false,
      resolver: async (host) => {
        resolved.push(host);
        return ['10.0.0.5'];
      },
    });
    expect(r).toMatchObject({ ok: false, error: 'refused url: private address' });
    expect(r.status).toBeUndefined();
    expect(resolved).toEqual(['hooks.example.com']);
    expect(received).toEqual([]);
  });

  it('DNS rebinding: a host public at the check but private at connection time is refused by the lookup', async () => {
    const answers = [['93.184.215.14'], ['10.0.0.5']];
    const r = await attemptDelivery({
      url: 'https://rebind.example.com/receive',
      eventId: EVENT.id,
      body,
      secrets: [secretA],
      allowLocal: false,
      resolver: async () => answers.shift() ?? ['10.0.0.5'],
    });
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/^refused url: rebind\.example\.com: refused private address/);
    expect(answers).toEqual([]); // checked once before, once at connection time
  });

  it('a host name connects through the guarded lookup (localhost in the local stack)', async () => {
    const r = await deliver({ url: hookUrl.replace('127.0.0.1', 'localhost') });
    expect(r).toMatchObject({ ok: true, status: 204 });
    expect(received).toHaveLength(1);
  });

  it('outside the local stack, http to 127.0.0.1 is refused before any request', async () => {
    const r = await deliver({ allowLocal: false });
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/^refused url: /);
    expect(received).toEqual([]);
  });

  it('a closed port, a reset, a black hole and a name that does not resolve all read "could not connect"', async () => {
    const closedServer = createServer();
    await new Promise<void>((resolve) => closedServer.listen(0, '127.0.0.1', resolve));
    const closedPort = (closedServer.address() as AddressInfo).port;
    await new Promise((resolve) => closedServer.close(resolve));
    // A black hole accepts the connection and never answers; a resetter drops it at once.
    const sockets: Socket[] = [];
    const blackHole = createTcpServer((socket) => void sockets.push(socket));
    const resetter = createTcpServer((socket) => socket.resetAndDestroy());
    for (const tcp of [blackHole, resetter]) await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    const url = (tcp: ReturnType<typeof createTcpServer>) => `http://127.0.0.1:${(tcp.address() as AddressInfo).port}/hook`;
    try {
      const outcomes = {
        refused: await deliver({ url: `http://127.0.0.1:${closedPort}/hook`, timeoutMs: 500 }),
        reset: await deliver({ url: url(resetter), timeoutMs: 500 }),
        silent: await deliver({ url: url(blackHole), timeoutMs: 500 }),
        unresolvable: await deliver({
          url: 'https://nowhere.example.com/hook',
          allowLocal: false,
          timeoutMs: 500,
          resolver: async (host) => {
            throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
          },
        }),
      };
      for (const [cause, r] of Object.entries(outcomes)) {
        expect({ cause, ...r }).toEqual({ cause, ok: false, error: COULD_NOT_CONNECT, durationMs: expect.any(Number) });
      }
      expect(sockets.length).toBe(1); // the black hole was reached, and said nothing
      expect(received).toEqual([]);
    } finally {
      for (const s of sockets) s.destroy();
      for (const tcp of [blackHole, resetter]) await new Promise((resolve) => tcp.close(resolve));
    }
  });

  it('outside the local stack only port 443 is called: a URL with another port is refused before any lookup', async () => {
    const resolved: string[] = [];
    const resolver = async (host: string) => {
      resolved.push(host);
      return ['93.184.215.14'];
    };
    for (const url of ['https://hooks.example.com:8443/hook', 'https://hooks.example.com:22/', 'https://93.184.215.14:80/']) {
      const r = await deliver({ url, allowLocal: false, resolver });
      expect(r).toMatchObject({ ok: false, error: 'refused url: The url field must use the https port, 443 (no other port).' });
    }
    expect(resolved).toEqual([]);
  });
});

describe('delivery log', () => {
  it('three attempts written with WriteSet come back newest first, paginated', async () => {
    const merchantId = `mer_${randomBytes(6).toString('hex')}`;
    const entries: DeliveryLogEntry[] = [
      {
        event_id: EVENT.id,
        event_type: 'order.paid',
        attempt: 1,
        status: null,
        error: COULD_NOT_CONNECT,
        duration_ms: 10_000,
        at: '2026-03-01T10:00:01.000Z',
        next_attempt_at: '2026-03-01T10:00:21Z',
        payload: body,
        payload_truncated: false,
      },
      {
        event_id: EVENT.id,
        event_type: 'order.paid',
        attempt: 2,
        status: 500,
        error: null,
        duration_ms: 42,
        at: '2026-03-01T10:00:12.000Z',
        next_attempt_at: '2026-03-01T10:01:12Z',
        payload: body,
        payload_truncated: false,
      },
      {
        event_id: EVENT.id,
        event_type: 'order.paid',
        attempt: 3,
        status: 204,
        error: null,
        duration_ms: 7,
        at: '2026-03-01T10:01:15.000Z',
        next_attempt_at: null,
        payload: body,
        payload_truncated: false,
      },
    ];
    // The log head, as endpoint 1's create transaction writes it: the endpoint exists.
    await new WriteSet().put('log-head', keys.webhookDeliveryLogHead(merchantId, 1)).commit();
    for (const e of entries) {
      const ws = new WriteSet();
      addDeliveryLog(ws, merchantId, 1, e);
      await ws.commit();
    }
    // Another endpoint's log is separate; without a head or an endpoint item it is not found.
    const other = new WriteSet();
    addDeliveryLog(other, merchantId, 2, { ...entries[0], at: '2026-03-01T11:00:00.000Z' });
    await other.commit();

    const now = Date.parse('2026-03-02T00:00:00Z') / 1000;
    const page = (n: number, perPage: number, cursor?: string) => ({ page: n, per_page: perPage, ...(cursor ? { cursor } : {}) });
    const shown = (r: Awaited<ReturnType<typeof listDeliveries>>) => ({ data: r.data, total: r.meta.total });
    await expect(listDeliveries(merchantId, 2, page(1, 20), now)).rejects.toBeInstanceOf(NotFoundError);
    const all = await listDeliveries(merchantId, 1, page(1, 20), now);
    expect(all.meta).toMatchObject({ total: 3, next_cursor: null });
    expect(all.data).toEqual([entries[2], entries[1], entries[0]]);

    const first = await listDeliveries(merchantId, 1, page(1, 2), now);
    expect(shown(first)).toEqual({ data: [entries[2], entries[1]], total: 3 });
    expect(shown(await listDeliveries(merchantId, 1, page(2, 2), now))).toEqual({ data: [entries[0]], total: 3 });
    expect(shown(await listDeliveries(merchantId, 1, page(3, 2), now))).toEqual({ data: [], total: 3 });
    expect(shown(await listDeliveries(merchantId, 1, page(2, 1), now))).toEqual({ data: [entries[1]], total: 3 });
    // The cursor of page 1 reads page 2, at another instant too (the TTL filter's `now` is not part of the list).
    const next = await listDeliveries(merchantId, 1, page(1, 2, first.meta.next_cursor!), now + 60);
    expect(next.data).toEqual([entries[0]]);
    expect(next.meta).toMatchObject({ current_page: 2, from: 3, to: 3, next_cursor: null });

    // The list covers today and the 29 UTC days before: a day's attempts leave it together, before
    // their 30-day TTL, even when DynamoDB has not removed them yet.
    const lastDay = Date.parse('2026-03-30T23:59:59Z') / 1000;
    expect(shown(await listDeliveries(merchantId, 1, page(1, 20), lastDay))).toEqual({
      data: [entries[2], entries[1], entries[0]],
      total: 3,
    });
    const dayAfter = Date.parse('2026-03-31T00:00:00Z') / 1000;
    expect(shown(await listDeliveries(merchantId, 1, page(1, 20), dayAfter))).toEqual({ data: [], total: 0 });
  });

  it('an attempt is logged once (the same key twice is refused)', async () => {
    const merchantId = `mer_${randomBytes(6).toString('hex')}`;
    const e: DeliveryLogEntry = {
      event_id: EVENT.id,
      event_type: 'order.paid',
      attempt: 1,
      status: 200,
      error: null,
      duration_ms: 3,
      at: '2026-03-01T10:00:00.000Z',
      next_attempt_at: null,
      payload: body,
      payload_truncated: false,
    };
    const ws = new WriteSet();
    addDeliveryLog(ws, merchantId, 1, e);
    await ws.commit();
    const again = new WriteSet();
    addDeliveryLog(again, merchantId, 1, e);
    await expect(again.commit()).rejects.toThrow(/webhook-delivery/);
  });
});
