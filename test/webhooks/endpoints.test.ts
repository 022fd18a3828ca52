import { INVALID_DATA } from '#lib/errors';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db, requestCounter, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { decryptSecret } from '#lib/webhooks/secrets';
import { LIMIT_REACHED, MAX_WEBHOOK_ENDPOINTS } from '#lib/webhooks/rules';
import { endpointsReceiving } from '#lib/webhooks/store';
import { resetResolver, setResolver } from '#lib/webhooks/url-safety';
import { newMerchant, useApi } from '../support/api.ts';
import { captureLogs, failDynamoWhen } from '../pipeline/support.ts';

/**
 * Webhook endpoints (docs/webhook-endpoints.md): create, read, list, update, rotate and delete through the API,
 * with exact response shapes; the secret shown only at creation and rotation, stored encrypted,
 * valid for Standard Webhooks signing; rotation keeping the previous secret for 24 hours.
 */

const api = useApi();
afterEach(() => resetClock());

const HOSTS: Record<string, string[]> = {
  'hooks.example.com': ['93.184.215.14'],
  'other.example.com': ['2606:2800:21f:cb07:6820:80da:af6b:8b2c', '93.184.215.15'],
  'internal.example.com': ['10.0.0.5'],
};
beforeAll(() =>
  setResolver(async (host) => {
    if (!HOSTS[host]) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return HOSTS[host];
  }),
);
afterAll(() => resetResolver());

const NOW = '2026-03-01T10:00:00Z';
const FIELDS = ['id', 'url', 'events', 'status', 'description', 'created_at', 'updated_at'];
const SECRET_FORMAT = /^whsec_[A-Za-z0-9+/]{43}=$/;
const NOT_FOUND = { message: 'Resource not found' };

type Merchant = { merchantId: string; token: string };

const create = async (token: string, body: Record<string, unknown> = {}) => {
  const r = await api.post('/webhook-endpoints', token, { url: 'https://hooks.example.com/receive', events: ['order.paid'], ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data as { id: number; secret: string } & Record<string, unknown>;
};

const storedItem = async (merchantId: string, id: number) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: keys.webhookEndpoint(merchantId, id), ConsistentRead: true }))).Item;

/** Signs a payload with one secret and verifies it with the standardwebhooks library. */
const signsAndVerifies = (secret: string) => {
  const payload = JSON.stringify({ id: 'evt_test', type: 'order.paid', created_at: NOW, data: { object: { order_no: 'A-1' } } });
  const at = new Date();
  const signature = new Webhook(secret).sign('evt_test', at, payload);
  const headers = {
    'webhook-id': 'evt_test',
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signature,
  };
  return { payload, headers, verified: new Webhook(secret).verify(payload, headers) };
};

describe('POST /webhook-endpoints', () => {
  let m: Merchant;
  beforeAll(async () => {
    m = await newMerchant();
  });

  it('201 with exactly id, url, events, status enabled, description, times and the secret', async () => {
    fixedClock(NOW);
    const r = await api.post('/webhook-endpoints', m.token, {
      url: 'https://hooks.example.com/receive?source=ras',
      events: ['order.paid', 'subscription.cancelled'],
      description: 'Production receiver',
      ignored_field: true,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.body).toEqual({
      data: {
        id: expect.any(Number),
        url: 'https://hooks.example.com/receive?source=ras',
        events: ['order.paid', 'subscription.cancelled'],
        status: 'enabled',
        description: 'Production receiver',
        created_at: NOW,
        updated_at: NOW,
        secret: expect.stringMatching(SECRET_FORMAT),
      },
    });
    expect(Object.keys(r.body.data)).toEqual([...FIELDS, 'secret']);
    expect(Buffer.from(r.body.data.secret.slice(6), 'base64')).toHaveLength(32);
  });

  it('ids come from the merchant\'s own sequence, from 1; description defaults to null ("" too); events deduplicated; ["*"] kept', async () => {
    const fresh = await newMerchant();
    const a = await create(fresh.token);
    const b = await create(fresh.token, { events: ['*'], description: '' });
    const c = await create(fresh.token, { events: ['order.paid', 'order.created', 'order.paid', 'order.created'], description: null });
    expect([a.id, b.id, c.id]).toEqual([1, 2, 3]);
    expect(a.description).toBeNull();
    expect(b).toMatchObject({ events: ['*'], description: null });
    expect(c).toMatchObject({ events: ['order.paid', 'order.created'], description: null });
    expect(new Set([a.secret, b.secret, c.secret]).size).toBe(3);
  });

  it('every event type is accepted', async () => {
    const all = [
      'order.created',
      'order.paid',
      'order.failed',
      'order.refunded',
      'order.cancelled',
      'subscription.created',
      'subscription.updated',
      'subscription.paused',
      'subscription.reactivated',
      'subscription.cancelled',
    ];
    expect((await create(m.token, { events: all })).events).toEqual(all);
  });

  it('the URL is stored in its normalised form (the form that was checked)', async () => {
    expect((await create(m.token, { url: 'HTTPS://Hooks.Example.COM' })).url).toBe('https://hooks.example.com/');
    expect((await create(m.token, { url: 'https://hooks.example.com:443/a/../b' })).url).toBe('https://hooks.example.com/b');
    // Any port but 443 is refused: the API calls no other port of a public host.
    const otherPort = await api.post('/webhook-endpoints', m.token, { url: 'https://other.example.com:8443/x', events: ['*'] });
    expect(otherPort.status).toBe(422);
    expect(otherPort.body.errors).toEqual({ url: ['The url field must use the https port, 443 (no other port).'] });
  });

  it('the local stack accepts http to localhost, 127.0.0.1 and [::1]', async () => {
    for (const url of ['http://localhost:4000/hooks', 'http://127.0.0.1:4000/hooks', 'http://[::1]:4000/hooks']) {
      expect((await create(m.token, { url })).url, url).toBe(url);
    }
  });

  it('the secret is a valid Standard Webhooks secret, stored only encrypted (decryptable for this merchant only)', async () => {
    const created = await create(m.token);
    const { verified, payload } = signsAndVerifies(created.secret);
    expect(verified).toEqual(JSON.parse(payload));

    const item = await storedItem(m.merchantId, created.id);
    expect(item).toBeDefined();
    const text = JSON.stringify(item);
    expect(text).not.toContain(created.secret);
    expect(text).not.toContain(created.secret.slice(6));
    expect(text).not.toContain(created.secret.slice(6, 26));
    expect(item).not.toHaveProperty('secret');
    expect(item).not.toHaveProperty('previous_secret_encrypted');
    expect(await decryptSecret(m.merchantId, item!.secret_encrypted)).toBe(created.secret);
    await expect(decryptSecret('mer_someone_else', item!.secret_encrypted)).rejects.toThrow();
    expect(item).toMatchObject({
      pk: `M#${m.merchantId}#WEBHOOK#${created.id}`,
      sk: 'ENDPOINT',
      gsi1pk: `M#${m.merchantId}#WEBHOOKS`,
      gsi1sk: `${created.created_at}#${String(created.id).padStart(15, '0')}`,
      events: created.events,
      status: 'enabled',
      version: 1,
    });
  });
});

describe('GET /webhook-endpoints/{id} and the list', () => {
  it('GET returns the endpoint as created, without the secret', async () => {
    const m = await newMerchant();
    const created = await create(m.token, { description: 'x' });
    const { secret, ...rest } = created;
    const r = await api.get(`/webhook-endpoints/${created.id}`, m.token);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ data: rest });
    expect(Object.keys(r.body.data)).toEqual(FIELDS);
    expect(JSON.stringify(r.body)).not.toContain(secret.slice(6));
  });

  it('lists newest first (created_at desc, then id desc) with docs/api-conventions.md meta, the same shape as GET, no secrets', async () => {
    const m = await newMerchant();
    const clock = fixedClock('2026-02-01T00:00:00Z');
    const made: Record<string, unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      // Two endpoints share each second: the id breaks the tie.
      if (i % 2 === 0) clock.advance(1000);
      const { secret: _s, ...rest } = await create(m.token, { description: `n${i}` });
      made.push(rest);
    }
    const newestFirst = [...made]
      .reverse()
      .sort((a, b) => String(b.created_at).localeCompare(String(a.created_at)) || Number(b.id) - Number(a.id));
    expect(newestFirst.map((e) => e.id)).toEqual([5, 4, 3, 2, 1]);

    const all = await api.get('/webhook-endpoints', m.token);
    expect(all.status).toBe(200);
    expect(all.body).toEqual({
      data: newestFirst,
      meta: { current_page: 1, from: 1, last_page: 1, per_page: 20, to: 5, total: 5, next_cursor: null },
    });
    for (const e of all.body.data) expect(Object.keys(e)).toEqual(FIELDS);

    const p2 = await api.get('/webhook-endpoints?per_page=2&page=2', m.token);
    expect(p2.body).toEqual({
      data: newestFirst.slice(2, 4),
      meta: { current_page: 2, from: 3, last_page: 3, per_page: 2, to: 4, total: 5, next_cursor: expect.any(String) },
    });
    const p3 = await api.get('/webhook-endpoints?per_page=2&page=3', m.token);
    expect(p3.body.data).toEqual(newestFirst.slice(4));
    // The cursor of page 2 reads page 3.
    const byCursor = await api.get(`/webhook-endpoints?per_page=2&cursor=${encodeURIComponent(p2.body.meta.next_cursor)}`, m.token);
    expect(byCursor.body).toEqual(p3.body);
    const past = await api.get('/webhook-endpoints?per_page=2&page=9', m.token);
    expect(past.body).toEqual({
      data: [],
      meta: { current_page: 9, from: null, last_page: 3, per_page: 2, to: null, total: 5, next_cursor: null },
    });
  });

  it('an empty list', async () => {
    const m = await newMerchant();
    expect((await api.get('/webhook-endpoints', m.token)).body).toEqual({
      data: [],
      meta: { current_page: 1, from: null, last_page: 1, per_page: 20, to: null, total: 0, next_cursor: null },
    });
  });

  it('list query validation: page and per_page as docs/api-conventions.md', async () => {
    const m = await newMerchant();
    for (const [q, errors] of [
      ['per_page=0', { per_page: ['The per page field must be between 1 and 100.'] }],
      ['per_page=101', { per_page: ['The per page field must be between 1 and 100.'] }],
      ['page=0', { page: ['The page field must be at least 1.'] }],
      ['page=x', { page: ['The page field must be an integer.'] }],
    ] as const) {
      const r = await api.get(`/webhook-endpoints?${q}`, m.token);
      expect(r.status, q).toBe(422);
      expect(r.body).toEqual({ message: INVALID_DATA, errors });
    }
  });
});

describe('PATCH /webhook-endpoints/{id}', () => {
  let m: Merchant;
  beforeAll(async () => {
    m = await newMerchant();
  });

  it('changes url, events, description and status, each alone and together; updated_at moves, created_at and the secret stay', async () => {
    fixedClock(NOW);
    const created = await create(m.token, { description: 'first' });
    const before = await storedItem(m.merchantId, created.id);
    const later = '2026-03-01T11:00:00Z';
    fixedClock(later);
    const steps: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ url: 'https://other.example.com/v2' }, { url: 'https://other.example.com/v2' }],
      [{ events: ['*'] }, { events: ['*'] }],
      [{ events: ['subscription.paused', 'subscription.paused', 'order.failed'] }, { events: ['subscription.paused', 'order.failed'] }],
      [{ description: 'renamed' }, { description: 'renamed' }],
      [{ description: null }, { description: null }],
      [{ status: 'disabled' }, { status: 'disabled' }],
      [{ status: 'enabled' }, { status: 'enabled' }],
      [
        { url: 'https://hooks.example.com/all', events: ['order.paid'], description: 'all at once', status: 'disabled' },
        { url: 'https://hooks.example.com/all', events: ['order.paid'], description: 'all at once', status: 'disabled' },
      ],
    ];
    let expected: Record<string, unknown> = { ...created };
    delete expected.secret;
    for (const [body, change] of steps) {
      const r = await api.patch(`/webhook-endpoints/${created.id}`, m.token, body);
      expect(r.status, JSON.stringify(body)).toBe(200);
      expected = { ...expected, ...change, updated_at: later };
      expect(r.body, JSON.stringify(body)).toEqual({ data: expected });
      expect(Object.keys(r.body.data)).toEqual(FIELDS);
      expect((await api.get(`/webhook-endpoints/${created.id}`, m.token)).body.data).toEqual(expected);
    }
    const after = await storedItem(m.merchantId, created.id);
    expect(after!.secret_encrypted).toBe(before!.secret_encrypted);
    expect(after!.created_at).toBe(NOW);
    expect(after!.gsi1sk).toBe(before!.gsi1sk);
    expect(after!.version).toBe(1 + steps.length);
  });

  it('a PATCH that changes nothing (empty body, or the same values) answers 200 and writes nothing', async () => {
    fixedClock(NOW);
    const created = await create(m.token, { events: ['order.paid', 'order.created'], description: 'same' });
    const { secret: _s, ...shown } = created;
    fixedClock('2026-03-02T00:00:00Z');
    for (const body of [
      {},
      { description: 'same' },
      { events: ['order.paid', 'order.created'] },
      { status: 'enabled', url: created.url },
      { unknown: 1 },
    ]) {
      requestCounter.reset();
      const r = await api.patch(`/webhook-endpoints/${created.id}`, m.token, body);
      expect(r.status).toBe(200);
      expect(r.body, JSON.stringify(body)).toEqual({ data: shown });
      expect(requestCounter.byCommand.TransactWriteItemsCommand ?? 0, JSON.stringify(body)).toBe(0);
    }
    expect((await storedItem(m.merchantId, created.id))!.version).toBe(1);
  });

  it('a new url is checked again: one resolving to a private address is a 422 on url and nothing changes', async () => {
    const created = await create(m.token);
    const before = await storedItem(m.merchantId, created.id);
    const r = await api.patch(`/webhook-endpoints/${created.id}`, m.token, {
      url: 'https://internal.example.com/x',
      description: 'not applied',
    });
    expect(r.status).toBe(422);
    expect(r.body).toEqual({
      message: INVALID_DATA,
      errors: { url: ['The url field must not point to a loopback, private, link-local, multicast or otherwise non-public address.'] },
    });
    expect(await storedItem(m.merchantId, created.id)).toEqual(before);
  });

  it('concurrent PATCHes to one endpoint all apply (version-guarded, retried); the last writer of each field wins', async () => {
    const created = await create(m.token);
    const bodies = [{ description: 'a' }, { status: 'disabled' }, { events: ['*'] }, { url: 'https://other.example.com/c' }];
    const results = await Promise.all(bodies.map((b) => api.patch(`/webhook-endpoints/${created.id}`, m.token, b)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const now = (await api.get(`/webhook-endpoints/${created.id}`, m.token)).body.data;
    expect(now).toMatchObject({ description: 'a', status: 'disabled', events: ['*'], url: 'https://other.example.com/c' });
    expect((await storedItem(m.merchantId, created.id))!.version).toBe(5);
  });
});

describe('POST /webhook-endpoints/{id}/rotate-secret', () => {
  it('200 with the endpoint and a new secret; the previous one stays, encrypted, for 24 hours; GET shows neither', async () => {
    const m = await newMerchant();
    fixedClock(NOW);
    const created = await create(m.token, { description: 'rot' });
    const at = '2026-03-01T12:30:00Z';
    fixedClock(at);
    const r = await api.post(`/webhook-endpoints/${created.id}/rotate-secret`, m.token);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const { secret: oldSecret, ...shown } = created;
    expect(r.body).toEqual({ data: { ...shown, updated_at: at, secret: expect.stringMatching(SECRET_FORMAT) } });
    expect(Object.keys(r.body.data)).toEqual([...FIELDS, 'secret']);
    const newSecret = r.body.data.secret as string;
    expect(newSecret).not.toBe(oldSecret);

    const get = await api.get(`/webhook-endpoints/${created.id}`, m.token);
    expect(get.body).toEqual({ data: { ...shown, updated_at: at } });
    const list = await api.get('/webhook-endpoints', m.token);
    expect(JSON.stringify(list.body)).not.toContain(newSecret.slice(6));

    const item = await storedItem(m.merchantId, created.id);
    const text = JSON.stringify(item);
    for (const s of [oldSecret, newSecret]) expect(text).not.toContain(s.slice(6));
    expect(await decryptSecret(m.merchantId, item!.secret_encrypted)).toBe(newSecret);
    expect(await decryptSecret(m.merchantId, item!.previous_secret_encrypted)).toBe(oldSecret);
    expect(item).toMatchObject({ secret_created_at: at, previous_secret_expires_at: '2026-03-02T12:30:00Z', version: 2 });
    // Both sign valid Standard Webhooks signatures (a delivery carries both for 24 hours).
    expect(signsAndVerifies(newSecret).verified).toBeTruthy();
    expect(signsAndVerifies(oldSecret).verified).toBeTruthy();
  });

  it('a second rotation keeps only the secret it replaced; an expired previous secret is dropped at the next write', async () => {
    const m = await newMerchant();
    fixedClock(NOW);
    const created = await create(m.token);
    const first = (await api.post(`/webhook-endpoints/${created.id}/rotate-secret`, m.token)).body.data.secret;
    fixedClock('2026-03-01T10:05:00Z');
    const second = (await api.post(`/webhook-endpoints/${created.id}/rotate-secret`, m.token)).body.data.secret;
    let item = await storedItem(m.merchantId, created.id);
    expect(await decryptSecret(m.merchantId, item!.secret_encrypted)).toBe(second);
    expect(await decryptSecret(m.merchantId, item!.previous_secret_encrypted)).toBe(first);
    expect(item!.previous_secret_expires_at).toBe('2026-03-02T10:05:00Z');
    expect(JSON.stringify(item)).not.toContain(created.secret.slice(6));

    // Still within 24 hours: a PATCH keeps it.
    fixedClock('2026-03-02T10:04:59Z');
    await api.patch(`/webhook-endpoints/${created.id}`, m.token, { description: 'kept' });
    expect((await storedItem(m.merchantId, created.id))!.previous_secret_encrypted).toBeDefined();
    // Past them: the next write drops it.
    fixedClock('2026-03-02T10:05:00Z');
    await api.patch(`/webhook-endpoints/${created.id}`, m.token, { description: 'dropped' });
    item = await storedItem(m.merchantId, created.id);
    expect(item).not.toHaveProperty('previous_secret_encrypted');
    expect(item).not.toHaveProperty('previous_secret_expires_at');
    expect(await decryptSecret(m.merchantId, item!.secret_encrypted)).toBe(second);
  });

  it('a disabled endpoint can be rotated (and stays disabled); a body is ignored', async () => {
    const m = await newMerchant();
    const created = await create(m.token);
    await api.patch(`/webhook-endpoints/${created.id}`, m.token, { status: 'disabled' });
    const r = await api.post(`/webhook-endpoints/${created.id}/rotate-secret`, m.token, { secret: 'whsec_chosen' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'disabled', secret: expect.stringMatching(SECRET_FORMAT) });
    expect(r.body.data.secret).not.toBe('whsec_chosen');
  });
});

describe('DELETE /webhook-endpoints/{id}', () => {
  it('204 with no body; the item is gone (with its encrypted secrets), every route answers 404 for it, the list and total drop it', async () => {
    const m = await newMerchant();
    const keep = await create(m.token);
    const gone = await create(m.token);
    await api.post(`/webhook-endpoints/${gone.id}/rotate-secret`, m.token);
    const r = await api.del(`/webhook-endpoints/${gone.id}`, m.token);
    expect(r.status).toBe(204);
    expect(r.body).toBeUndefined();
    expect(await storedItem(m.merchantId, gone.id)).toBeUndefined();
    for (const [method, path] of [
      ['GET', `/webhook-endpoints/${gone.id}`],
      ['PATCH', `/webhook-endpoints/${gone.id}`],
      ['DELETE', `/webhook-endpoints/${gone.id}`],
      ['POST', `/webhook-endpoints/${gone.id}/rotate-secret`],
    ]) {
      const res = await api.request(method, path, { token: m.token, body: method === 'PATCH' ? { description: 'x' } : undefined });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
    const list = await api.get('/webhook-endpoints', m.token);
    expect(list.body.data.map((e: any) => e.id)).toEqual([keep.id]);
    expect(list.body.meta.total).toBe(1);
    // Ids are never reused.
    expect((await create(m.token)).id).toBe(gone.id + 1);
  });
});

describe(`at most ${MAX_WEBHOOK_ENDPOINTS} endpoints per merchant`, () => {
  it('the next create is a 409 with nothing stored; after a delete there is room again', async () => {
    const m = await newMerchant();
    const made = [];
    for (let i = 0; i < MAX_WEBHOOK_ENDPOINTS; i++) made.push(await create(m.token));
    const r = await api.post('/webhook-endpoints', m.token, { url: 'https://hooks.example.com/one-too-many', events: ['*'] });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({ message: LIMIT_REACHED });
    const list = await api.get('/webhook-endpoints?per_page=100', m.token);
    expect(list.body.meta.total).toBe(MAX_WEBHOOK_ENDPOINTS);
    expect(list.body.data).toHaveLength(MAX_WEBHOOK_ENDPOINTS);
    expect(list.body.data.some((e: any) => e.url.endsWith('one-too-many'))).toBe(false);

    expect((await api.del(`/webhook-endpoints/${made[3].id}`, m.token)).status).toBe(204);
    await create(m.token);
    expect((await api.post('/webhook-endpoints', m.token, { url: 'https://hooks.example.com/again', events: ['*'] })).status).toBe(409);
  });

  it('concurrent creates near the cap: exactly the room left is taken', async () => {
    const m = await newMerchant();
    for (let i = 0; i < MAX_WEBHOOK_ENDPOINTS - 2; i++) await create(m.token);
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        api.post('/webhook-endpoints', m.token, { url: `https://hooks.example.com/c${i}`, events: ['*'] }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 409, 409, 409]);
    expect((await api.get('/webhook-endpoints?per_page=100', m.token)).body.meta.total).toBe(MAX_WEBHOOK_ENDPOINTS);
  });
});

describe('delivery fan-out: endpoints of a merchant subscribed to a type', () => {
  it('one strongly consistent Query of the list (beside one BatchGetItem of the count) returns the enabled endpoints whose events include the type or "*"', async () => {
    const m = await newMerchant();
    const paid = await create(m.token, { events: ['order.paid'] });
    const star = await create(m.token, { events: ['*'] });
    const subs = await create(m.token, { events: ['subscription.created', 'order.refunded'] });
    const disabled = await create(m.token, { events: ['*'] });
    await api.patch(`/webhook-endpoints/${disabled.id}`, m.token, { status: 'disabled' });
    const deleted = await create(m.token, { events: ['order.paid'] });
    await api.del(`/webhook-endpoints/${deleted.id}`, m.token);
    const other = await newMerchant();
    await create(other.token, { events: ['*'] });

    requestCounter.reset();
    const forPaid = await endpointsReceiving(m.merchantId, 'order.paid');
    expect(requestCounter.total).toBe(2);
    expect(requestCounter.byCommand).toEqual({ QueryCommand: 1, BatchGetItemCommand: 1 });
    expect(forPaid.map((e) => e.id).sort()).toEqual([paid.id, star.id].sort());
    expect((await endpointsReceiving(m.merchantId, 'order.refunded')).map((e) => e.id).sort()).toEqual([star.id, subs.id].sort());
    expect((await endpointsReceiving(m.merchantId, 'subscription.paused')).map((e) => e.id)).toEqual([star.id]);
  });
});

describe('request budgets (DynamoDB requests, token lookup and rate counter included)', () => {
  it('POST 4, GET 3, list page 1 4, PATCH 4, rotate 4, DELETE 4', async () => {
    const { token } = await newMerchant();
    const c = await api.counted('POST', '/webhook-endpoints', { token, body: { url: 'https://hooks.example.com/b', events: ['*'] } });
    expect(c.res.status).toBe(201);
    const id = c.res.body.data.id;
    const counts = {
      post: c.requests,
      get: (await api.counted('GET', `/webhook-endpoints/${id}`, { token })).requests,
      list: (await api.counted('GET', '/webhook-endpoints', { token })).requests,
      patch: (await api.counted('PATCH', `/webhook-endpoints/${id}`, { token, body: { description: 'b' } })).requests,
      rotate: (await api.counted('POST', `/webhook-endpoints/${id}/rotate-secret`, { token })).requests,
      del: (await api.counted('DELETE', `/webhook-endpoints/${id}`, { token })).requests,
    };
    console.info(`[budget] webhook endpoints: ${JSON.stringify(counts)}`);
    expect(counts).toEqual({ post: 4, get: 3, list: 4, patch: 4, rotate: 4, del: 4 });
  });
});

describe('secrets never reach the logs', () => {
  it('create, rotate, and a rotation that fails with a 500 after the secret was made: no secret or ciphertext in any log line', async () => {
    const m = await newMerchant();
    let fault: ReturnType<typeof failDynamoWhen> | undefined;
    const { result, raw } = await captureLogs(async () => {
      const created = await api.post('/webhook-endpoints', m.token, { url: 'https://hooks.example.com/log', events: ['*'] });
      const rotated = await api.post(`/webhook-endpoints/${created.body.data.id}/rotate-secret`, m.token);
      fault = failDynamoWhen((cmd) => cmd.constructor.name === 'TransactWriteCommand', new Error('injected commit failure'));
      const failed = await api.post(`/webhook-endpoints/${created.body.data.id}/rotate-secret`, m.token);
      fault.mockRestore();
      return { created, rotated, failed };
    });
    expect(result.created.status).toBe(201);
    expect(result.rotated.status).toBe(200);
    expect(result.failed.status).toBe(500);
    expect(raw).toContain('injected commit failure');
    const item = await storedItem(m.merchantId, result.created.body.data.id);
    for (const s of [result.created.body.data.secret, result.rotated.body.data.secret]) {
      expect(raw).not.toContain(s.slice(6));
      expect(raw).not.toContain(s.slice(6, 20));
    }
    expect(raw).not.toContain(item!.secret_encrypted.slice(4, 30));
    expect(raw).not.toContain('whsec_');
  });
});
