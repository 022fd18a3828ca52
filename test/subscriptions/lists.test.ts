import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { factoriesFor } from '../support/factories.ts';
import { expect422 } from '../orders/helpers.ts';

/**
 * GET /subscriptions and GET /subscriptions/events (docs/api-conventions.md, and the subscription rules): order, filters, their
 * combinations, pagination meta, soft deletes; POST /subscriptions/events as seen in the lists.
 */
const api = useApi();
const { newCustomerId, createSubscription } = factoriesFor(api);
afterEach(() => resetClock());

type Sub = { id: number; customer_id: number; status: string; plan_name: string; created_at: string; [k: string]: unknown };
type Evt = {
  id: number;
  customer_id: number;
  subscription_id: number | null;
  event_type: string;
  occurred_at: string;
  [k: string]: unknown;
};

const ok = async (method: 'PUT' | 'DELETE', path: string, token: string, body?: unknown) => {
  const r = await api.request(method, path, { token, body });
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(method === 'DELETE' ? 204 : 200);
  return r.body?.data;
};

const record = async (token: string, body: Record<string, unknown>): Promise<Evt> => {
  const r = await api.post('/subscriptions/events', token, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data;
};

/** One list page that must answer 200. */
const page = async (token: string, path: string) => {
  const r = await api.get(path, token);
  expect(r.status, `GET ${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body as { data: any[]; meta: Record<string, number | null> };
};

/** The ids of one page of a list (per_page 100) and its total. */
const ids = async (token: string, path: string, query = '') => {
  const body = await page(token, `${path}?per_page=100${query ? `&${query}` : ''}`);
  return { ids: body.data.map((x) => x.id as number), total: body.meta.total };
};

const meta = (current_page: number, per_page: number, total: number, from: number | null, to: number | null) => ({
  current_page,
  from,
  last_page: Math.max(1, Math.ceil(total / per_page)),
  per_page,
  to,
  total,
  // A cursor follows a full page with more after it.
  next_cursor: to !== null && to < total ? expect.any(String) : null,
});

describe('GET /subscriptions', () => {
  it('newest first: created_at desc, then id desc', async () => {
    const clock = fixedClock('2026-04-01T10:00:00Z');
    const { token } = await newMerchant();
    const c = [
      await newCustomerId(token),
      await newCustomerId(token),
      await newCustomerId(token),
      await newCustomerId(token, { email: 'dee@lists.test', name: 'Dee' }),
    ];
    clock.set('2026-04-01T10:00:00Z');
    const a = await createSubscription<Sub>(token, c[0]);
    clock.set('2026-04-03T10:00:00Z');
    const b = await createSubscription<Sub>(token, c[1]);
    clock.set('2026-04-02T10:00:00Z');
    const mid = await createSubscription<Sub>(token, c[2]);
    clock.set('2026-04-03T10:00:00Z'); // same created_at as b, larger id
    const d = await createSubscription<Sub>(token, c[3]);
    expect(d.id).toBeGreaterThan(b.id);
    expect([a, b, mid, d].map((s) => s.created_at)).toEqual([
      '2026-04-01T10:00:00Z',
      '2026-04-03T10:00:00Z',
      '2026-04-02T10:00:00Z',
      '2026-04-03T10:00:00Z',
    ]);

    const list = await page(token, '/subscriptions');
    expect(list.data.map((s) => s.id)).toEqual([d.id, b.id, mid.id, a.id]);
    // list items are GET /subscriptions/{id}'s shape with the customer named, as orders are
    expect(list.data[0]).toEqual({ ...d, customer_email: 'dee@lists.test', customer_name: 'Dee' });
    const { customer_email: _e, customer_name: _n, ...listed } = list.data[3] as Sub & Record<string, unknown>;
    expect(listed).toEqual((await api.get(`/subscriptions/${a.id}`, token)).body.data);
    // created_at, not started_at, orders the list
    clock.set('2026-04-04T10:00:00Z');
    const c5 = await newCustomerId(token);
    const backdated = await createSubscription<Sub>(token, c5, { started_at: '2020-01-01T00:00:00Z' });
    expect((await ids(token, '/subscriptions')).ids[0]).toBe(backdated.id);
  });

  it('filters by customer_id, status (active / paused / cancelled) and plan_name (exact), and their combinations', async () => {
    const clock = fixedClock('2026-05-01T00:00:00Z');
    const { token } = await newMerchant();
    const [c1, c2, c3, c4, c5] = [
      await newCustomerId(token),
      await newCustomerId(token),
      await newCustomerId(token),
      await newCustomerId(token),
      await newCustomerId(token),
    ];
    const at = (day: number) => clock.set(`2026-05-${String(day).padStart(2, '0')}T00:00:00Z`);
    at(1);
    const s1 = await createSubscription<Sub>(token, c1, { plan_name: 'Basic' });
    at(2);
    await ok('PUT', `/subscriptions/${s1.id}/cancel`, token, {});
    const s2 = await createSubscription<Sub>(token, c1, { plan_name: 'Pro' }); // c1's live slot is free again
    at(3);
    const s3 = await createSubscription<Sub>(token, c2, { plan_name: 'Basic' });
    await ok('PUT', `/subscriptions/${s3.id}/pause`, token, {});
    at(4);
    const s4 = await createSubscription<Sub>(token, c3, { plan_name: 'Pro' });
    at(5);
    const s5 = await createSubscription<Sub>(token, c4, { plan_name: 'Basic' });
    await ok('PUT', `/subscriptions/${s5.id}/cancel`, token, { reason: 'moved' });
    at(6);
    const s6 = await createSubscription<Sub>(token, c5, { plan_name: 'Pro Annual' });
    // a plan change moves the subscription between plan_name results; a pause and reactivation return it to active
    await ok('PUT', `/subscriptions/${s6.id}`, token, { plan_name: 'Pro Yearly' });
    await ok('PUT', `/subscriptions/${s6.id}/pause`, token, {});
    await ok('PUT', `/subscriptions/${s6.id}/reactivate`, token, {});

    const cases: [string, Sub[]][] = [
      ['', [s6, s5, s4, s3, s2, s1]],
      ['status=active', [s6, s4, s2]],
      ['status=paused', [s3]],
      ['status=cancelled', [s5, s1]],
      [`customer_id=${c1}`, [s2, s1]],
      [`customer_id=${c2}`, [s3]],
      ['plan_name=Basic', [s5, s3, s1]],
      ['plan_name=Pro', [s4, s2]],
      ['plan_name=Pro%20Yearly', [s6]],
      ['plan_name=Pro%20Annual', []],
      ['plan_name=basic', []], // exact: case matters
      ['plan_name=Bas', []], // exact: no prefix match
      [`customer_id=${c1}&status=cancelled`, [s1]],
      [`customer_id=${c1}&status=active`, [s2]],
      [`customer_id=${c1}&status=paused`, []],
      [`customer_id=${c2}&status=paused`, [s3]],
      ['status=active&plan_name=Pro', [s4, s2]],
      ['status=cancelled&plan_name=Basic', [s5, s1]],
      ['status=paused&plan_name=Pro', []],
      [`customer_id=${c1}&plan_name=Basic`, [s1]],
      [`customer_id=${c1}&status=active&plan_name=Pro`, [s2]],
      [`customer_id=${c1}&status=active&plan_name=Basic`, []],
      [`customer_id=${c3}&status=active&plan_name=Pro`, [s4]],
      ['customer_id=999999', []],
    ];
    for (const [query, want] of cases) {
      const got = await ids(token, '/subscriptions', query);
      expect(got, query || '(no filter)').toEqual({ ids: want.map((s) => s.id), total: want.length });
    }
    // every listed item carries the status it is filtered by
    for (const status of ['active', 'paused', 'cancelled']) {
      expect(
        (await page(token, `/subscriptions?status=${status}`)).data.every((s) => s.status === status),
        status,
      ).toBe(true);
    }
  });

  it('refuses invalid filter values with a 422 on that parameter', async () => {
    const { token } = await newMerchant();
    for (const [query, field] of [
      ['status=trial', 'status'],
      ['status=Active', 'status'],
      ['customer_id=abc', 'customer_id'],
      ['customer_id=0', 'customer_id'],
      ['customer_id=-1', 'customer_id'],
      ['per_page=0', 'per_page'],
      ['per_page=101', 'per_page'],
      ['page=0', 'page'],
      ['page=x', 'page'],
    ]) {
      expect422(await api.get(`/subscriptions?${query}`, token), field);
    }
  });

  it('pagination meta: pages, last page, a page past the end (data [] with correct meta), filtered and not', async () => {
    const clock = fixedClock('2026-06-01T00:00:00Z');
    const { token } = await newMerchant();
    const empty = await page(token, '/subscriptions');
    expect(empty).toEqual({ data: [], meta: meta(1, 20, 0, null, null) });
    expect((await page(token, '/subscriptions?page=3&status=paused')).meta).toEqual(meta(3, 20, 0, null, null));

    const customer = await newCustomerId(token);
    const subs: Sub[] = [];
    for (let i = 0; i < 5; i++) {
      clock.set(`2026-06-0${i + 1}T00:00:00Z`);
      const s = await createSubscription<Sub>(token, i === 4 ? await newCustomerId(token) : customer, {
        plan_name: i % 2 ? 'Odd' : 'Even',
      });
      if (i < 3) await ok('PUT', `/subscriptions/${s.id}/cancel`, token, {}); // one customer: keep its slot free
      subs.push(s);
    }
    const newest = [...subs].reverse().map((s) => s.id);

    const pages = [];
    for (let p = 1; p <= 4; p++) pages.push(await page(token, `/subscriptions?per_page=2&page=${p}`));
    expect(pages.map((p) => p.meta)).toEqual([meta(1, 2, 5, 1, 2), meta(2, 2, 5, 3, 4), meta(3, 2, 5, 5, 5), meta(4, 2, 5, null, null)]);
    expect(pages.map((p) => p.data.map((s) => s.id))).toEqual([newest.slice(0, 2), newest.slice(2, 4), newest.slice(4), []]);
    expect(pages[2].meta.last_page).toBe(3);

    const far = await page(token, '/subscriptions?per_page=2&page=1000');
    expect(far).toEqual({ data: [], meta: meta(1000, 2, 5, null, null) });
    expect((await page(token, '/subscriptions')).meta).toEqual(meta(1, 20, 5, 1, 5));
    expect((await page(token, '/subscriptions?per_page=5')).meta).toEqual(meta(1, 5, 5, 1, 5));

    // by status (totals from the counters): cancelled are subs 0..2, newest first
    const cancelled = [subs[2].id, subs[1].id, subs[0].id];
    const c1 = await page(token, '/subscriptions?status=cancelled&per_page=2&page=1');
    const c2 = await page(token, '/subscriptions?status=cancelled&per_page=2&page=2');
    const c3 = await page(token, '/subscriptions?status=cancelled&per_page=2&page=3');
    expect([c1.meta, c2.meta, c3.meta]).toEqual([meta(1, 2, 3, 1, 2), meta(2, 2, 3, 3, 3), meta(3, 2, 3, null, null)]);
    expect([...c1.data, ...c2.data, ...c3.data].map((s) => s.id)).toEqual(cancelled);

    // by customer (counted through the index) and by plan
    const byCustomer = [subs[3].id, subs[2].id, subs[1].id, subs[0].id];
    const k1 = await page(token, `/subscriptions?customer_id=${customer}&per_page=3`);
    const k2 = await page(token, `/subscriptions?customer_id=${customer}&per_page=3&page=2`);
    const k3 = await page(token, `/subscriptions?customer_id=${customer}&per_page=3&page=3`);
    expect([k1.meta, k2.meta, k3.meta]).toEqual([meta(1, 3, 4, 1, 3), meta(2, 3, 4, 4, 4), meta(3, 3, 4, null, null)]);
    expect([...k1.data, ...k2.data].map((s) => s.id)).toEqual(byCustomer);
    const e1 = await page(token, '/subscriptions?plan_name=Even&per_page=2&page=2');
    expect(e1.meta).toEqual(meta(2, 2, 3, 3, 3));
    expect(e1.data.map((s) => s.id)).toEqual([subs[0].id]);
    const e2 = await page(token, '/subscriptions?plan_name=Even&status=cancelled&per_page=1&page=2');
    expect(e2.meta).toEqual(meta(2, 1, 2, 2, 2));
    expect(e2.data.map((s) => s.id)).toEqual([subs[0].id]);
  });

  it('a soft-deleted subscription leaves the list, every filter and the totals (GET 404); its events stay listed', async () => {
    const clock = fixedClock('2026-07-01T00:00:00Z');
    const { token } = await newMerchant();
    const [c1, c2, c3] = [await newCustomerId(token), await newCustomerId(token), await newCustomerId(token)];
    const gone = await createSubscription<Sub>(token, c1, { plan_name: 'Gone' });
    clock.set('2026-07-02T00:00:00Z');
    await ok('PUT', `/subscriptions/${gone.id}`, token, { mrr: '200.00' });
    clock.set('2026-07-03T00:00:00Z');
    const kept = await createSubscription<Sub>(token, c2, { plan_name: 'Gone' });
    clock.set('2026-07-04T00:00:00Z');
    const cancelledGone = await createSubscription<Sub>(token, c3, { plan_name: 'Gone' });
    await ok('PUT', `/subscriptions/${cancelledGone.id}/cancel`, token, {});
    const eventsBefore = await ids(token, '/subscriptions/events');
    expect(eventsBefore.total).toBe(5); // created, upgrade, created, created, cancel

    clock.set('2026-07-05T00:00:00Z');
    await ok('DELETE', `/subscriptions/${gone.id}`, token);
    await ok('DELETE', `/subscriptions/${cancelledGone.id}`, token);

    expect((await api.get(`/subscriptions/${gone.id}`, token)).status).toBe(404);
    expect((await api.get(`/subscriptions/${cancelledGone.id}`, token)).status).toBe(404);
    expect((await api.del(`/subscriptions/${gone.id}`, token)).status).toBe(404);
    expect((await api.put(`/subscriptions/${gone.id}`, token, { mrr: '1' })).status).toBe(404);

    const cases: [string, Sub[]][] = [
      ['', [kept]],
      ['status=active', [kept]],
      ['status=cancelled', []],
      [`customer_id=${c1}`, []],
      [`customer_id=${c3}`, []],
      [`customer_id=${c1}&status=active`, []],
      [`customer_id=${c3}&status=cancelled`, []],
      ['plan_name=Gone', [kept]],
      ['status=active&plan_name=Gone', [kept]],
    ];
    // soft: every list shape is reported, and the events below are still checked
    for (const [query, want] of cases) {
      expect
        .soft(await ids(token, '/subscriptions', query), query || '(no filter)')
        .toEqual({ ids: want.map((s) => s.id), total: want.length });
    }
    expect.soft((await page(token, '/subscriptions')).meta).toEqual(meta(1, 20, 1, 1, 1));

    // events stay: unfiltered, by subscription, by customer, by type
    expect(await ids(token, '/subscriptions/events')).toEqual(eventsBefore);
    const goneEvents = await page(token, `/subscriptions/events?subscription_id=${gone.id}`);
    expect(goneEvents.data.map((e) => e.event_type)).toEqual(['upgrade', 'created']);
    expect(goneEvents.meta.total).toBe(2);
    expect((await ids(token, '/subscriptions/events', `customer_id=${c3}`)).total).toBe(2);
    expect((await ids(token, '/subscriptions/events', 'event_type=cancel')).total).toBe(1);

    // the deleted subscription's live slot is free: the customer may subscribe again
    const again = await createSubscription<Sub>(token, c1);
    expect.soft((await ids(token, '/subscriptions', `customer_id=${c1}`)).ids).toEqual([again.id]);
  });
});

describe('GET /subscriptions/events', () => {
  it('newest first by occurred_at, then id desc; API events have source api', async () => {
    fixedClock('2026-08-10T00:00:00Z');
    const { token } = await newMerchant();
    const c = await newCustomerId(token);
    const sub = await createSubscription<Sub>(token, c, { started_at: '2026-08-05T00:00:00Z' });
    const base = { customer_id: c, subscription_id: sub.id, event_type: 'upgrade', old_amount: '1', new_amount: '2' };
    const later = await record(token, { ...base, occurred_at: '2026-08-07T00:00:00Z' });
    const tieA = await record(token, { ...base, occurred_at: '2026-08-06T00:00:00Z' });
    const tieB = await record(token, { ...base, occurred_at: '2026-08-06T02:00:00+02:00' }); // the same instant
    const earliest = await record(token, { ...base, occurred_at: '2026-08-01T00:00:00Z' });
    expect(tieB.occurred_at).toBe('2026-08-06T00:00:00Z');
    expect(tieB.id).toBeGreaterThan(tieA.id);

    const list = await page(token, '/subscriptions/events');
    expect(list.data.map((e) => e.id)).toEqual([later.id, tieB.id, tieA.id, expect.any(Number), earliest.id]);
    const created = list.data[3];
    expect(created).toEqual({
      id: expect.any(Number),
      customer_id: c,
      subscription_id: sub.id,
      event_type: 'created',
      source: 'api',
      old_amount: '0.00',
      new_amount: '100.00',
      amount_change: '100.00',
      old_plan: null,
      new_plan: 'Basic',
      occurred_at: '2026-08-05T00:00:00Z',
      created_at: '2026-08-10T00:00:00Z',
    });
    expect(list.data.filter((e) => e.id !== created.id).every((e) => e.source === 'import')).toBe(true);
  });

  it('filters by customer_id, subscription_id, event_type and an inclusive occurred_at range (dates or date-times), and their combinations', async () => {
    const clock = fixedClock('2026-01-20T00:00:00Z');
    const { token } = await newMerchant();
    const [c1, c2, c3] = [await newCustomerId(token), await newCustomerId(token), await newCustomerId(token)];
    const s1 = await createSubscription<Sub>(token, c1, { started_at: '2026-01-10T00:00:00Z', mrr: '100' }); // created 01-10
    clock.set('2026-02-01T12:00:00Z');
    await ok('PUT', `/subscriptions/${s1.id}`, token, { mrr: '150', plan_name: 'Pro' }); // upgrade 02-01T12:00
    clock.set('2026-02-20T00:00:00Z');
    await ok('PUT', `/subscriptions/${s1.id}/cancel`, token, { cancelled_at: '2026-02-15T23:59:59Z' }); // cancel 02-15T23:59:59
    const s2 = await createSubscription<Sub>(token, c2, { started_at: '2026-01-31T00:00:00Z', mrr: '90' }); // created 01-31
    clock.set('2026-02-01T00:00:00Z');
    await ok('PUT', `/subscriptions/${s2.id}`, token, { mrr: '60' }); // downgrade 02-01T00:00
    clock.set('2026-03-01T00:00:00Z');
    await ok('PUT', `/subscriptions/${s1.id}/reactivate`, token, {}); // reactivated 03-01
    const imp = await record(token, {
      customer_id: c1,
      event_type: 'created',
      old_amount: '0',
      new_amount: '50',
      occurred_at: '2025-12-31T23:59:59Z',
    });
    const imp3 = await record(token, {
      customer_id: c3,
      event_type: 'downgrade',
      old_amount: '80',
      new_amount: '40',
      occurred_at: '2026-02-01T06:00:00Z',
    });

    const all = (await page(token, '/subscriptions/events?per_page=100')).data as Evt[];
    const find = (sub: number | null, type: string, customer = c1) =>
      all.find((e) => e.subscription_id === sub && e.event_type === type && e.customer_id === customer)!.id;
    const E = {
      s1Created: find(s1.id, 'created'),
      s1Upgrade: find(s1.id, 'upgrade'),
      s1Cancel: find(s1.id, 'cancel'),
      s1React: find(s1.id, 'reactivated'),
      s2Created: find(s2.id, 'created', c2),
      s2Down: find(s2.id, 'downgrade', c2),
      imp: imp.id,
      imp3: imp3.id,
    };
    // the full order, newest first by occurred_at
    expect(all.map((e) => e.id)).toEqual([E.s1React, E.s1Cancel, E.s1Upgrade, E.imp3, E.s2Down, E.s2Created, E.s1Created, E.imp]);

    const cases: [string, number[]][] = [
      [`customer_id=${c1}`, [E.s1React, E.s1Cancel, E.s1Upgrade, E.s1Created, E.imp]],
      [`customer_id=${c2}`, [E.s2Down, E.s2Created]],
      [`subscription_id=${s1.id}`, [E.s1React, E.s1Cancel, E.s1Upgrade, E.s1Created]],
      [`subscription_id=${s2.id}`, [E.s2Down, E.s2Created]],
      ['subscription_id=999999', []],
      ['event_type=created', [E.s2Created, E.s1Created, E.imp]],
      ['event_type=upgrade', [E.s1Upgrade]],
      ['event_type=downgrade', [E.imp3, E.s2Down]],
      ['event_type=cancel', [E.s1Cancel]],
      ['event_type=reactivated', [E.s1React]],
      // dates: start inclusive from 00:00:00, end inclusive to 23:59:59
      ['start_date=2026-02-01', [E.s1React, E.s1Cancel, E.s1Upgrade, E.imp3, E.s2Down]],
      ['end_date=2026-01-31', [E.s2Created, E.s1Created, E.imp]],
      ['end_date=2026-02-15', [E.s1Cancel, E.s1Upgrade, E.imp3, E.s2Down, E.s2Created, E.s1Created, E.imp]],
      ['start_date=2026-02-16', [E.s1React]],
      ['start_date=2026-02-01&end_date=2026-02-01', [E.s1Upgrade, E.imp3, E.s2Down]],
      ['end_date=2025-12-31', [E.imp]],
      ['start_date=2026-03-02', []],
      // date-times: inclusive at the exact instant, offsets compared as instants
      ['start_date=2026-02-01T12:00:00Z&end_date=2026-02-15T23:59:59Z', [E.s1Cancel, E.s1Upgrade]],
      ['start_date=2026-02-01T12:00:01Z&end_date=2026-02-15T23:59:58Z', []],
      ['start_date=2026-02-01T13:00:00%2B01:00', [E.s1React, E.s1Cancel, E.s1Upgrade]],
      ['end_date=2026-02-01T00:00:00Z', [E.s2Down, E.s2Created, E.s1Created, E.imp]],
      ['start_date=2026-01-31&end_date=2026-02-01T06:00:00Z', [E.imp3, E.s2Down, E.s2Created]],
      // combinations
      [`customer_id=${c1}&event_type=created`, [E.s1Created, E.imp]],
      [`customer_id=${c1}&start_date=2026-01-01&end_date=2026-01-31`, [E.s1Created]],
      [`customer_id=${c2}&event_type=downgrade&start_date=2026-02-01`, [E.s2Down]],
      [`subscription_id=${s1.id}&event_type=cancel`, [E.s1Cancel]],
      [`subscription_id=${s1.id}&event_type=downgrade`, []],
      [`subscription_id=${s1.id}&customer_id=${c1}`, [E.s1React, E.s1Cancel, E.s1Upgrade, E.s1Created]],
      [`subscription_id=${s1.id}&customer_id=${c2}`, []],
      [`subscription_id=${s1.id}&start_date=2026-02-01&end_date=2026-02-28`, [E.s1Cancel, E.s1Upgrade]],
      [`subscription_id=${s1.id}&event_type=created&end_date=2026-01-31`, [E.s1Created]],
      ['event_type=created&end_date=2025-12-31', [E.imp]],
      ['event_type=downgrade&start_date=2026-02-01T00:00:01Z', [E.imp3]],
      [`customer_id=${c3}&event_type=downgrade`, [E.imp3]],
      [`customer_id=${c3}&subscription_id=${s2.id}`, []],
    ];
    for (const [query, want] of cases) {
      expect(await ids(token, '/subscriptions/events', query), query).toEqual({ ids: want, total: want.length });
    }
  });

  it('refuses invalid filter values with a 422 on that parameter (end before start on end_date)', async () => {
    const { token } = await newMerchant();
    for (const [query, field] of [
      ['event_type=paused', 'event_type'],
      ['event_type=Upgrade', 'event_type'],
      ['customer_id=x', 'customer_id'],
      ['subscription_id=0', 'subscription_id'],
      ['start_date=2026-13-01', 'start_date'],
      ['end_date=yesterday', 'end_date'],
      ['start_date=2026-02-02&end_date=2026-02-01', 'end_date'],
      ['start_date=2026-02-01T00:00:01Z&end_date=2026-02-01T00:00:00Z', 'end_date'],
      ['per_page=101', 'per_page'],
    ]) {
      expect422(await api.get(`/subscriptions/events?${query}`, token), field);
    }
  });

  it('pagination meta: pages, a page past the end (data [] with correct meta), filtered and not', async () => {
    fixedClock('2026-09-01T00:00:00Z');
    const { token } = await newMerchant();
    expect(await page(token, '/subscriptions/events')).toEqual({ data: [], meta: meta(1, 20, 0, null, null) });
    expect((await page(token, '/subscriptions/events?event_type=cancel&page=2')).meta).toEqual(meta(2, 20, 0, null, null));

    const [c1, c2] = [await newCustomerId(token), await newCustomerId(token)];
    const evts: Evt[] = [];
    for (let i = 0; i < 7; i++) {
      evts.push(
        await record(token, {
          customer_id: i < 5 ? c1 : c2,
          event_type: i % 2 ? 'downgrade' : 'upgrade',
          old_amount: '10',
          new_amount: i % 2 ? '5' : '20',
          occurred_at: `2026-08-0${i + 1}T00:00:00Z`,
        }),
      );
    }
    const newest = [...evts].reverse().map((e) => e.id);
    const pages = [];
    for (let p = 1; p <= 4; p++) pages.push(await page(token, `/subscriptions/events?per_page=3&page=${p}`));
    expect(pages.map((p) => p.meta)).toEqual([meta(1, 3, 7, 1, 3), meta(2, 3, 7, 4, 6), meta(3, 3, 7, 7, 7), meta(4, 3, 7, null, null)]);
    expect(pages.map((p) => p.data.map((e) => e.id))).toEqual([newest.slice(0, 3), newest.slice(3, 6), newest.slice(6), []]);
    expect(await page(token, '/subscriptions/events?per_page=3&page=99')).toEqual({ data: [], meta: meta(99, 3, 7, null, null) });

    // by type (totals from the counters): upgrades are events 0, 2, 4, 6
    const u1 = await page(token, '/subscriptions/events?event_type=upgrade&per_page=3');
    const u2 = await page(token, '/subscriptions/events?event_type=upgrade&per_page=3&page=2');
    const u3 = await page(token, '/subscriptions/events?event_type=upgrade&per_page=3&page=3');
    expect([u1.meta, u2.meta, u3.meta]).toEqual([meta(1, 3, 4, 1, 3), meta(2, 3, 4, 4, 4), meta(3, 3, 4, null, null)]);
    expect([...u1.data, ...u2.data].map((e) => e.id)).toEqual([evts[6].id, evts[4].id, evts[2].id, evts[0].id]);

    // by customer and by date range (counted through the index)
    const k2 = await page(token, `/subscriptions/events?customer_id=${c1}&per_page=2&page=3`);
    expect(k2.meta).toEqual(meta(3, 2, 5, 5, 5));
    expect(k2.data.map((e) => e.id)).toEqual([evts[0].id]);
    const k4 = await page(token, `/subscriptions/events?customer_id=${c1}&per_page=2&page=4`);
    expect(k4).toEqual({ data: [], meta: meta(4, 2, 5, null, null) });
    const r2 = await page(token, '/subscriptions/events?start_date=2026-08-02&end_date=2026-08-06&per_page=2&page=2');
    expect(r2.meta).toEqual(meta(2, 2, 5, 3, 4));
    expect(r2.data.map((e) => e.id)).toEqual([evts[3].id, evts[2].id]);
    const r3 = await page(token, `/subscriptions/events?customer_id=${c1}&event_type=downgrade&per_page=1&page=2`);
    expect(r3.meta).toEqual(meta(2, 1, 2, 2, 2));
    expect(r3.data.map((e) => e.id)).toEqual([evts[1].id]);
  });
});

describe('POST /subscriptions/events (recorded events in the lists)', () => {
  it('records with source import, amount_change computed with its sign, subscription_id null when not given; listed as returned', async () => {
    const clock = fixedClock('2026-10-01T08:00:00Z');
    const { token } = await newMerchant();
    const c = await newCustomerId(token);
    const sub = await createSubscription<Sub>(token, c, { started_at: '2026-09-01T00:00:00Z' });

    clock.set('2026-10-02T08:00:00Z');
    const down = await api.post('/subscriptions/events', token, {
      customer_id: c,
      subscription_id: sub.id,
      event_type: 'downgrade',
      old_amount: '100',
      new_amount: '80.5',
      old_plan: 'Pro',
      new_plan: 'Basic',
      occurred_at: '2026-09-15T12:00:00+02:00',
    });
    expect(down.status, JSON.stringify(down.body)).toBe(201);
    expect(down.body.data).toEqual({
      id: expect.any(Number),
      customer_id: c,
      subscription_id: sub.id,
      event_type: 'downgrade',
      source: 'import',
      old_amount: '100.00',
      new_amount: '80.50',
      amount_change: '-19.50',
      old_plan: 'Pro',
      new_plan: 'Basic',
      occurred_at: '2026-09-15T10:00:00Z',
      created_at: '2026-10-02T08:00:00Z',
    });

    // Imported-line events (no subscription) stand for history before the customer's first subscription.
    clock.set('2026-10-03T08:00:00Z');
    const noSub = await record(token, {
      customer_id: c,
      event_type: 'upgrade',
      old_amount: '0.99',
      new_amount: '10',
      occurred_at: '2026-08-10T00:00:00Z',
    });
    expect(noSub).toEqual({
      id: expect.any(Number),
      customer_id: c,
      subscription_id: null,
      event_type: 'upgrade',
      source: 'import',
      old_amount: '0.99',
      new_amount: '10.00',
      amount_change: '9.01',
      old_plan: null,
      new_plan: null,
      occurred_at: '2026-08-10T00:00:00Z',
      created_at: '2026-10-03T08:00:00Z',
    });
    const cancel = await record(token, {
      customer_id: c,
      subscription_id: null,
      event_type: 'cancel',
      old_amount: '10',
      new_amount: '0',
      occurred_at: '2026-08-20T00:00:00Z',
    });
    expect(cancel).toMatchObject({ subscription_id: null, amount_change: '-10.00', source: 'import' });

    const list = await page(token, '/subscriptions/events');
    expect(list.meta.total).toBe(4);
    const byId = new Map(list.data.map((e) => [e.id, e]));
    expect(byId.get(down.body.data.id)).toEqual(down.body.data);
    expect(byId.get(noSub.id)).toEqual(noSub);
    expect(byId.get(cancel.id)).toEqual(cancel);
    expect(list.data.map((e) => e.id)).toEqual([down.body.data.id, expect.any(Number), cancel.id, noSub.id]);
    expect(list.data.map((e) => e.source)).toEqual(['import', 'api', 'import', 'import']);

    // each filter finds them: by subscription only the one naming it; null subscription_id under the customer
    expect((await ids(token, '/subscriptions/events', `subscription_id=${sub.id}`)).ids).toEqual([down.body.data.id, expect.any(Number)]);
    expect((await ids(token, '/subscriptions/events', `customer_id=${c}`)).total).toBe(4);
    expect((await ids(token, '/subscriptions/events', 'event_type=upgrade')).ids).toEqual([noSub.id]);
    expect((await ids(token, '/subscriptions/events', 'event_type=downgrade&start_date=2026-09-15&end_date=2026-09-15')).ids).toEqual([
      down.body.data.id,
    ]);
    // The latest change of the subscription shows on its record (its mrr and plan_name, as of the event); nothing else changes.
    expect((await api.get(`/subscriptions/${sub.id}`, token)).body.data).toEqual({
      ...sub,
      mrr: '80.50',
      plan_name: 'Basic',
      updated_at: expect.any(String),
    });
  });

  it('refuses an unknown customer, or a subscription of another customer, with a 422 naming the field; nothing is listed', async () => {
    const { token } = await newMerchant();
    const [c1, c2] = [await newCustomerId(token), await newCustomerId(token)];
    const sub = await createSubscription<Sub>(token, c1);
    const base = { event_type: 'upgrade', old_amount: '1', new_amount: '2' };
    expect422(await api.post('/subscriptions/events', token, { ...base, customer_id: 999999 }), 'customer_id');
    expect422(await api.post('/subscriptions/events', token, { ...base, customer_id: c2, subscription_id: sub.id }), 'subscription_id');
    expect422(await api.post('/subscriptions/events', token, { ...base, customer_id: c1, subscription_id: 999999 }), 'subscription_id');
    expect((await page(token, '/subscriptions/events')).meta.total).toBe(1); // the `created` event only
  });
});
