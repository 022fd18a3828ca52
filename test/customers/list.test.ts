import { INVALID_DATA as INVALID } from '#lib/errors';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { CUSTOMER_SEARCH_SHARDS, customerSearchPartitions } from '#lib/db/keys';
import { newMerchant, useApi } from '../support/api.ts';
import { fixedClock, resetClock } from '#lib/clock';

const api = useApi();

afterEach(() => resetClock());

type Row = { id: number; email: string; name: string | null };
const ids = (body: { data: Row[] }) => body.data.map((c) => c.id);

/** Creates customers through the batch endpoint (≤ 100 per call); returns their ids in array order. */
const seed = async (token: string, items: Record<string, unknown>[]): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < items.length; i += 100) {
    const r = await api.post('/customers/batch', token, { customers: items.slice(i, i + 100) });
    expect(r.status).toBe(200);
    expect(r.body.data.created).toBe(Math.min(100, items.length - i));
    out.push(...r.body.data.results.created.map((c: { id: number }) => c.id));
  }
  return out;
};
/** Every row of the merchant's customer search index (gsi4), shard by shard. */
const searchIndexRows = async (merchantId: string) =>
  (
    await Promise.all(
      customerSearchPartitions(merchantId).map((p) =>
        db().send(
          new QueryCommand({
            TableName: tableName(),
            IndexName: 'gsi4',
            KeyConditionExpression: 'gsi4pk = :p',
            ExpressionAttributeValues: { ':p': p },
          }),
        ),
      ),
    )
  ).flatMap((r) => r.Items ?? []);
const people = (n: number, prefix = 'p') =>
  Array.from({ length: n }, (_, i) => ({ email: `${prefix}${i}@example.com`, name: `Person ${i}` }));

describe('GET /customers', () => {
  it('an empty list: data [], total 0, last_page 1, from/to null', async () => {
    const { token } = await newMerchant();
    const r = await api.get('/customers', token);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      data: [],
      meta: { current_page: 1, from: null, last_page: 1, per_page: 20, to: null, total: 0, next_cursor: null },
    });
  });

  it('pages newest first with correct meta; a page past the end is empty with correct meta', async () => {
    const { token } = await newMerchant();
    const created = await seed(token, people(5));
    const newestFirst = [...created].reverse();

    const p1 = await api.get('/customers?per_page=2', token);
    expect(ids(p1.body)).toEqual(newestFirst.slice(0, 2));
    expect(p1.body.meta).toEqual({ current_page: 1, from: 1, last_page: 3, per_page: 2, to: 2, total: 5, next_cursor: expect.any(String) });
    const p2 = await api.get('/customers?per_page=2&page=2', token);
    expect(ids(p2.body)).toEqual(newestFirst.slice(2, 4));
    expect(p2.body.meta).toMatchObject({ current_page: 2, from: 3, to: 4 });
    const p3 = await api.get('/customers?per_page=2&page=3', token);
    expect(ids(p3.body)).toEqual(newestFirst.slice(4));
    expect(p3.body.meta).toEqual({ current_page: 3, from: 5, last_page: 3, per_page: 2, to: 5, total: 5, next_cursor: null });
    const past = await api.get('/customers?per_page=2&page=4', token);
    expect(past.body).toEqual({
      data: [],
      meta: { current_page: 4, from: null, last_page: 3, per_page: 2, to: null, total: 5, next_cursor: null },
    });
    // Page numbers stop at an offset of 10,000: deeper, the cursor.
    const far = await api.get('/customers?page=2147483647', token);
    expect([far.status, far.body.errors?.page?.[0]]).toEqual([422, expect.stringContaining('meta.next_cursor')]);
    expect((await api.get('/customers?page=500&per_page=20', token)).body.data).toEqual([]);
    let cursor = p1.body.meta.next_cursor;
    const walked = [...ids(p1.body)];
    while (cursor) {
      const r = await api.get(`/customers?per_page=2&cursor=${encodeURIComponent(cursor)}`, token);
      walked.push(...ids(r.body));
      cursor = r.body.meta.next_cursor;
    }
    expect(walked).toEqual(newestFirst);
    expect((await api.get('/customers?page=9007199254740991', token)).body.errors).toEqual({
      page: ['The page field must not be greater than 2147483647.'],
    });

    const all = await api.get('/customers?per_page=100', token);
    expect(ids(all.body)).toEqual(newestFirst);
    expect(all.body.data[0]).toEqual((await api.get(`/customers/${newestFirst[0]}`, token)).body.data);
  });

  it('orders by created_at desc before id desc', async () => {
    const { token } = await newMerchant();
    const clock = fixedClock('2026-03-01T10:00:00Z');
    const later = (await api.post('/customers', token, { email: 'later@example.com' })).body.data;
    clock.set('2026-01-01T10:00:00Z');
    const earlier = (await api.post('/customers', token, { email: 'earlier@example.com' })).body.data;
    expect(earlier.id).toBeGreaterThan(later.id);
    expect(ids((await api.get('/customers', token)).body)).toEqual([later.id, earlier.id]);
  });

  const bad: [string, string, string][] = [
    ['per_page=0', 'per_page', 'The per page field must be between 1 and 100.'],
    ['per_page=101', 'per_page', 'The per page field must be between 1 and 100.'],
    ['per_page=abc', 'per_page', 'The per page field must be an integer.'],
    ['per_page=2.5', 'per_page', 'The per page field must be an integer.'],
    ['page=0', 'page', 'The page field must be at least 1.'],
    ['page=-1', 'page', 'The page field must be an integer.'],
    ['page=abc', 'page', 'The page field must be an integer.'],
    [`search=${'x'.repeat(256)}`, 'search', 'The search field must not be greater than 255 characters.'],
  ];
  it.each(bad)('422 for %s', async (qs, field, message) => {
    const { token } = await newMerchant();
    const r = await api.get(`/customers?${qs}`, token);
    expect(r.status).toBe(422);
    expect(r.body).toEqual({ message: INVALID, errors: { [field]: [message] } });
  });

  it('search: case-insensitive substring of email or name, paginated, deleted customers excluded', async () => {
    const { token } = await newMerchant();
    const [ann, bob, carol, dan] = await seed(token, [
      { email: 'ann@shop.example', name: 'Ann Lee' },
      { email: 'bob@other.example', name: 'Bobby Tables' },
      { email: 'carol@shop.example', name: null },
      { email: 'dan@elsewhere.example', name: 'Dan SHOPper' },
    ]);
    const q = async (qs: string) => (await api.get(`/customers?${qs}`, token)).body;

    const shop = await q('search=SHOP');
    expect(ids(shop)).toEqual([dan, carol, ann]);
    expect(shop.meta).toMatchObject({ total: 3, last_page: 1, from: 1, to: 3 });
    expect(ids(await q('search=bobby%20t'))).toEqual([bob]);
    expect(ids(await q('search=ann%40shop'))).toEqual([ann]);

    const p2 = await q('search=shop&per_page=2&page=2');
    expect(ids(p2)).toEqual([ann]);
    expect(p2.meta).toEqual({ current_page: 2, from: 3, last_page: 2, per_page: 2, to: 3, total: 3, next_cursor: null });
    const past = await q('search=shop&per_page=2&page=3');
    expect(past).toEqual({
      data: [],
      meta: { current_page: 3, from: null, last_page: 2, per_page: 2, to: null, total: 3, next_cursor: null },
    });
    expect(await q('search=zzz')).toEqual({
      data: [],
      meta: { current_page: 1, from: null, last_page: 1, per_page: 20, to: null, total: 0, next_cursor: null },
    });
    // A search's cursor reads on after the customer it names; under another term it is refused.
    const s1 = await q('search=shop&per_page=2');
    expect(ids(s1)).toEqual([dan, carol]);
    const s2 = await q(`search=shop&per_page=2&cursor=${encodeURIComponent(s1.meta.next_cursor)}`);
    expect([ids(s2), s2.meta]).toEqual([
      [ann],
      { current_page: 2, from: 3, last_page: 2, per_page: 2, to: 3, total: 3, next_cursor: null },
    ]);
    const other = await api.get(`/customers?search=bob&cursor=${encodeURIComponent(s1.meta.next_cursor)}`, token);
    expect([other.status, Object.keys(other.body.errors ?? {})]).toEqual([422, ['cursor']]);
    // an empty search is no filter
    expect((await q('search=')).meta.total).toBe(4);

    expect((await api.del(`/customers/${carol}`, token)).status).toBe(204);
    expect(ids(await q('search=shop'))).toEqual([dan, ann]);
    expect((await q('search=shop')).meta.total).toBe(2);
  });

  it('search reads an index holding only id, email and name of live customers (small rows, small read capacity)', async () => {
    const { token, merchantId } = await newMerchant();
    const [keep, gone] = await seed(token, [
      { email: 'keep@shop.example', name: 'Keep', metadata: { note: 'x'.repeat(2000) } },
      { email: 'gone@shop.example', name: 'Gone' },
    ]);
    expect((await api.del(`/customers/${gone}`, token)).status).toBe(204);
    const rows = await searchIndexRows(merchantId);
    expect(rows.map((r) => r.id)).toEqual([keep]);
    expect(Object.keys(rows[0]).sort()).toEqual(['email', 'gsi4pk', 'gsi4sk', 'id', 'name', 'pk', 'sk']);
  });

  it('the search index is spread over 4 partition keys by customer id; a search merges them newest first', async () => {
    const { token, merchantId } = await newMerchant();
    // Imported with their own dates, out of id order: the merge follows created_at, then id.
    const days = [
      '2024-03-01',
      '2024-01-01',
      '2024-05-01',
      '2024-01-01',
      '2024-02-01',
      '2024-05-01',
      '2024-04-01',
      '2024-01-01',
      '2024-06-01',
    ];
    const created = await seed(
      token,
      days.map((day, i) => ({ email: `m${i}@merge.example`, name: `Merge ${i}`, created_at: `${day}T00:00:00Z` })),
    );
    const rows = await searchIndexRows(merchantId);
    expect(rows).toHaveLength(days.length);
    for (const row of rows) expect(row.gsi4pk, String(row.id)).toBe(customerSearchPartitions(merchantId)[row.id % CUSTOMER_SEARCH_SHARDS]);
    expect(new Set(rows.map((r) => r.gsi4pk)).size).toBe(CUSTOMER_SEARCH_SHARDS);

    const newestFirst = created
      .map((id, i) => ({ id, day: days[i] }))
      .sort((a, b) => b.day.localeCompare(a.day) || b.id - a.id)
      .map((c) => c.id);
    const listed = (await api.get('/customers?per_page=100', token)).body;
    expect(ids(listed)).toEqual(newestFirst);
    const found = (await api.get('/customers?search=merge&per_page=100', token)).body;
    expect(ids(found)).toEqual(newestFirst);
    expect(found.data).toEqual(listed.data);
    // Paged by cursor across the shards' rows: every customer once, in the same order.
    const paged: number[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: Row[]; meta: { next_cursor: string | null } } = (
        await api.get(`/customers?search=merge&per_page=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, token)
      ).body;
      paged.push(...ids(page));
      cursor = page.meta.next_cursor;
    } while (cursor);
    expect(paged).toEqual(newestFirst);
  });

  it('page 1 costs 4 DynamoDB requests, the same with 150 customers as with 5 (two more for a page of 100)', async () => {
    const small = await newMerchant();
    const large = await newMerchant();
    await seed(small.token, people(5));
    await seed(large.token, people(150));

    const a = await api.counted('GET', '/customers', { token: small.token });
    const b = await api.counted('GET', '/customers', { token: large.token });
    const c = await api.counted('GET', '/customers?per_page=100', { token: large.token });
    expect(a.res.body.meta.total).toBe(5);
    expect(b.res.body.meta).toMatchObject({ total: 150, last_page: 8 });
    expect(b.res.body.data).toHaveLength(20);
    expect(c.res.body.data).toHaveLength(100);
    // The pipeline's two, the list Query, then the customers, their timeline heads (mrr,
    // subscription_status) and the total's shards in one BatchGetItem.
    expect(a.requests).toBe(4);
    expect(a.byCommand).toMatchObject({ QueryCommand: 1, BatchGetItemCommand: 1 });
    expect(b.requests).toBe(a.requests);
    // 100 customers, their 100 heads and the 48 shards of the total are 248 keys: BatchGetItem
    // takes 100 a request, so a page of more than 26 reads them in more requests at once (docs/customers.md).
    expect(c.requests).toBe(a.requests + 2);
    // A cursor page 100 customers in costs what page 1 costs.
    const deep = await api.counted('GET', `/customers?cursor=${encodeURIComponent(c.res.body.meta.next_cursor)}`, { token: large.token });
    expect(deep.res.body.meta).toMatchObject({ current_page: 6, from: 101, to: 120 });
    expect(deep.requests).toBe(a.requests);

    // a deep page is still right
    const last = await api.get('/customers?per_page=20&page=8', large.token);
    expect(last.body.data).toHaveLength(10);
    expect(last.body.data.at(-1).email).toBe('p0@example.com');
  });

  it('a search costs 8 DynamoDB requests (6 when nothing matches): one Query of each of the 4 search index shards, at once', async () => {
    const { token } = await newMerchant();
    await seed(token, people(30));
    // The pipeline's two, a Query of each shard (sent together), then the page's customers and
    // after them their timeline heads, one BatchGetItem each.
    const hit = await api.counted('GET', '/customers?search=p1', { token });
    expect(hit.res.body.meta.total).toBe(11);
    expect(hit.requests).toBe(8);
    expect(hit.byCommand).toEqual({
      GetItemCommand: 1,
      UpdateItemCommand: 1,
      QueryCommand: CUSTOMER_SEARCH_SHARDS,
      BatchGetItemCommand: 2,
    });
    const none = await api.counted('GET', '/customers?search=zzz', { token });
    expect(none.res.body.meta.total).toBe(0);
    expect(none.requests).toBe(6);
  });
});
