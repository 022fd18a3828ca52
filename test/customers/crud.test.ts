import { INVALID_DATA as INVALID } from '#lib/errors';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';

const api = useApi();
const NOT_FOUND = { message: 'Resource not found' };

const create = async (token: string, body: Record<string, unknown>) => {
  const r = await api.post('/customers', token, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data;
};
const total = async (token: string) => (await api.get('/customers', token)).body.meta.total as number;
const marker = async (merchantId: string, email: string) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: keys.customerEmail(merchantId, email), ConsistentRead: true }))).Item;

describe('POST /customers', () => {
  it('creates a customer: 201, email stored lower-case, all fields returned', async () => {
    const { token } = await newMerchant();
    const r = await api.post('/customers', token, {
      email: 'Alice@Example.COM',
      name: 'Alice',
      phone: '+886 912 345 678',
      external_id: 'crm-001',
      metadata: { plan: 'gold', tags: ['vip'] },
      ltv: '999.00',
      order_count: 7,
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('content-type')).toContain('application/json');
    const c = r.body.data;
    expect(c).toMatchObject({
      email: 'alice@example.com',
      name: 'Alice',
      phone: '+886 912 345 678',
      external_id: 'crm-001',
      metadata: { plan: 'gold', tags: ['vip'] },
      // derived figures are not writable
      ltv: '0.00',
      ltv_by_currency: {},
      order_count: 0,
      first_payment_at: null,
      last_payment_at: null,
    });
    expect(Number.isInteger(c.id)).toBe(true);
    expect(c.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(c.updated_at).toBe(c.created_at);

    const got = await api.get(`/customers/${c.id}`, token);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(c);
  });

  it('optional fields default to null and ids are a per-merchant sequence', async () => {
    const a = await newMerchant();
    const b = await newMerchant();
    const a1 = await create(a.token, { email: 'one@example.com' });
    const a2 = await create(a.token, { email: 'two@example.com' });
    const b1 = await create(b.token, { email: 'one@example.com' });
    expect(a1).toMatchObject({ id: 1, name: null, phone: null, external_id: null, metadata: null });
    expect(a2.id).toBe(2);
    expect(b1.id).toBe(1);
  });

  it('refuses a duplicate email (any case) and a duplicate external_id with 422 on that field', async () => {
    const { token } = await newMerchant();
    await create(token, { email: 'dup@example.com', external_id: 'ext-1' });
    const e = await api.post('/customers', token, { email: 'DUP@example.com' });
    expect(e.status).toBe(422);
    expect(e.body).toEqual({ message: INVALID, errors: { email: ['The email has already been taken.'] } });
    const x = await api.post('/customers', token, { email: 'other@example.com', external_id: 'ext-1' });
    expect(x.status).toBe(422);
    expect(x.body).toEqual({ message: INVALID, errors: { external_id: ['The external id has already been taken.'] } });
    const both = await api.post('/customers', token, { email: 'dup@example.com', external_id: 'ext-1' });
    expect(both.body.errors).toEqual({
      email: ['The email has already been taken.'],
      external_id: ['The external id has already been taken.'],
    });
    expect(await total(token)).toBe(1);
  });

  const long = (n: number) => 'x'.repeat(n);
  const cases: [string, Record<string, unknown>, string, string][] = [
    ['missing email', {}, 'email', 'The email field is required.'],
    ['null email', { email: null }, 'email', 'The email field is required.'],
    ['email not a string', { email: 42 }, 'email', 'The email field must be a string.'],
    ['malformed email', { email: 'not-an-email' }, 'email', 'The email field must be a valid email address.'],
    [
      'email over 255',
      { email: `${long(64)}@${long(63)}.${long(63)}.${long(63)}.com` },
      'email',
      'The email field must not be greater than 255 characters.',
    ],
    ['name not a string', { email: 'a@example.com', name: 5 }, 'name', 'The name field must be a string.'],
    ['name over 255', { email: 'a@example.com', name: long(256) }, 'name', 'The name field must not be greater than 255 characters.'],
    ['phone over 50', { email: 'a@example.com', phone: long(51) }, 'phone', 'The phone field must not be greater than 50 characters.'],
    ['empty external_id', { email: 'a@example.com', external_id: '' }, 'external_id', 'The external id field is required.'],
    [
      'external_id over 255',
      { email: 'a@example.com', external_id: long(256) },
      'external_id',
      'The external id field must not be greater than 255 characters.',
    ],
    ['metadata an array', { email: 'a@example.com', metadata: [1] }, 'metadata', 'The metadata field must be an object.'],
    ['metadata a string', { email: 'a@example.com', metadata: 'x' }, 'metadata', 'The metadata field must be an object.'],
    [
      'metadata over 50 keys',
      { email: 'a@example.com', metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
      'metadata',
      'The metadata field must not have more than 50 keys.',
    ],
    [
      'metadata over 16 KiB',
      { email: 'a@example.com', metadata: { blob: long(16 * 1024) } },
      'metadata',
      'The metadata field must not be larger than 16 KiB.',
    ],
    ['a name with a lone surrogate', { email: 'a@example.com', name: 'Ana\ud800' }, 'name', 'The name field must be valid Unicode text.'],
    [
      'a name with NUL',
      { email: 'a@example.com', name: 'Ana\u0000' },
      'name',
      'The name field must not contain control characters (such as NUL or a line break).',
    ],
    [
      'a phone with a line break',
      { email: 'a@example.com', phone: '555\n0100' },
      'phone',
      'The phone field must not contain control characters (such as NUL or a line break).',
    ],
    // Keys and values become index keys (metadata segments), where a lone surrogate would read as U+FFFD.
    ...(
      [
        ['a value', { tier: 'gold\ud800' }],
        ['a key', { ['\udc00tier']: 'gold' }],
        ['a nested value', { plan: { notes: ['ok', '\udbff'] } }],
      ] as const
    ).map(
      ([where, metadata]) =>
        [
          `metadata with a lone surrogate in ${where}`,
          { email: 'a@example.com', metadata },
          'metadata',
          'The metadata field must be valid Unicode text (a key or value has a lone UTF-16 surrogate).',
        ] as (typeof cases)[number],
    ),
  ];
  it.each(cases)('422 for %s, nothing stored', async (_name, body, field, message) => {
    const { token } = await newMerchant();
    const r = await api.post('/customers', token, body);
    expect(r.status).toBe(422);
    expect(r.body.message).toBe(INVALID);
    expect(Object.keys(r.body.errors)).toEqual([field]);
    expect(r.body.errors[field][0]).toBe(message);
    expect(await total(token)).toBe(0);
  });

  it('400 for a body that is not JSON; 403 without customers:write', async () => {
    const { token } = await newMerchant();
    const r = await api.request('POST', '/customers', { token, rawBody: '{"email":', headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ message: 'The request body is not valid JSON.' });
    const reader = await newMerchant(['customers:read']);
    const f = await api.post('/customers', reader.token, { email: 'a@example.com' });
    expect(f.status).toBe(403);
    expect(f.body).toEqual({ message: 'This action is unauthorized.' });
    expect(await total(reader.token)).toBe(0);
  });

  it('20 concurrent creates of one email: exactly one 201, the rest 422', async () => {
    const { token } = await newMerchant();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post('/customers', token, { email: i % 2 ? 'Race@Example.com' : 'race@example.com', name: `n${i}` }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 422)).toHaveLength(19);
    for (const r of results.filter((x) => x.status === 422)) {
      expect(r.body.errors).toEqual({ email: ['The email has already been taken.'] });
    }
    const list = await api.get('/customers', token);
    expect(list.body.meta.total).toBe(1);
    expect(list.body.data).toHaveLength(1);
  });
});

describe('GET /customers/{idOrExternalId}', () => {
  it('finds by id and by external_id; unknown → 404; costs 3 DynamoDB requests by id', async () => {
    const { token } = await newMerchant();
    const c = await create(token, { email: 'ext@example.com', external_id: 'cus_ABC-1' });
    const byExt = await api.get('/customers/cus_ABC-1', token);
    expect(byExt.status).toBe(200);
    expect(byExt.body.data.id).toBe(c.id);
    expect((await api.get('/customers/cus_abc-1', token)).status).toBe(404);
    const missing = await api.get(`/customers/${c.id + 100}`, token);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual(NOT_FOUND);
    const { res, requests } = await api.counted('GET', `/customers/${c.id}`, { token });
    expect(res.status).toBe(200);
    // The pipeline's two, then the customer and its timeline head (mrr, subscription_status) in one BatchGetItem.
    expect(requests).toBe(3);
    // By external_id: the index read, then the head.
    const ext = await api.counted('GET', '/customers/cus_ABC-1', { token });
    expect(ext.res.body.data.id).toBe(c.id);
    expect(ext.byCommand).toEqual({ GetItemCommand: 1, UpdateItemCommand: 1, QueryCommand: 1, BatchGetItemCommand: 1 });
  });

  it('accepts any external_id; an all-digit path segment always means the id', async () => {
    const { token } = await newMerchant();
    const first = await create(token, { email: 'one@example.com' });
    const numeric = await create(token, { email: 'num@example.com', external_id: String(first.id) });
    const slashed = await create(token, { email: 'slash@example.com', external_id: 'erp/42' });
    expect(numeric.external_id).toBe(String(first.id));
    expect((await api.get(`/customers/${first.id}`, token)).body.data.email).toBe('one@example.com');
    expect((await api.get(`/customers/${encodeURIComponent('erp/42')}`, token)).body.data.id).toBe(slashed.id);
  });
});

describe('PUT /customers/{idOrExternalId}', () => {
  it('updates only the given fields; null clears optional ones; email cannot be cleared', async () => {
    const { token } = await newMerchant();
    const c = await create(token, { email: 'p@example.com', name: 'Pat', phone: '123', external_id: 'e-1', metadata: { a: 1 } });
    const r = await api.put(`/customers/${c.id}`, token, { name: 'Patricia' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ email: 'p@example.com', name: 'Patricia', phone: '123', external_id: 'e-1', metadata: { a: 1 } });

    const cleared = await api.put(`/customers/e-1`, token, { phone: null, external_id: null, metadata: null, name: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data).toMatchObject({ name: null, phone: null, external_id: null, metadata: null, email: 'p@example.com' });
    expect((await api.get('/customers/e-1', token)).status).toBe(404);
    expect((await api.get(`/customers/${c.id}`, token)).body.data).toEqual(cleared.body.data);

    const noEmail = await api.put(`/customers/${c.id}`, token, { email: null });
    expect(noEmail.status).toBe(422);
    expect(noEmail.body).toEqual({ message: INVALID, errors: { email: ['The email field is required.'] } });
    const bad = await api.put(`/customers/${c.id}`, token, { metadata: 'x' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual({ metadata: ['The metadata field must be an object.'] });
    expect((await api.get(`/customers/${c.id}`, token)).body.data.metadata).toBeNull();
  });

  it('an external_id set by PUT addresses the customer and is released when changed', async () => {
    const { token } = await newMerchant();
    const c = await create(token, { email: 'x@example.com' });
    expect((await api.put(`/customers/${c.id}`, token, { external_id: 'first' })).status).toBe(200);
    expect((await api.get('/customers/first', token)).body.data.id).toBe(c.id);
    expect((await api.put('/customers/first', token, { external_id: 'second' })).body.data.external_id).toBe('second');
    expect((await api.get('/customers/first', token)).status).toBe(404);
    expect((await api.get('/customers/second', token)).body.data.id).toBe(c.id);
    const other = await create(token, { email: 'y@example.com', external_id: 'first' });
    expect((await api.get('/customers/first', token)).body.data.id).toBe(other.id);
  });

  it('an email change releases the old email and takes the new one', async () => {
    const { merchantId, token } = await newMerchant();
    const c = await create(token, { email: 'old@example.com' });
    const r = await api.put(`/customers/${c.id}`, token, { email: 'NEW@example.com' });
    expect(r.status).toBe(200);
    expect(r.body.data.email).toBe('new@example.com');
    expect(await marker(merchantId, 'old@example.com')).toBeUndefined();
    const reuse = await api.post('/customers', token, { email: 'old@example.com' });
    expect(reuse.status).toBe(201);
    const taken = await api.post('/customers', token, { email: 'new@example.com' });
    expect(taken.status).toBe(422);
    // same email in another case is not a change
    expect((await api.put(`/customers/${c.id}`, token, { email: 'New@Example.com' })).status).toBe(200);
  });

  it('refuses an email or external_id held by another customer, changing nothing', async () => {
    const { token } = await newMerchant();
    await create(token, { email: 'a@example.com', external_id: 'ea' });
    const b = await create(token, { email: 'b@example.com', external_id: 'eb', name: 'B' });
    const e = await api.put(`/customers/${b.id}`, token, { email: 'A@example.com', name: 'changed' });
    expect(e.status).toBe(422);
    expect(e.body).toEqual({ message: INVALID, errors: { email: ['The email has already been taken.'] } });
    const x = await api.put(`/customers/${b.id}`, token, { external_id: 'ea', name: 'changed' });
    expect(x.status).toBe(422);
    expect(x.body).toEqual({ message: INVALID, errors: { external_id: ['The external id has already been taken.'] } });
    const after = (await api.get(`/customers/${b.id}`, token)).body.data;
    expect(after).toMatchObject({ email: 'b@example.com', external_id: 'eb', name: 'B' });
    expect((await api.get('/customers/ea', token)).body.data.email).toBe('a@example.com');
  });

  it('never overwrites the derived figures written by orders', async () => {
    const { merchantId, token } = await newMerchant();
    const c = await create(token, { email: 'd@example.com' });
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.customer(merchantId, c.id),
        UpdateExpression: 'SET ltv_TWD = :ltv, ltv_USD = :usd, order_count = :n, first_payment_at = :f, last_payment_at = :l',
        ExpressionAttributeValues: { ':ltv': 1200.5, ':usd': 10, ':n': 3, ':f': '2026-01-01T00:00:00Z', ':l': '2026-02-01T00:00:00Z' },
      }),
    );
    const r = await api.put(`/customers/${c.id}`, token, { name: 'Dee', email: 'dee@example.com', ltv: '0', order_count: 0 });
    expect(r.status).toBe(200);
    const expected = {
      ltv: '1200.50',
      ltv_by_currency: { TWD: '1200.50', USD: '10.00' },
      order_count: 3,
      first_payment_at: '2026-01-01T00:00:00Z',
      last_payment_at: '2026-02-01T00:00:00Z',
    };
    expect(r.body.data).toMatchObject(expected);
    expect((await api.get(`/customers/${c.id}`, token)).body.data).toMatchObject({ ...expected, name: 'Dee', email: 'dee@example.com' });
  });

  it('concurrent email changes of one customer leave exactly one email marker', async () => {
    const { merchantId, token } = await newMerchant();
    const c = await create(token, { email: 'start@example.com' });
    const emails = Array.from({ length: 6 }, (_, i) => `moved${i}@example.com`);
    const results = await Promise.all(emails.map((email) => api.put(`/customers/${c.id}`, token, { email })));
    for (const r of results) expect(r.status).toBe(200);
    const final = (await api.get(`/customers/${c.id}`, token)).body.data.email;
    expect(emails).toContain(final);
    const held = [];
    for (const email of [...emails, 'start@example.com']) if (await marker(merchantId, email)) held.push(email);
    expect(held).toEqual([final]);
  });
});

describe('DELETE /customers/{idOrExternalId}', () => {
  it('soft-deletes: 204 empty, then 404 everywhere, gone from the list, email and external_id reusable', async () => {
    const { merchantId, token } = await newMerchant();
    const keep = await create(token, { email: 'keep@example.com' });
    const c = await create(token, { email: 'gone@example.com', name: 'Gone', external_id: 'g-1' });
    expect(await total(token)).toBe(2);

    const r = await api.del('/customers/g-1', token);
    expect(r.status).toBe(204);
    expect(r.body).toBeUndefined();

    expect(await api.get(`/customers/${c.id}`, token)).toMatchObject({ status: 404, body: NOT_FOUND });
    expect((await api.get('/customers/g-1', token)).status).toBe(404);
    expect((await api.put(`/customers/${c.id}`, token, { name: 'x' })).status).toBe(404);
    expect((await api.del(`/customers/${c.id}`, token)).status).toBe(404);

    const list = await api.get('/customers', token);
    expect(list.body.meta.total).toBe(1);
    expect(list.body.data.map((x: { id: number }) => x.id)).toEqual([keep.id]);

    // the item stays (orders still show its email and name)
    const stored = (await db().send(new GetCommand({ TableName: tableName(), Key: keys.customer(merchantId, c.id) }))).Item!;
    expect(stored).toMatchObject({ email: 'gone@example.com', name: 'Gone' });
    expect(stored.deleted_at).toMatch(/Z$/);
    expect(stored.gsi1pk).toBeUndefined();
    expect(stored.gsi4pk).toBeUndefined();

    const again = await create(token, { email: 'gone@example.com', external_id: 'g-1' });
    expect(again.id).not.toBe(c.id);
    expect((await api.get('/customers/g-1', token)).body.data.id).toBe(again.id);
    expect(await total(token)).toBe(2);
  });

  it('unknown id → 404 and the total is untouched', async () => {
    const { token } = await newMerchant();
    await create(token, { email: 'a@example.com' });
    expect(await api.del('/customers/999', token)).toMatchObject({ status: 404, body: NOT_FOUND });
    expect(await api.del('/customers/nope', token)).toMatchObject({ status: 404, body: NOT_FOUND });
    expect(await total(token)).toBe(1);
  });
});

describe('merchant isolation', () => {
  it("another merchant's customer is 404 for get, put and delete and absent from the list", async () => {
    const a = await newMerchant();
    const b = await newMerchant();
    await create(a.token, { email: 'first@example.com' });
    const c = await create(a.token, { email: 'mine@example.com', external_id: 'iso-1', name: 'Mine' });
    const theirs = await create(b.token, { email: 'theirs@example.com' });
    expect([c.id, theirs.id]).toEqual([2, 1]);
    for (const path of [`/customers/${c.id}`, '/customers/iso-1']) {
      expect(await api.get(path, b.token)).toMatchObject({ status: 404, body: NOT_FOUND });
      expect((await api.put(path, b.token, { name: 'hijacked' })).status).toBe(404);
      expect((await api.del(path, b.token)).status).toBe(404);
    }
    // ids are per merchant: B's customer 1 is its own, A's customer 1 is not visible to B
    expect((await api.get('/customers/1', b.token)).body.data.email).toBe('theirs@example.com');
    expect((await api.get('/customers/1', a.token)).body.data.email).toBe('first@example.com');
    const listB = await api.get('/customers', b.token);
    expect(listB.body.data.map((x: { email: string }) => x.email)).toEqual(['theirs@example.com']);
    expect(listB.body.meta.total).toBe(1);
    expect((await api.get('/customers?search=mine', b.token)).body.data).toEqual([]);
    expect((await api.get(`/customers/${c.id}`, a.token)).body.data).toMatchObject({ name: 'Mine', email: 'mine@example.com' });
    // the same email may exist once per merchant
    expect((await api.post('/customers', b.token, { email: 'mine@example.com' })).status).toBe(201);
  });
});
