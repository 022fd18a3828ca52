import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { ABILITIES } from '#lib/auth/abilities';
import { newMerchant, useApi } from '../support/api.ts';
import { awsErrors, failOnce } from '../support/faults.ts';
import { activityRecords } from '../orders/helpers.ts';

const api = useApi();
afterEach(() => resetClock());

type Entry = Record<string, any>;
const list = async (token: string, qs = '') => api.get(`/activity${qs}`, token);
const entries = async (token: string, qs = '') => (await list(token, qs)).body.data as Entry[];
const order = (no: string, over: Record<string, unknown> = {}) => ({
  order_no: no,
  amount: '100',
  customer_email: `${no}@example.com`,
  ...over,
});
/** The counts of a batch answer, as an entry repeats them. */
const counts = (data: Entry) => ({
  total: data.total,
  created: data.created,
  updated: data.updated,
  skipped: data.skipped,
  failed: data.failed,
});

describe('GET /activity', () => {
  it('has one entry per batch request of each type, with the counts, skipped and failed items the batch answered, its request id and import run', async () => {
    fixedClock('2026-03-15T10:00:00Z');
    const { token } = await newMerchant();
    const run = 'run_a1.B2:c3-d4';
    const customers = await api.post(
      '/customers/batch',
      token,
      {
        customers: [
          { email: 'a@example.com', name: 'A' },
          { email: 'a@example.com', name: 'A again' },
          { email: 'nope', name: 'Bad' },
        ],
      },
      { 'X-Import-Run': run },
    );
    const orders = await api.post(
      '/orders/batch',
      token,
      { orders: [order('o1'), order('o2', { amount: '-3' }), order('o1', { status: 'paid' })] },
      { 'X-Import-Run': run },
    );
    const subscriptions = await api.post('/subscriptions/batch', token, {
      subscriptions: [
        {
          external_id: 's1',
          customer_email: 'a@example.com',
          plan_name: 'Pro',
          mrr: '10',
          billing_cycle: 'monthly',
          started_at: '2026-01-01T00:00:00Z',
        },
        { external_id: 's1', customer_email: 'b@example.com', plan_name: 'Pro', mrr: '10', billing_cycle: 'monthly' },
      ],
    });
    const events = await api.post('/subscriptions/events/batch', token, {
      events: [
        { subscription_external_id: 's1', event_type: 'upgrade', old_amount: '10', new_amount: '20', occurred_at: '2026-02-01T00:00:00Z' },
        { subscription_external_id: 's1', event_type: 'upgrade', old_amount: '20', new_amount: '5', occurred_at: '2026-02-02T00:00:00Z' },
      ],
    });
    for (const r of [customers, orders, subscriptions, events]) expect(r.status, JSON.stringify(r.body)).toBe(200);

    const res = await list(token);
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({ current_page: 1, from: 1, last_page: 1, per_page: 20, to: 4, total: 4, next_cursor: null });
    const [e4, e3, e2, e1] = res.body.data as Entry[];
    const answered = [customers, orders, subscriptions, events];
    const types = ['customers.batch', 'orders.batch', 'subscriptions.batch', 'subscription_events.batch'];
    [e1, e2, e3, e4].forEach((e, i) => {
      expect(e).toMatchObject({ type: types[i], created_at: '2026-03-15T10:00:00Z', ...counts(answered[i].body.data) });
      expect(e.request_id).toBe(answered[i].headers.get('x-request-id'));
      expect(Number.isSafeInteger(e.id)).toBe(true);
      // Every skipped and failed item the batch answered, with a message that says why.
      expect(e.results.failed).toEqual(answered[i].body.data.results.failed);
      expect(e.results.skipped).toEqual(
        answered[i].body.data.results.skipped.map((s: Entry) => ({ ...s, message: expect.stringMatching(/\w/) })),
      );
    });
    expect([e1.import_run, e2.import_run, e3.import_run, e4.import_run]).toEqual([run, run, null, null]);
    // Newest first: same second, so by id.
    expect(e4.id).toBeGreaterThan(e3.id);
    expect(e1).toMatchObject({ total: 3, created: 1, skipped: 1, failed: 1 });
    expect(e1.results.skipped).toEqual([
      { index: 1, identifier: 'a@example.com', reason: 'duplicate_email', message: expect.stringContaining('already has this email') },
    ]);
    expect(e1.results.failed).toEqual([
      { index: 2, identifier: 'nope', reason: 'validation_error', message: expect.stringContaining('email') },
    ]);
    expect(e2).toMatchObject({ total: 3, created: 1, updated: 1, failed: 1 });
    expect(e3.results.skipped[0]).toMatchObject({ index: 1, identifier: 's1', reason: 'duplicate_external_id' });
    expect(e4.results.failed[0]).toMatchObject({
      index: 1,
      reason: 'validation_error',
      message: expect.stringContaining('new amount greater than old amount'),
    });

    // One entry by id, the same as listed.
    const one = await api.get(`/activity/${e2.id}`, token);
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual(e2);
  });

  it('filters by type, import run and created date; a filter value it does not know is a 422 that names the allowed values', async () => {
    const { token } = await newMerchant();
    const batch = (day: string, run?: string, type: 'orders' | 'customers' = 'orders') => {
      fixedClock(`${day}T08:00:00Z`);
      const body =
        type === 'orders'
          ? { orders: [order(`o${Math.random().toString(36).slice(2)}`)] }
          : { customers: [{ email: `${Math.random()}@example.com` }] };
      return api.post(`/${type}/batch`, token, body, run ? { 'X-Import-Run': run } : {});
    };
    await batch('2026-01-10', 'r1');
    await batch('2026-01-11', 'r1', 'customers');
    await batch('2026-01-12', 'r2');
    await batch('2026-01-13');
    fixedClock('2026-02-01T00:00:00Z');

    const runs = (es: Entry[]) => es.map((e) => [e.created_at.slice(0, 10), e.type, e.import_run]);
    expect(runs(await entries(token, '?import_run=r1'))).toEqual([
      ['2026-01-11', 'customers.batch', 'r1'],
      ['2026-01-10', 'orders.batch', 'r1'],
    ]);
    expect((await list(token, '?import_run=r1')).body.meta.total).toBe(2);
    expect(runs(await entries(token, '?type=orders.batch'))).toEqual([
      ['2026-01-13', 'orders.batch', null],
      ['2026-01-12', 'orders.batch', 'r2'],
      ['2026-01-10', 'orders.batch', 'r1'],
    ]);
    const both = await list(token, '?type=customers.batch&import_run=r1');
    expect([both.body.meta.total, runs(both.body.data)]).toEqual([1, [['2026-01-11', 'customers.batch', 'r1']]]);
    const range = await list(token, '?start_date=2026-01-11&end_date=2026-01-12');
    expect([range.body.meta.total, runs(range.body.data)]).toEqual([
      2,
      [
        ['2026-01-12', 'orders.batch', 'r2'],
        ['2026-01-11', 'customers.batch', 'r1'],
      ],
    ]);
    expect((await list(token, '?import_run=nobody')).body).toEqual({
      data: [],
      meta: { current_page: 1, from: null, last_page: 1, per_page: 20, to: null, total: 0, next_cursor: null },
    });

    const bad = await list(token, '?type=orders');
    expect(bad.status).toBe(422);
    expect(bad.body.errors.type[0]).toBe(
      'The selected type is invalid. Allowed: customers.batch, orders.batch, subscriptions.batch, subscription_events.batch.',
    );
    for (const [qs, field] of [
      ['?start_date=yesterday', 'start_date'],
      ['?start_date=2026-01-12&end_date=2026-01-11', 'end_date'],
      ['?import_run=has%20space', 'import_run'],
      ['?per_page=101', 'per_page'],
      ['?page=0', 'page'],
    ]) {
      const r = await list(token, qs);
      expect([r.status, Object.keys(r.body.errors ?? {})], qs).toEqual([422, [field]]);
    }
  });

  it('pages by number and by cursor alike; a cursor of another list or made up is a 422; a page offset of 10,000 or more points to the cursor', async () => {
    fixedClock('2026-05-01T00:00:00Z');
    const { token } = await newMerchant();
    for (let i = 0; i < 5; i++)
      await api.post('/customers/batch', token, { customers: [{ email: `p${i}@example.com` }] }, { 'X-Import-Run': 'paged' });
    const byPage = await Promise.all([1, 2, 3].map((p) => list(token, `?per_page=2&page=${p}`)));
    expect(byPage.map((r) => r.body.data.length)).toEqual([2, 2, 1]);
    expect(byPage[2].body.meta).toMatchObject({ current_page: 3, from: 5, to: 5, last_page: 3, total: 5, next_cursor: null });

    const walked: Entry[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await list(token, `?per_page=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.meta).toMatchObject({ current_page: pages + 1, from: pages * 2 + 1, total: 5, last_page: 3 });
      walked.push(...r.body.data);
      cursor = r.body.meta.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(walked.map((e) => e.id)).toEqual(byPage.flatMap((r) => r.body.data.map((e: Entry) => e.id)));

    const first = (await list(token, '?per_page=2')).body.meta.next_cursor as string;
    for (const qs of [
      `?type=orders.batch&cursor=${first}`,
      '?cursor=bm90IGEgY3Vyc29y',
      `?cursor=${Buffer.from(JSON.stringify(['x', 0, { pk: 'M#x' }])).toString('base64url')}`,
    ]) {
      const r = await list(token, qs);
      expect([r.status, r.body.errors?.cursor?.[0]], qs).toEqual([
        422,
        'The cursor field must be a meta.next_cursor value returned by this list with the same filters.',
      ]);
    }
    // The same list under another merchant's token: its cursor names a partition that is not theirs.
    const other = await newMerchant();
    expect((await list(other.token, `?per_page=2&cursor=${first}`)).status).toBe(422);

    const deep = await list(token, '?page=101&per_page=100');
    expect(deep.status).toBe(422);
    expect(deep.body.errors.page[0]).toContain('meta.next_cursor');
    expect((await list(token, '?page=100&per_page=100')).status).toBe(200);
  });

  it("is the merchant's own: another merchant sees none of it, by list or by id; unknown ids are a 404", async () => {
    const a = await newMerchant();
    const b = await newMerchant();
    await api.post('/orders/batch', a.token, { orders: [order(`iso${Date.now()}`)] });
    const [entry] = await entries(a.token);
    expect((await list(b.token)).body.meta.total).toBe(0);
    for (const path of [`/activity/${entry.id}`, '/activity/999999999', '/activity/abc', '/activity/0', '/activity/1e3']) {
      const r = await api.get(path, b.token);
      expect([r.status, r.body], path).toEqual([404, { message: 'Resource not found' }]);
    }
  });

  it('needs activity:read (403 without it); new tokens carry it', async () => {
    const limited = await newMerchant(ABILITIES.filter((a) => a !== 'activity:read'));
    for (const path of ['/activity', '/activity/1']) {
      const r = await api.get(path, limited.token);
      expect([r.status, r.body], path).toEqual([403, { message: 'This action is unauthorized.' }]);
    }
    const full = await newMerchant();
    expect((await list(full.token)).status).toBe(200);
  });

  it('keeps entries for the 13 whole months after their month: listed, counted and readable until then, gone after', async () => {
    fixedClock('2025-01-20T12:00:00Z');
    const { token } = await newMerchant();
    await api.post('/orders/batch', token, { orders: [order(`old${Date.now()}`)] });
    fixedClock('2025-06-03T12:00:00Z');
    await api.post('/orders/batch', token, { orders: [order(`mid${Date.now()}`)] });
    const [mid, old] = await entries(token);

    fixedClock('2026-02-28T23:59:59Z'); // 13 whole months after January 2025
    expect((await list(token)).body.meta.total).toBe(2);
    expect((await api.get(`/activity/${old.id}`, token)).status).toBe(200);

    fixedClock('2026-03-01T00:00:00Z');
    const after = await list(token);
    expect([after.body.meta.total, after.body.data.map((e: Entry) => e.id)]).toEqual([1, [mid.id]]);
    expect((await api.get(`/activity/${old.id}`, token)).status).toBe(404);
    expect((await list(token, '?end_date=2025-02-01')).body).toMatchObject({ data: [], meta: { total: 0 } });
    expect((await list(token, '?type=orders.batch')).body.meta.total).toBe(1);
  });

  it('a refused batch (422 on its body or its X-Import-Run) leaves no entry', async () => {
    const { token, merchantId } = await newMerchant();
    const r1 = await api.post('/orders/batch', token, { orders: [] });
    const r2 = await api.post('/orders/batch', token, { orders: [order('x1')] }, { 'X-Import-Run': 'not valid!' });
    expect([r1.status, r2.status]).toEqual([422, 422]);
    expect(r2.body.errors).toEqual({
      import_run: ['The import run field must be 1 to 100 letters, digits, dots, underscores, colons or hyphens.'],
    });
    expect((await api.get('/orders/x1', token)).status).toBe(404);
    expect(await activityRecords(merchantId)).toEqual([]);
  });

  it('an idempotent replay of a batch adds no entry', async () => {
    const { token } = await newMerchant();
    const body = { orders: [order(`idem${Date.now()}`)] };
    await api.post('/orders/batch', token, body, { 'X-Idempotency-Key': 'k1' });
    const again = await api.post('/orders/batch', token, body, { 'X-Idempotency-Key': 'k1' });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await list(token)).body.meta.total).toBe(1);
  });

  it('rides in the transaction of the last unit; when that transaction loses a race, the redone units and then the entry are written, and the entry still agrees with the answer', async () => {
    const { token } = await newMerchant();
    // Key attributes may come native or marshalled ({ S: … }), depending on the client's layer.
    const str = (v: unknown) => (typeof v === 'object' && v !== null ? String((v as { S?: string }).S) : String(v));
    const puts = (input: Record<string, any>) => (input.TransactItems as Record<string, any>[]).flatMap((t) => (t.Put ? [t.Put.Item] : []));
    const carriesEntry = (input: Record<string, any>) => puts(input).some((item) => str(item.sk) === 'ACTIVITY');
    const seen: boolean[] = [];
    const probe = failOnce('TransactWriteItems', () => awsErrors.transactionCanceled([awsErrors.conflictReason()]), {
      when: (input) => {
        seen.push(carriesEntry(input) && puts(input).some((item) => str(item.sk) === 'ORDER'));
        return carriesEntry(input);
      },
    });
    try {
      const res = await api.post('/orders/batch', token, {
        orders: [order(`race${Date.now()}a`), order(`race${Date.now()}b`, { amount: 'x' })],
      });
      expect(res.status).toBe(200);
      expect(probe.stats.fired).toBe(true);
      expect(seen[0]).toBe(true); // the entry and the order were in one transaction
      const [entry] = await entries(token);
      expect(entry).toMatchObject(counts(res.body.data));
      expect(entry).toMatchObject({ total: 2, created: 1, failed: 1 });
      expect((await list(token)).body.meta.total).toBe(1);
    } finally {
      probe.uninstall();
    }
  });

  it('stays a bounded item: 100 failed items with 1,000-character identifiers and messages are cut to 200 bytes each', async () => {
    const { token, merchantId } = await newMerchant();
    const long = 'é'.repeat(1000);
    const res = await api.post('/orders/batch', token, {
      orders: Array.from({ length: 100 }, (_, i) => ({ order_no: `${long}${i}`, amount: 'x', customer_email: 'a@example.com' })),
    });
    expect(res.body.data.failed).toBe(100);
    const [entry] = await entries(token);
    expect(entry.failed).toBe(100);
    expect(entry.results.failed).toHaveLength(100);
    for (const f of entry.results.failed) {
      expect(Buffer.byteLength(f.identifier)).toBeLessThanOrEqual(200);
      expect(f.identifier.endsWith('…')).toBe(true);
      expect(Buffer.byteLength(f.message)).toBeLessThanOrEqual(200);
    }
    // The write-limit check of every test would have refused an item over 64 KB; this says how far under.
    const [stored] = await activityRecords(merchantId);
    expect(Buffer.byteLength(JSON.stringify(stored))).toBeLessThan(48 * 1024);
  });
});

describe('GET /activity request budget', () => {
  it('page 1 and a cursor page cost at most 4 DynamoDB requests, the same with 3 or 40 entries', async () => {
    const { token } = await newMerchant();
    const measure = async () => {
      const page1 = await api.counted('GET', '/activity?per_page=2', { token });
      const next = page1.res.body.meta.next_cursor as string;
      const cursorPage = await api.counted('GET', `/activity?per_page=2&cursor=${next}`, { token });
      const byType = await api.counted('GET', '/activity?per_page=2&type=customers.batch', { token });
      const byRun = await api.counted('GET', '/activity?per_page=2&import_run=budget', { token });
      return [page1.requests, cursorPage.requests, byType.requests, byRun.requests];
    };
    for (let i = 0; i < 3; i++)
      await api.post('/customers/batch', token, { customers: [{ email: `b${i}@example.com` }] }, { 'X-Import-Run': 'budget' });
    const small = await measure();
    for (let i = 3; i < 40; i++)
      await api.post('/customers/batch', token, { customers: [{ email: `b${i}@example.com` }] }, { 'X-Import-Run': 'budget' });
    const large = await measure();
    expect(small).toEqual([4, 4, 4, 4]);
    expect(large).toEqual(small);
    const one = await api.counted('GET', '/activity/1', { token });
    expect(one.requests).toBeLessThanOrEqual(3);
  });
});
