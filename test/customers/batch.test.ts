import { INVALID_DATA as INVALID } from '#lib/errors';
import { describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { db } from '#lib/db/client';
import { activityRecords } from '../orders/helpers.ts';
import { createCustomer } from '#lib/customers/service';

const api = useApi();
const EXT_TAKEN = 'The external id has already been taken.';

const batch = (token: string, body: unknown, qs = '') => api.post(`/customers/batch${qs}`, token, body);
const customer = async (token: string, idOrExt: string | number) => (await api.get(`/customers/${idOrExt}`, token)).body.data;
const total = async (token: string) => (await api.get('/customers', token)).body.meta.total as number;
const activities = activityRecords;
const people = (n: number, prefix = 'p', extra: (i: number) => Record<string, unknown> = () => ({})) =>
  Array.from({ length: n }, (_, i) => ({ email: `${prefix}${i}@example.com`, name: `Person ${i}`, ...extra(i) }));

describe('POST /customers/batch', () => {
  it('creates new customers, skips existing emails by default, reports bad items, and logs the import', async () => {
    const { merchantId, token } = await newMerchant();
    const existing = (await api.post('/customers', token, { email: 'old@example.com', name: 'Old' })).body.data;
    const r = await batch(token, {
      customers: [
        { email: 'new1@example.com', name: 'New One', phone: '1', external_id: 'n-1', metadata: { src: 'crm' } },
        { email: 'OLD@example.com', name: 'Overwrite?' },
        { email: 'not-an-email', name: 'Bad' },
        { name: 'No email' },
        'not an object',
        { email: 'new2@example.com', metadata: [] },
        { email: 'New3@Example.com' },
      ],
    });
    expect(r.status).toBe(200);
    const d = r.body.data;
    expect(d).toMatchObject({ total: 7, created: 2, updated: 0, skipped: 1, failed: 4 });
    expect(d.results.created.map((c: { index: number; identifier: string }) => [c.index, c.identifier])).toEqual([
      [0, 'new1@example.com'],
      [6, 'New3@Example.com'],
    ]);
    expect(d.results.skipped).toEqual([{ index: 1, reason: 'duplicate_email', identifier: 'OLD@example.com' }]);
    expect(d.results.failed).toEqual([
      { index: 2, reason: 'validation_error', message: 'The email field must be a valid email address.', identifier: 'not-an-email' },
      { index: 3, reason: 'validation_error', message: 'The email field is required.', identifier: '' },
      { index: 4, reason: 'validation_error', message: 'The customers.4 field must be an object.', identifier: '' },
      { index: 5, reason: 'validation_error', message: 'The metadata field must be an object.', identifier: 'new2@example.com' },
    ]);
    const [c0, c6] = d.results.created;
    expect(await customer(token, c0.id)).toMatchObject({
      email: 'new1@example.com',
      name: 'New One',
      phone: '1',
      external_id: 'n-1',
      metadata: { src: 'crm' },
    });
    expect((await customer(token, 'n-1')).id).toBe(c0.id);
    expect((await customer(token, c6.id)).email).toBe('new3@example.com');
    expect((await customer(token, existing.id)).name).toBe('Old');
    expect(await total(token)).toBe(3);

    const log = await activities(merchantId);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ type: 'customers.batch', total: 7, created: 2, updated: 0, skipped: 1, failed: 4 });
    expect(log[0].created_at).toMatch(/Z$/);
  });

  it('imported customers keep their own created_at (customer since): shown, listed in its order; a future one fails its item; an existing customer keeps its own', async () => {
    fixedClock('2026-05-01T00:00:00Z');
    const { token } = await newMerchant();
    const r = await batch(token, {
      customers: [
        { email: 'since2019@example.com', created_at: '2019-03-04T05:06:07Z' },
        { email: 'since2021@example.com', created_at: '2021-01-01T00:00:00Z' },
        { email: 'future@example.com', created_at: '2026-05-01T00:00:01Z' },
        { email: 'today@example.com' },
      ],
    });
    expect(r.body.data).toMatchObject({ created: 3, failed: 1 });
    expect(r.body.data.results.failed).toEqual([
      {
        index: 2,
        reason: 'validation_error',
        identifier: 'future@example.com',
        message: 'The created at field must be a date before or equal to now.',
      },
    ]);
    const [a, b, c] = r.body.data.results.created.map((x: { id: number }) => x.id);
    expect((await customer(token, a)).created_at).toBe('2019-03-04T05:06:07Z');
    expect((await customer(token, b)).created_at).toBe('2021-01-01T00:00:00Z');
    expect((await customer(token, c)).created_at).toBe('2026-05-01T00:00:00Z');
    // Newest first, by the dates they carry.
    expect((await api.get('/customers', token)).body.data.map((x: { id: number }) => x.id)).toEqual([c, b, a]);
    // Sent again with another date and on_conflict update: the customer keeps the date it has.
    const again = await batch(
      token,
      { customers: [{ email: 'since2019@example.com', name: 'Ana', created_at: '2018-01-01T00:00:00Z' }] },
      '?on_conflict=update',
    );
    expect(again.body.data).toMatchObject({ updated: 1 });
    expect(await customer(token, a)).toMatchObject({ name: 'Ana', created_at: '2019-03-04T05:06:07Z' });
    resetClock();
  });

  it('on_conflict update: updates the given fields of the existing customer, keeps the rest', async () => {
    const { token } = await newMerchant();
    const existing = (await api.post('/customers', token, { email: 'u@example.com', name: 'Before', phone: '555', external_id: 'u-1' }))
      .body.data;
    const r = await batch(token, {
      on_conflict: 'update',
      customers: [{ email: 'U@Example.com', name: 'After', metadata: { tier: 2 } }, { email: 'fresh@example.com' }],
    });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ total: 2, created: 1, updated: 1, skipped: 0, failed: 0 });
    expect(r.body.data.results.updated).toEqual([{ index: 0, id: existing.id, identifier: 'U@Example.com' }]);
    expect(await customer(token, existing.id)).toMatchObject({
      name: 'After',
      phone: '555',
      external_id: 'u-1',
      metadata: { tier: 2 },
      email: 'u@example.com',
    });
    expect(await total(token)).toBe(2);
  });

  it('on_conflict from the query string; the body wins; a bad value is 422', async () => {
    const { token } = await newMerchant();
    const existing = (await api.post('/customers', token, { email: 'q@example.com', name: 'A' })).body.data;
    const viaQuery = await batch(token, { customers: [{ email: 'q@example.com', name: 'B' }] }, '?on_conflict=update');
    expect(viaQuery.body.data.updated).toBe(1);
    expect((await customer(token, existing.id)).name).toBe('B');
    const bodyWins = await batch(token, { on_conflict: 'skip', customers: [{ email: 'q@example.com', name: 'C' }] }, '?on_conflict=update');
    expect(bodyWins.body.data.skipped).toBe(1);
    expect((await customer(token, existing.id)).name).toBe('B');

    const bad = await batch(token, { on_conflict: 'merge', customers: [{ email: 'z@example.com' }] });
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({
      message: INVALID,
      errors: { on_conflict: ['The selected on conflict is invalid. Allowed: skip, update.'] },
    });
    const badQuery = await batch(token, { customers: [{ email: 'z@example.com' }] }, '?on_conflict=merge');
    expect(badQuery.status).toBe(422);
    expect(Object.keys(badQuery.body.errors)).toEqual(['on_conflict']);
    expect(await total(token)).toBe(1);
  });

  it('an email repeated in the batch is handled as if the earlier item already existed', async () => {
    const { token } = await newMerchant();
    const skip = await batch(token, {
      customers: [
        { email: 'twice@example.com', name: 'First' },
        { email: 'other@example.com' },
        { email: 'TWICE@example.com', name: 'Second' },
      ],
    });
    expect(skip.body.data).toMatchObject({ created: 2, skipped: 1 });
    expect(skip.body.data.results.skipped).toEqual([{ index: 2, reason: 'duplicate_email', identifier: 'TWICE@example.com' }]);
    const firstId = skip.body.data.results.created[0].id;
    expect((await customer(token, firstId)).name).toBe('First');

    const upd = await batch(token, {
      on_conflict: 'update',
      customers: [
        { email: 'made@example.com', name: 'Made', phone: '1' },
        { email: 'made@example.com', name: 'Renamed', external_id: 'm-1' },
        { email: 'twice@example.com', name: 'T2' },
        { email: 'twice@example.com', phone: '22' },
      ],
    });
    const d = upd.body.data;
    expect(d).toMatchObject({ total: 4, created: 1, updated: 3, skipped: 0, failed: 0 });
    const made = d.results.created[0];
    expect(made.index).toBe(0);
    expect(d.results.updated).toEqual([
      { index: 1, id: made.id, identifier: 'made@example.com' },
      { index: 2, id: firstId, identifier: 'twice@example.com' },
      { index: 3, id: firstId, identifier: 'twice@example.com' },
    ]);
    expect(await customer(token, made.id)).toMatchObject({ name: 'Renamed', phone: '1', external_id: 'm-1' });
    expect(await customer(token, firstId)).toMatchObject({ name: 'T2', phone: '22' });
    expect(await total(token)).toBe(3);
  });

  it('an external_id held by an existing customer or an earlier item fails that item', async () => {
    const { token } = await newMerchant();
    await api.post('/customers', token, { email: 'holder@example.com', external_id: 'taken' });
    const r = await batch(token, {
      customers: [
        { email: 'a@example.com', external_id: 'taken' },
        { email: 'b@example.com', external_id: 'dup' },
        { email: 'c@example.com', external_id: 'dup' },
        { email: 'a@example.com', external_id: 'free' },
      ],
    });
    const d = r.body.data;
    expect(d.results.failed).toEqual([
      { index: 0, reason: 'validation_error', message: EXT_TAKEN, identifier: 'a@example.com' },
      { index: 2, reason: 'validation_error', message: EXT_TAKEN, identifier: 'c@example.com' },
    ]);
    // the failed item never existed, so the later item with its email is a new customer
    expect(d.results.created.map((c: { index: number }) => c.index)).toEqual([1, 3]);
    expect((await customer(token, 'free')).email).toBe('a@example.com');
    expect((await customer(token, 'dup')).email).toBe('b@example.com');
    expect((await customer(token, 'taken')).email).toBe('holder@example.com');
  });

  it('exactly 100 items are accepted; 101, empty, missing or non-array are refused with nothing stored', async () => {
    const { merchantId, token } = await newMerchant();
    const tooMany = await batch(token, { customers: people(101) });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body).toEqual({ message: INVALID, errors: { customers: ['The customers field must not have more than 100 items.'] } });
    expect(await batch(token, { customers: [] })).toMatchObject({
      status: 422,
      body: { message: INVALID, errors: { customers: ['The customers field must contain at least 1 item.'] } },
    });
    expect(await batch(token, {})).toMatchObject({ status: 422, body: { errors: { customers: ['The customers field is required.'] } } });
    expect(await batch(token, { customers: { email: 'a@example.com' } })).toMatchObject({
      status: 422,
      body: { errors: { customers: ['The customers field must be an array.'] } },
    });
    expect(await total(token)).toBe(0);
    expect(await activities(merchantId)).toHaveLength(0);
    // none of the refused emails was reserved
    expect((await api.post('/customers', token, { email: 'p0@example.com' })).status).toBe(201);

    const ok = await batch(token, { customers: people(100, 'q') });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ total: 100, created: 100, failed: 0 });
    const newIds = ok.body.data.results.created.map((c: { id: number }) => c.id);
    expect(new Set(newIds).size).toBe(100);
    expect(await total(token)).toBe(101);
    expect((await api.get('/customers?per_page=1', token)).body.data[0].email).toBe('q99@example.com');
  });

  it('is refused without customers:write', async () => {
    const { token } = await newMerchant(['customers:read']);
    const r = await batch(token, { customers: [{ email: 'a@example.com' }] });
    expect(r.status).toBe(403);
    expect(await total(token)).toBe(0);
  });

  it('100 new customers cost a handful of DynamoDB requests, not one per item', async () => {
    const plain = await newMerchant();
    const a = await api.counted('POST', '/customers/batch', { token: plain.token, body: { customers: people(100) } });
    expect(a.res.body.data.created).toBe(100);
    const withExt = await newMerchant();
    const b = await api.counted('POST', '/customers/batch', {
      token: withExt.token,
      body: { customers: people(100, 'p', (i) => ({ external_id: `ext-${i}` })) },
    });
    expect(b.res.body.data.created).toBe(100);
    // token + rate + marker BatchGet(s) + id allocation + the activity entry's id (in parallel) + ≤ 100-action transactions
    expect(a.requests).toBeLessThanOrEqual(8);
    expect(b.requests).toBeLessThanOrEqual(10);
    expect(a.byCommand.TransactWriteItemsCommand).toBeLessThanOrEqual(3);
    console.info(
      `batch of 100 new customers: ${a.requests} requests ${JSON.stringify(a.byCommand)}; with external_ids: ${b.requests} ${JSON.stringify(b.byCommand)}`,
    );
    expect(await total(plain.token)).toBe(100);
    expect(await total(withExt.token)).toBe(100);

    // all-existing, update mode: still batched
    const again = await api.counted('POST', '/customers/batch', {
      token: plain.token,
      body: { on_conflict: 'update', customers: people(100).map((p) => ({ ...p, name: `${p.name}!` })) },
    });
    expect(again.res.body.data.updated).toBe(100);
    expect(again.requests).toBeLessThanOrEqual(9);
    expect((await customer(plain.token, 1)).name).toBe('Person 0!');
  });

  it('a customer created between the read and the write is classified correctly (item-by-item fallback)', async () => {
    for (const onConflict of ['skip', 'update'] as const) {
      const { merchantId, token } = await newMerchant();
      // A concurrent writer lands after the batch read the markers and before its transaction.
      let fired = false;
      const name = `inject-${onConflict}`;
      db().middlewareStack.add(
        (next, context) => async (args) => {
          if (!fired && context.commandName === 'TransactWriteItemsCommand') {
            fired = true;
            await createCustomer(merchantId, { email: 'racer@example.com', name: 'Racer' });
          }
          return next(args);
        },
        { step: 'initialize', name },
      );
      let r: Awaited<ReturnType<typeof batch>>;
      try {
        r = await batch(token, {
          on_conflict: onConflict,
          customers: [{ email: 'calm@example.com' }, { email: 'racer@example.com', name: 'From batch' }, { email: 'late@example.com' }],
        });
      } finally {
        db().middlewareStack.remove(name);
      }
      expect(fired).toBe(true);
      const d = r.body.data;
      const racer = (await api.get('/customers?search=racer', token)).body.data;
      expect(racer).toHaveLength(1);
      expect(d.created).toBe(2);
      expect(d.results.created.map((c: { index: number }) => c.index)).toEqual([0, 2]);
      if (onConflict === 'skip') {
        expect(d.results.skipped).toEqual([{ index: 1, reason: 'duplicate_email', identifier: 'racer@example.com' }]);
        expect(racer[0].name).toBe('Racer');
      } else {
        expect(d.results.updated).toEqual([{ index: 1, id: racer[0].id, identifier: 'racer@example.com' }]);
        expect(racer[0].name).toBe('From batch');
      }
      expect(await total(token)).toBe(3);
      const log = await activities(merchantId);
      expect(log).toHaveLength(1);
      expect(log[0]).toMatchObject({ total: 3, created: 2, failed: 0, ...(onConflict === 'skip' ? { skipped: 1 } : { updated: 1 }) });
    }
  });

  it('concurrent batches with the same emails create each customer once', async () => {
    const { token } = await newMerchant();
    const items = people(30, 'c');
    const [a, b] = await Promise.all([batch(token, { customers: items }), batch(token, { customers: [...items].reverse() })]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    // An item may lose every race to the other batch until the time runs out (a loaded machine): it
    // answers `conflict` there, and the other batch wrote it. Either way each customer exists once.
    for (const r of [a, b]) {
      const failed: { reason: string }[] = r.body.data.results.failed;
      expect(r.body.data.created + r.body.data.skipped + failed.length).toBe(30);
      expect(failed.filter((f) => f.reason !== 'conflict')).toEqual([]);
    }
    expect(a.body.data.created + b.body.data.created).toBe(30);
    const list = await api.get('/customers?per_page=100', token);
    expect(list.body.meta.total).toBe(30);
    expect(new Set(list.body.data.map((c: { email: string }) => c.email)).size).toBe(30);
  });
});
