import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { NOT_FOUND, createOrder, expect422, listAll } from './helpers.ts';

const api = useApi();
afterEach(() => resetClock());

describe('GET /orders/{orderNo}', () => {
  it('finds URL-encoded order numbers; unknown and other merchants’ orders are 404', async () => {
    const { token } = await newMerchant();
    const other = await newMerchant();
    const odd = ['A#1?x', 'A%B', 'ü-訂單-1', 'a+b&c=d', 'x.y~z'];
    const created = [];
    for (const orderNo of odd) created.push(await createOrder(api, token, { order_no: orderNo }));
    for (const o of created) {
      const r = await api.get(`/orders/${encodeURIComponent(o.order_no)}`, token);
      expect(r.status, o.order_no).toBe(200);
      expect(r.body.data).toEqual(o);
    }
    // A%B is not A%25B: decoding happens once.
    const literal = await createOrder(api, token, { order_no: 'A%25B' });
    expect((await api.get(`/orders/${encodeURIComponent('A%25B')}`, token)).body.data).toEqual(literal);
    expect((await api.get(`/orders/${encodeURIComponent('A%B')}`, token)).body.data.order_no).toBe('A%B');

    const unknown = await api.get('/orders/NOPE-1', token);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(NOT_FOUND);
    const foreign = await api.get(`/orders/${encodeURIComponent('A#1?x')}`, other.token);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(NOT_FOUND);
  });
});

describe('GET /orders', () => {
  // One merchant with orders on several days and customers, shared by the read-only list tests.
  let token: string;
  let all: any[]; // newest first, as the list must return them
  let ann: any;
  let bob: any;

  beforeAll(async () => {
    ({ token } = await newMerchant());
    const clock = fixedClock('2026-01-30T23:59:59Z');
    const plan: [string, Record<string, unknown>][] = [
      ['2026-01-30T23:59:59Z', { order_no: 'L-1', customer_email: 'ann@example.com', customer_name: 'Ann', status: 'paid' }],
      ['2026-01-31T00:00:00Z', { order_no: 'L-2', customer_email: 'bob@example.com', customer_name: 'Bob', status: 'pending' }],
      ['2026-01-31T12:00:00Z', { order_no: 'L-3', customer_email: 'ann@example.com', status: 'failed', payment_method: 'atm' }],
      // Two orders in the same second: the higher id comes first.
      ['2026-01-31T12:00:00Z', { order_no: 'L-4', customer_email: 'bob@example.com', status: 'paid', currency: 'USD' }],
      ['2026-01-31T23:59:59Z', { order_no: 'L-5', customer_email: 'ann@example.com', status: 'cancelled' }],
      ['2026-02-01T00:00:00Z', { order_no: 'L-6', customer_email: 'ann@example.com', status: 'paid', payment_method: 'cvs' }],
      ['2026-02-02T08:00:00Z', { order_no: 'L-7', customer_email: 'bob@example.com', status: 'refunded' }],
    ];
    const created = [];
    for (const [at, body] of plan) {
      clock.set(at);
      created.push(await createOrder(api, token, body));
    }
    resetClock();
    all = created.reverse();
    ann = (await api.get(`/customers/${all.find((o) => o.order_no === 'L-1').customer_id}`, token)).body.data;
    bob = (await api.get(`/customers/${all.find((o) => o.order_no === 'L-2').customer_id}`, token)).body.data;
  });

  const nos = (r: { body: { data: { order_no: string }[] } }) => r.body.data.map((o) => o.order_no);
  const expected = (pred: (o: any) => boolean) => all.filter(pred).map((o) => o.order_no);

  it('lists full orders, newest first (created_at desc, then id desc)', async () => {
    const r = await api.get('/orders', token);
    expect(r.status).toBe(200);
    expect(nos(r)).toEqual(['L-7', 'L-6', 'L-5', 'L-4', 'L-3', 'L-2', 'L-1']);
    expect(r.body.data).toEqual(all);
    for (const o of r.body.data) {
      for (const field of ['status', 'payment_method', 'source', 'customer_email', 'customer_name', 'billing_cycle', 'paid_at']) {
        expect(o).toHaveProperty(field);
      }
    }
    expect(r.body.data.find((o: any) => o.order_no === 'L-3')).toMatchObject({
      status: 'failed',
      payment_method: 'atm',
      source: 'api',
      customer_name: 'Ann',
    });
    expect(r.body.meta).toEqual({ current_page: 1, from: 1, last_page: 1, per_page: 20, to: 7, total: 7, next_cursor: null });
  });

  it('filters by status', async () => {
    for (const status of ['pending', 'paid', 'failed', 'refunded', 'cancelled']) {
      const r = await api.get(`/orders?status=${status}`, token);
      expect(nos(r), status).toEqual(expected((o) => o.status === status));
      expect(r.body.meta.total).toBe(expected((o) => o.status === status).length);
    }
  });

  it('filters by customer_id and customer_email (case-insensitive)', async () => {
    const byId = await api.get(`/orders?customer_id=${ann.id}`, token);
    expect(nos(byId)).toEqual(expected((o) => o.customer_id === ann.id));
    expect(byId.body.meta.total).toBe(4);
    const byEmail = await api.get(`/orders?customer_email=${encodeURIComponent('BOB@example.com')}`, token);
    expect(nos(byEmail)).toEqual(['L-7', 'L-4', 'L-2']);
    const both = await api.get(`/orders?customer_email=bob%40example.com&customer_id=${bob.id}`, token);
    expect(nos(both)).toEqual(['L-7', 'L-4', 'L-2']);
    const mismatch = await api.get(`/orders?customer_email=bob%40example.com&customer_id=${ann.id}`, token);
    expect(mismatch.body).toEqual({
      data: [],
      meta: { current_page: 1, from: null, last_page: 1, per_page: 20, to: null, total: 0, next_cursor: null },
    });
    expect((await api.get('/orders?customer_email=nobody%40example.com', token)).body.meta.total).toBe(0);
    expect((await api.get('/orders?customer_id=999999', token)).body.meta.total).toBe(0);
  });

  it('filters by start_date / end_date, inclusive, as dates or date-times', async () => {
    const cases: [string, string[]][] = [
      ['start_date=2026-01-31', ['L-7', 'L-6', 'L-5', 'L-4', 'L-3', 'L-2']],
      ['end_date=2026-01-31', ['L-5', 'L-4', 'L-3', 'L-2', 'L-1']],
      ['start_date=2026-01-31&end_date=2026-01-31', ['L-5', 'L-4', 'L-3', 'L-2']],
      ['start_date=2026-01-30&end_date=2026-01-30', ['L-1']],
      ['start_date=2026-02-03', []],
      ['start_date=2026-01-31T12:00:00Z&end_date=2026-02-01T00:00:00Z', ['L-6', 'L-5', 'L-4', 'L-3']],
      ['start_date=2026-01-31T12:00:01Z&end_date=2026-01-31T23:59:59Z', ['L-5']],
      // offsets convert to UTC: 08:00+08:00 is midnight UTC
      [`start_date=${encodeURIComponent('2026-02-01T08:00:00+08:00')}`, ['L-7', 'L-6']],
      [`end_date=${encodeURIComponent('2026-01-31T08:00:00+08:00')}`, ['L-2', 'L-1']],
    ];
    for (const [query, want] of cases) {
      const r = await api.get(`/orders?${query}`, token);
      expect(r.status, query).toBe(200);
      expect(nos(r), query).toEqual(want);
      expect(r.body.meta.total, query).toBe(want.length);
    }
  });

  it('combines filters', async () => {
    const cases: [string, string[]][] = [
      [`status=paid&customer_id=${ann.id}`, ['L-6', 'L-1']],
      [`status=paid&start_date=2026-01-31`, ['L-6', 'L-4']],
      [`status=paid&customer_email=ann%40example.com&end_date=2026-01-31`, ['L-1']],
      [`customer_id=${bob.id}&start_date=2026-01-31&end_date=2026-02-01`, ['L-4', 'L-2']],
      [`status=refunded&customer_id=${ann.id}`, []],
    ];
    for (const [query, want] of cases) {
      const r = await api.get(`/orders?${query}`, token);
      expect(nos(r), query).toEqual(want);
      expect(r.body.meta.total, query).toBe(want.length);
    }
  });

  it('paginates with correct meta, also past the end and with filters', async () => {
    const pages = [];
    for (let page = 1; page <= 4; page++) {
      const r = await api.get(`/orders?per_page=2&page=${page}`, token);
      expect(r.status).toBe(200);
      pages.push(r);
    }
    expect(pages.map(nos)).toEqual([['L-7', 'L-6'], ['L-5', 'L-4'], ['L-3', 'L-2'], ['L-1']]);
    expect(pages.map((p) => p.body.meta)).toEqual(
      [1, 2, 3, 4].map((page) => ({
        current_page: page,
        from: page * 2 - 1,
        last_page: 4,
        per_page: 2,
        to: Math.min(page * 2, 7),
        total: 7,
        next_cursor: page < 4 ? expect.any(String) : null,
      })),
    );
    // The cursors walk the same pages.
    let cursor = pages[0].body.meta.next_cursor;
    for (const expectedPage of pages.slice(1)) {
      const r = await api.get(`/orders?per_page=2&cursor=${encodeURIComponent(cursor)}`, token);
      expect([nos(r), r.body.meta.current_page]).toEqual([nos(expectedPage), expectedPage.body.meta.current_page]);
      cursor = r.body.meta.next_cursor;
    }
    expect(cursor).toBeNull();
    const past = await api.get('/orders?per_page=2&page=9', token);
    expect(past.body).toEqual({
      data: [],
      meta: { current_page: 9, from: null, last_page: 4, per_page: 2, to: null, total: 7, next_cursor: null },
    });
    const filtered = await api.get(`/orders?customer_id=${ann.id}&per_page=3&page=2`, token);
    expect(nos(filtered)).toEqual(expected((o) => o.customer_id === ann.id).slice(3));
    expect(filtered.body.meta).toEqual({ current_page: 2, from: 4, last_page: 2, per_page: 3, to: 4, total: 4, next_cursor: null });
    const both = await api.get(`/orders?status=paid&customer_id=${ann.id}&per_page=1&page=2`, token);
    expect(nos(both)).toEqual(['L-1']);
    expect(both.body.meta).toEqual({ current_page: 2, from: 2, last_page: 2, per_page: 1, to: 2, total: 2, next_cursor: null });
    const statusPage = await api.get('/orders?status=paid&per_page=1&page=2', token);
    expect(nos(statusPage)).toEqual(['L-4']);
    expect(statusPage.body.meta).toMatchObject({ total: 3, last_page: 3, from: 2, to: 2 });
    const { orders, total } = await listAll(api, token);
    expect(total).toBe(7);
    expect(orders).toEqual(all);
  });

  it('a page whose offset reaches 10,000 is a 422 on page that points to the cursor, with or without filters; below it, a page past the end is empty with its meta', async () => {
    const cases: [string, number][] = [
      ['', 7],
      ['status=paid&', 3],
      [`customer_id=${ann.id}&`, 4],
      ['customer_email=bob%40example.com&', 3],
      ['start_date=2026-01-01&end_date=2026-12-31&', 7],
      ['end_date=2026-01-31&', 5],
      [`status=paid&customer_id=${ann.id}&start_date=2026-01-31&`, 1],
      ['customer_email=nobody%40example.com&', 0],
    ];
    for (const [filter, total] of cases) {
      for (const [page, perPage] of [
        [101, 100],
        [21474838, 100],
        [2 ** 31 - 1, 100],
        [10_001, 1],
      ]) {
        const r = await api.get(`/orders?${filter}page=${page}&per_page=${perPage}`, token);
        expect(r.status, `${filter} page ${page}`).toBe(422);
        expect(r.body.errors, `${filter} page ${page}`).toEqual({
          page: [expect.stringContaining('meta.next_cursor with the cursor parameter')],
        });
      }
      const [page, perPage] = [100, 100];
      const r = await api.get(`/orders?${filter}page=${page}&per_page=${perPage}`, token);
      expect(r.body, `${filter} page ${page}`).toEqual({
        data: [],
        meta: {
          current_page: page,
          from: null,
          last_page: Math.max(1, Math.ceil(total / perPage)),
          per_page: perPage,
          to: null,
          total,
          next_cursor: null,
        },
      });
    }
  });

  it('a page past the end costs no page query', async () => {
    // Unfiltered or by status the total is one BatchGetItem of the sharded totals, and no page query.
    for (const query of ['page=3&per_page=5', 'status=paid&page=2&per_page=3', 'page=100&per_page=100']) {
      const { res, byCommand } = await api.counted('GET', `/orders?${query}`, { token });
      expect(res.body.data, query).toEqual([]);
      expect(byCommand.QueryCommand ?? 0, query).toBe(0);
      expect(byCommand.BatchGetItemCommand, query).toBe(1);
    }
    // With a customer or date filter the total is one counting Query, and that is all.
    for (const query of [`customer_id=${ann.id}&page=3&per_page=2`, 'start_date=2026-02-01&page=2&per_page=5']) {
      const { res, byCommand } = await api.counted('GET', `/orders?${query}`, { token });
      expect(res.body.data, query).toEqual([]);
      expect(byCommand.QueryCommand, query).toBe(1);
    }
    // Page 1: token, rate, the page's entries, then the orders with the totals by key; a page inside the list still reads it.
    const first = await api.counted('GET', '/orders?per_page=5', { token });
    expect(nos(first.res)).toEqual(['L-7', 'L-6', 'L-5', 'L-4', 'L-3']);
    expect(first.requests).toBe(5);
    const inside = await api.counted('GET', '/orders?page=2&per_page=5', { token });
    expect(nos(inside.res)).toEqual(['L-2', 'L-1']);
    expect(inside.res.body.meta).toEqual({ current_page: 2, from: 6, last_page: 2, per_page: 5, to: 7, total: 7, next_cursor: null });
    expect(inside.byCommand.QueryCommand).toBe(2); // skip 5 keys, then the page's entries
    expect(inside.byCommand.BatchGetItemCommand).toBe(3); // the totals first (past the end?), the orders, their customers
  });

  it('numbers too large to be exact are refused with their bound, not "at least 1"', async () => {
    const page = await api.get('/orders?page=99999999999999999999', token);
    expect(page.status).toBe(422);
    expect(page.body.errors).toEqual({ page: ['The page field must not be greater than 2147483647.'] });
    const perPage = await api.get('/orders?per_page=99999999999999999999', token);
    expect(perPage.body.errors).toEqual({ per_page: ['The per page field must be between 1 and 100.'] });
    const customer = await api.get('/orders?customer_id=99999999999999999999', token);
    expect(customer.body.errors).toEqual({ customer_id: ['The customer id field must not be greater than 9007199254740991.'] });
    expect((await api.get(`/orders?customer_id=${Number.MAX_SAFE_INTEGER}`, token)).body.meta.total).toBe(0);
  });

  it('bad filter and page values are a 422 on that parameter', async () => {
    const cases: [string, string][] = [
      ['status=shipped', 'status'],
      ['customer_id=abc', 'customer_id'],
      ['customer_id=0', 'customer_id'],
      ['customer_id=-1', 'customer_id'],
      ['customer_email=not-an-email', 'customer_email'],
      ['start_date=2026-13-01', 'start_date'],
      ['start_date=yesterday', 'start_date'],
      ['end_date=2026-02-30', 'end_date'],
      ['end_date=2026-01-01T00:00:00', 'end_date'],
      ['page=0', 'page'],
      ['page=abc', 'page'],
      ['page=1.5', 'page'],
      ['per_page=0', 'per_page'],
      ['per_page=101', 'per_page'],
      ['per_page=x', 'per_page'],
    ];
    for (const [query, field] of cases) expect422(await api.get(`/orders?${query}`, token), field);
  });

  it('a start_date after the end_date is refused as a 422 on end_date, not a server error', async () => {
    const r = await api.get('/orders?start_date=2026-02-01&end_date=2026-01-31', token);
    expect422(r, 'end_date');
    expect422(await api.get('/orders?start_date=2026-01-31T12:00:01Z&end_date=2026-01-31T12:00:00Z', token), 'end_date');
    expect422(await api.get('/orders?start_date=2026-13-01&end_date=2026-01-01', token), 'start_date');
    const same = await api.get('/orders?start_date=2026-01-31T12:00:00Z&end_date=2026-01-31T12:00:00Z', token);
    expect(nos(same)).toEqual(['L-4', 'L-3']);
  });
});

describe('orders of a deleted customer', () => {
  it('still show the customer’s email and name in the list and the detail', async () => {
    const { token } = await newMerchant();
    const o = await createOrder(api, token, { customer_email: 'gone@example.com', customer_name: 'Gone Soon', status: 'paid' });
    const del = await api.del(`/customers/${o.customer_id}`, token);
    expect(del.status).toBe(204);
    expect((await api.get(`/customers/${o.customer_id}`, token)).status).toBe(404);
    const list = await api.get('/orders', token);
    expect(list.body.data).toEqual([o]);
    expect(list.body.data[0]).toMatchObject({ customer_email: 'gone@example.com', customer_name: 'Gone Soon' });
    expect((await api.get(`/orders/${o.order_no}`, token)).body.data).toEqual(o);
    expect((await api.get(`/orders?customer_id=${o.customer_id}`, token)).body.data).toEqual([o]);

    // The email is free again: a new order makes a new customer; the old order keeps the old one.
    const again = await createOrder(api, token, { customer_email: 'gone@example.com', customer_name: 'New Owner' });
    expect(again.customer_id).not.toBe(o.customer_id);
    expect(again).toMatchObject({ customer_email: 'gone@example.com', customer_name: 'New Owner' });
    expect((await api.get(`/orders/${o.order_no}`, token)).body.data).toEqual(o);
    expect((await api.get('/orders?customer_email=gone%40example.com', token)).body.data).toEqual([again]);
    // A status change of the old order still moves the deleted customer's figures (history counts).
    const refunded = await api.patch(`/orders/${o.order_no}`, token, { status: 'refunded' });
    expect(refunded.status).toBe(200);
    expect(refunded.body.data).toMatchObject({ customer_email: 'gone@example.com', customer_name: 'Gone Soon' });
  });
});
