import {
  FORBIDDEN as FORBIDDEN_MESSAGE,
  INVALID_DATA,
  NOT_FOUND as NOT_FOUND_MESSAGE,
  UNAUTHENTICATED as UNAUTHENTICATED_MESSAGE,
} from '#lib/errors';
import { CUSTOMER_INVALID, SUBSCRIPTION_INVALID } from '#lib/subscriptions/events';
import { LIVE_TAKEN } from '#lib/subscriptions/service';
import { beforeAll, describe, expect, it } from 'vitest';
import { ABILITIES, type Ability } from '#lib/auth/abilities';
import { createToken, revokeToken } from '#lib/merchants/service';
import { newMerchant, useApi } from '../support/api.ts';
import { factoriesFor, unnamed } from '../support/factories.ts';
import { outboxEvents } from '../orders/helpers.ts';

/**
 * Who may do what to a subscription (docs/api-conventions.md): 401, 403, 404, isolation between
 * merchants, the forbidden state moves and the one-live-subscription rule.
 */

const api = useApi();
const { newCustomer, createSubscription } = factoriesFor(api);

const INVALID = INVALID_DATA;
const UNAUTHENTICATED = { message: UNAUTHENTICATED_MESSAGE };
const FORBIDDEN = { message: FORBIDDEN_MESSAGE };
const NOT_FOUND = { message: NOT_FOUND_MESSAGE };

type Merchant = { merchantId: string; token: string };
type Body = Record<string, unknown>;

const ok = async (res: Promise<{ status: number; body: any }>, status = 200) => {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body?.data;
};

/** The customer's current MRR as the API shows it (`GET /customers/{id}`: its live, unpaused subscriptions). */
const customerMrr = async (token: string, customerId: number) => {
  const r = await api.get(`/customers/${customerId}`, token);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data.mrr as string;
};

/** Everything a merchant can see of its subscriptions (each one by id too) and events, plus its outbox. */
const snapshot = async ({ merchantId, token }: Merchant) => {
  const subs = await api.get('/subscriptions?per_page=100', token);
  const events = await api.get('/subscriptions/events?per_page=100', token);
  expect(subs.status).toBe(200);
  expect(events.status).toBe(200);
  const byId = await Promise.all(subs.body.data.map(async (s: any) => (await api.get(`/subscriptions/${s.id}`, token)).body.data));
  return {
    subscriptions: subs.body.data,
    subscriptionsTotal: subs.body.meta.total,
    byId,
    events: events.body.data,
    eventsTotal: events.body.meta.total,
    outbox: (await outboxEvents(merchantId)).length,
  };
};

const expect422 = (res: { status: number; body: any }, errors: Record<string, string[]>) => {
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(res.body).toEqual({ message: INVALID, errors });
};

/** Every subscription route, with a valid request for it (ids from the fixture). */
type Target = { name: string; method: string; path: (id: number) => string; body?: (customerId: number) => Body; ability: Ability };
const targets: Target[] = [
  { name: 'GET /subscriptions', method: 'GET', path: () => '/subscriptions', ability: 'subscriptions:read' },
  { name: 'GET /subscriptions/events', method: 'GET', path: () => '/subscriptions/events', ability: 'subscriptions:read' },
  { name: 'GET /subscriptions/{id}', method: 'GET', path: (id) => `/subscriptions/${id}`, ability: 'subscriptions:read' },
  {
    name: 'POST /subscriptions',
    method: 'POST',
    path: () => '/subscriptions',
    body: (c) => ({ customer_id: c, plan_name: 'Other', mrr: '5.00', billing_cycle: 'yearly' }),
    ability: 'subscriptions:write',
  },
  {
    name: 'POST /subscriptions/events',
    method: 'POST',
    path: () => '/subscriptions/events',
    body: (c) => ({ customer_id: c, event_type: 'upgrade', old_amount: '1', new_amount: '2' }),
    ability: 'subscriptions:write',
  },
  {
    name: 'PUT /subscriptions/{id}',
    method: 'PUT',
    path: (id) => `/subscriptions/${id}`,
    body: () => ({ mrr: '300.00' }),
    ability: 'subscriptions:write',
  },
  {
    name: 'PUT /subscriptions/{id}/cancel',
    method: 'PUT',
    path: (id) => `/subscriptions/${id}/cancel`,
    body: () => ({ reason: 'x' }),
    ability: 'subscriptions:write',
  },
  {
    name: 'PUT /subscriptions/{id}/pause',
    method: 'PUT',
    path: (id) => `/subscriptions/${id}/pause`,
    body: () => ({}),
    ability: 'subscriptions:write',
  },
  {
    name: 'PUT /subscriptions/{id}/reactivate',
    method: 'PUT',
    path: (id) => `/subscriptions/${id}/reactivate`,
    body: () => ({}),
    ability: 'subscriptions:write',
  },
  { name: 'DELETE /subscriptions/{id}', method: 'DELETE', path: (id) => `/subscriptions/${id}`, ability: 'subscriptions:write' },
];

const send = (t: Target, token: string | null, id: number, customerId: number, headers?: Record<string, string>) =>
  api.request(t.method, t.path(id), { token, body: t.body?.(customerId), headers });

// ---------------------------------------------------------------------------------------------

describe('authentication and abilities', () => {
  let m: Merchant;
  let customerId: number;
  let subId: number;
  let pausedId: number;
  beforeAll(async () => {
    m = await newMerchant();
    customerId = (await newCustomer(m.token)).id;
    subId = (await createSubscription(m.token, customerId)).id;
    const c2 = (await newCustomer(m.token)).id;
    pausedId = (await createSubscription(m.token, c2)).id;
    await ok(api.put(`/subscriptions/${pausedId}/pause`, m.token, {}));
  });

  // reactivate needs a paused subscription to be a valid request; the others use the active one.
  const idFor = (t: Target) => (t.name.endsWith('/reactivate') ? pausedId : subId);

  it.each(targets.map((t) => [t.name, t] as const))('%s: 401 without a token and with bad tokens; nothing changes', async (_n, t) => {
    const before = await snapshot(m);
    const bad: [string, Record<string, string>][] = [
      ['no header', {}],
      ['never-issued token', { authorization: `Bearer ras_${'A'.repeat(40)}` }],
      ['not ras_-shaped', { authorization: 'Bearer abc' }],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['another scheme carrying the valid token', { authorization: `Basic ${m.token}` }],
      ['the valid token without a scheme', { authorization: m.token }],
    ];
    for (const [what, headers] of bad) {
      const r = await send(t, null, idFor(t), customerId, headers);
      expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(401);
      expect(r.body, what).toEqual(UNAUTHENTICATED);
    }
    expect(await snapshot(m)).toEqual(before);
  });

  it.each(targets.map((t) => [t.name, t] as const))(
    '%s: 403 with a token lacking its ability (even with every other one)',
    async (_n, t) => {
      const others = ABILITIES.filter((a) => a !== t.ability);
      for (const abilities of [
        ['customers:read'],
        ['customers:read', 'customers:write', 'orders:read', 'orders:write'],
        others,
      ] as Ability[][]) {
        const limited = await newMerchant(abilities);
        const r = await send(t, limited.token, 1, 1);
        expect(r.status, `${abilities.join(',')}: ${JSON.stringify(r.body)}`).toBe(403);
        expect(r.body).toEqual(FORBIDDEN);
      }
    },
  );

  it("403 on the merchant's own subscriptions: a read-only token changes nothing, a write-only token reads nothing; a revoked token is 401", async () => {
    const owner = await newMerchant();
    const c = (await newCustomer(owner.token)).id;
    const s = (await createSubscription(owner.token, c)).id;
    const c2 = (await newCustomer(owner.token)).id;
    const paused = (await createSubscription(owner.token, c2)).id;
    await ok(api.put(`/subscriptions/${paused}/pause`, owner.token, {}));
    const before = await snapshot(owner);
    const fresh = (await newCustomer(owner.token)).id;

    await revokeToken(owner.merchantId);
    for (const t of targets) {
      const r = await send(t, owner.token, t.name.endsWith('/reactivate') ? paused : s, fresh);
      expect(r.status, `${t.name} with the revoked token`).toBe(401);
      expect(r.body).toEqual(UNAUTHENTICATED);
    }

    const readOnly = (await createToken(owner.merchantId, ['subscriptions:read', 'customers:read', 'customers:write'])).token;
    for (const t of targets) {
      const r = await send(t, readOnly, t.name.endsWith('/reactivate') ? paused : s, fresh);
      if (t.ability === 'subscriptions:read') {
        expect(r.status, `${t.name} read-only`).toBe(200);
      } else {
        expect(r.status, `${t.name} read-only: ${JSON.stringify(r.body)}`).toBe(403);
        expect(r.body).toEqual(FORBIDDEN);
      }
    }
    await revokeToken(owner.merchantId);
    const writeOnly = (await createToken(owner.merchantId, ['subscriptions:write'])).token;
    for (const t of targets.filter((x) => x.ability === 'subscriptions:read')) {
      const r = await send(t, writeOnly, s, fresh);
      expect(r.status, `${t.name} write-only`).toBe(403);
      expect(r.body).toEqual(FORBIDDEN);
    }
    await revokeToken(owner.merchantId);
    const full = (await createToken(owner.merchantId)).token;
    expect(await snapshot({ merchantId: owner.merchantId, token: full })).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------

describe('404 for subscriptions that are not there', () => {
  let m: Merchant;
  let customerId: number;
  let live: any;
  beforeAll(async () => {
    m = await newMerchant();
    customerId = (await newCustomer(m.token)).id;
    live = await createSubscription(m.token, customerId);
  });

  const byId = targets.filter((t) => t.path(7).includes('7'));
  const segments = ['999999', 'abc', '0', '-1', '1.0', '01', '1e3', '99999999999999999999', '%20'];

  it.each(byId.map((t) => [t.name, t] as const))(
    '%s: unknown, non-numeric or malformed ids → 404 {message: "Resource not found"}',
    async (_n, t) => {
      const before = await snapshot(m);
      for (const segment of segments) {
        const r = await api.request(t.method, t.path(7).replace('7', segment), { token: m.token, body: t.body?.(customerId) });
        expect(r.status, `${segment}: ${JSON.stringify(r.body)}`).toBe(404);
        expect(r.body, segment).toEqual(NOT_FOUND);
      }
      expect(await snapshot(m)).toEqual(before);
    },
  );

  it('a deleted subscription: DELETE 204 with no body, then 404 on every route by id; its events stay; the customer may subscribe again', async () => {
    const c = (await newCustomer(m.token)).id;
    const sub = await createSubscription(m.token, c);
    await ok(api.put(`/subscriptions/${sub.id}`, m.token, { mrr: '120.00' }));
    const eventsBefore = (await api.get(`/subscriptions/events?subscription_id=${sub.id}`, m.token)).body;
    expect(eventsBefore.meta.total).toBe(2);

    const del = await api.del(`/subscriptions/${sub.id}`, m.token);
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();

    const before = await snapshot(m);
    for (const t of byId) {
      const r = await api.request(t.method, t.path(sub.id), { token: m.token, body: t.body?.(c) });
      expect(r.status, `${t.name}: ${JSON.stringify(r.body)}`).toBe(404);
      expect(r.body).toEqual(NOT_FOUND);
    }
    expect(await snapshot(m)).toEqual(before);
    expect((await api.get(`/subscriptions/events?subscription_id=${sub.id}`, m.token)).body).toEqual(eventsBefore);
    expect(await customerMrr(m.token, c)).toBe('0.00');
    // Deleting released the one-live slot.
    await createSubscription(m.token, c);
    // The live subscription of this file's other customer was never touched.
    expect((await api.get(`/subscriptions/${live.id}`, m.token)).body.data).toEqual(live);
  });

  it('a deleted subscription leaves every list (unfiltered, by status, by customer): data and total agree', async () => {
    const c = (await newCustomer(m.token)).id;
    const sub = await createSubscription(m.token, c);
    const queries = [
      '/subscriptions?per_page=100',
      '/subscriptions?status=active&per_page=100',
      `/subscriptions?customer_id=${c}&per_page=100`,
    ];
    const before = await Promise.all(queries.map(async (q) => (await api.get(q, m.token)).body));
    for (const [i, q] of queries.entries()) {
      expect(
        before[i].data.map((s: any) => s.id),
        q,
      ).toContain(sub.id);
      expect(before[i].meta.total, q).toBe(before[i].data.length);
    }
    expect((await api.del(`/subscriptions/${sub.id}`, m.token)).status).toBe(204);
    for (const [i, q] of queries.entries()) {
      const after = (await api.get(q, m.token)).body;
      expect(
        after.data.map((s: any) => s.id),
        `${q} still lists the deleted subscription`,
      ).not.toContain(sub.id);
      expect(after.meta.total, q).toBe(before[i].meta.total - 1);
      expect(after.meta.total, `${q}: meta.total vs data`).toBe(after.data.length);
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe('merchant isolation', () => {
  let a: Merchant;
  let b: Merchant;
  let aCustomers: number[];
  let aSubs: any[];
  let bCustomer: number;
  let bSub: any;
  beforeAll(async () => {
    a = await newMerchant();
    b = await newMerchant();
    // A: customers 1..3 and subscriptions 1..3 (active, paused, cancelled). B: customer 1, subscription 1.
    aCustomers = [(await newCustomer(a.token)).id, (await newCustomer(a.token)).id, (await newCustomer(a.token)).id];
    aSubs = [await createSubscription(a.token, aCustomers[0], { plan_name: 'A-active' })];
    aSubs.push(await createSubscription(a.token, aCustomers[1], { plan_name: 'A-paused', mrr: '250.00' }));
    aSubs.push(await createSubscription(a.token, aCustomers[2], { plan_name: 'A-cancelled', mrr: '75.00' }));
    await ok(api.put(`/subscriptions/${aSubs[1].id}/pause`, a.token, {}));
    await ok(api.put(`/subscriptions/${aSubs[2].id}/cancel`, a.token, {}));
    await ok(
      api.post('/subscriptions/events', a.token, {
        customer_id: aCustomers[0],
        subscription_id: aSubs[0].id,
        event_type: 'upgrade',
        old_amount: '1',
        new_amount: '2',
      }),
      201,
    );
    bCustomer = (await newCustomer(b.token)).id;
    bSub = await createSubscription(b.token, bCustomer, { plan_name: 'B-plan' });
    expect(aSubs.map((s) => s.id)).toEqual([1, 2, 3]);
    expect(bSub.id).toBe(1);
    expect(bCustomer).toBe(1);
  });

  it("B's token on A's subscription ids → 404 on GET, PUT, cancel, pause, reactivate and DELETE; nothing changes for A", async () => {
    const before = await snapshot(a);
    const mrrs = await Promise.all(aCustomers.map((c) => customerMrr(a.token, c)));
    for (const sub of aSubs.slice(1)) {
      for (const t of targets.filter((x) => x.path(7).includes('7'))) {
        const r = await api.request(t.method, t.path(sub.id), { token: b.token, body: t.body?.(bCustomer) });
        expect(r.status, `${t.name} on A's ${sub.id}: ${JSON.stringify(r.body)}`).toBe(404);
        expect(r.body).toEqual(NOT_FOUND);
      }
    }
    expect(await snapshot(a)).toEqual(before);
    expect(await Promise.all(aCustomers.map((c) => customerMrr(a.token, c)))).toEqual(mrrs);
    // Id 1 exists for both: B's token reaches B's own subscription, never A's.
    const own = await ok(api.get('/subscriptions/1', b.token));
    expect(own).toEqual(bSub);
    expect(own.plan_name).toBe('B-plan');
  });

  it("B's lists never contain A's subscriptions or events, whatever the filter", async () => {
    const aIds = new Set(aSubs.map((s) => `${s.plan_name}`));
    const queries = [
      '/subscriptions?per_page=100',
      '/subscriptions?status=active',
      '/subscriptions?status=paused',
      '/subscriptions?status=cancelled',
      `/subscriptions?customer_id=${aCustomers[1]}`,
      `/subscriptions?customer_id=${aCustomers[2]}&status=cancelled`,
      '/subscriptions?plan_name=A-active',
    ];
    for (const q of queries) {
      const r = await api.get(q, b.token);
      expect(r.status, q).toBe(200);
      for (const s of r.body.data) expect(aIds.has(s.plan_name), `${q}: ${JSON.stringify(s)}`).toBe(false);
      expect(r.body.meta.total, q).toBe(r.body.data.length);
    }
    expect((await api.get('/subscriptions?per_page=100', b.token)).body.data.map(unnamed)).toEqual([bSub]);
    expect((await api.get(`/subscriptions?customer_id=${aCustomers[1]}`, b.token)).body.meta.total).toBe(0);

    const bEvents = (await api.get('/subscriptions/events?per_page=100', b.token)).body;
    expect(bEvents.meta.total).toBe(1);
    expect(bEvents.data.map((e: any) => [e.event_type, e.subscription_id, e.customer_id, e.new_plan])).toEqual([
      ['created', 1, 1, 'B-plan'],
    ]);
    for (const q of [
      `/subscriptions/events?customer_id=${aCustomers[1]}`,
      `/subscriptions/events?subscription_id=${aSubs[1].id}`,
      `/subscriptions/events?subscription_id=${aSubs[2].id}&event_type=cancel`,
      '/subscriptions/events?event_type=cancel',
      '/subscriptions/events?event_type=upgrade',
    ]) {
      const r = await api.get(q, b.token);
      expect(r.status, q).toBe(200);
      expect(r.body.data, q).toEqual([]);
      expect(r.body.meta.total, q).toBe(0);
    }
    expect((await api.get('/subscriptions/events?start_date=2000-01-01&end_date=2999-12-31&per_page=100', b.token)).body).toEqual(bEvents);
  });

  it("B can neither subscribe A's customer nor record an event for it or for A's subscription", async () => {
    const before = await snapshot(a);
    const bBefore = await snapshot(b);
    const aOnlyCustomer = aCustomers[2];
    expect422(
      await api.post('/subscriptions', b.token, { customer_id: aOnlyCustomer, plan_name: 'Steal', mrr: '1', billing_cycle: 'monthly' }),
      { customer_id: [CUSTOMER_INVALID] },
    );
    expect422(
      await api.post('/subscriptions/events', b.token, {
        customer_id: aOnlyCustomer,
        event_type: 'upgrade',
        old_amount: '1',
        new_amount: '2',
      }),
      { customer_id: [CUSTOMER_INVALID] },
    );
    expect422(
      await api.post('/subscriptions/events', b.token, {
        customer_id: aOnlyCustomer,
        subscription_id: aSubs[2].id,
        event_type: 'cancel',
        old_amount: '75',
        new_amount: '0',
      }),
      { customer_id: [CUSTOMER_INVALID] },
    );
    // B's own customer with A's subscription id (B has no subscription 2).
    expect422(
      await api.post('/subscriptions/events', b.token, {
        customer_id: bCustomer,
        subscription_id: aSubs[1].id,
        event_type: 'upgrade',
        old_amount: '1',
        new_amount: '2',
      }),
      { subscription_id: [SUBSCRIPTION_INVALID] },
    );
    expect(await snapshot(a)).toEqual(before);
    expect(await snapshot(b)).toEqual(bBefore);
  });
});

// ---------------------------------------------------------------------------------------------

describe('forbidden state moves (docs/subscriptions.md): 422 on status, nothing changes', () => {
  let m: Merchant;
  beforeAll(async () => {
    m = await newMerchant();
  });

  /** A subscription of a fresh customer, brought to `status`. */
  const subIn = async (status: 'active' | 'paused' | 'cancelled') => {
    const c = (await newCustomer(m.token)).id;
    const sub = await createSubscription(m.token, c);
    if (status === 'paused') await ok(api.put(`/subscriptions/${sub.id}/pause`, m.token, {}));
    if (status === 'cancelled') await ok(api.put(`/subscriptions/${sub.id}/cancel`, m.token, {}));
    return { customerId: c, id: sub.id as number };
  };

  const refused = async (customerId: number, id: number, method: string, path: string, body: Body, message: string) => {
    const before = await snapshot(m);
    const mrr = await customerMrr(m.token, customerId);
    expect422(await api.request(method, path, { token: m.token, body }), { status: [message] });
    expect(await snapshot(m)).toEqual(before);
    expect(await customerMrr(m.token, customerId)).toBe(mrr);
    return (await api.get(`/subscriptions/${id}`, m.token)).body.data;
  };

  it('update a cancelled subscription (plan, mrr or period)', async () => {
    const { customerId, id } = await subIn('cancelled');
    for (const body of [{ mrr: '500.00' }, { plan_name: 'Pro' }, { current_period_start: '2026-05-01T00:00:00Z' }, {}]) {
      const after = await refused(customerId, id, 'PUT', `/subscriptions/${id}`, body, 'A cancelled subscription cannot be updated.');
      expect(after).toMatchObject({ status: 'cancelled', mrr: '100.00', plan_name: 'Basic' });
    }
  });

  it('pause a cancelled subscription', async () => {
    const { customerId, id } = await subIn('cancelled');
    const after = await refused(customerId, id, 'PUT', `/subscriptions/${id}/pause`, {}, 'A cancelled subscription cannot be paused.');
    expect(after).toMatchObject({ status: 'cancelled', paused_at: null });
  });

  it('cancel a cancelled subscription (cancelled_at and reason kept)', async () => {
    const { customerId, id } = await subIn('cancelled');
    const first = (await api.get(`/subscriptions/${id}`, m.token)).body.data;
    const after = await refused(
      customerId,
      id,
      'PUT',
      `/subscriptions/${id}/cancel`,
      { reason: 'again', cancelled_at: '2020-01-01T00:00:00Z' },
      'The subscription is already cancelled.',
    );
    expect(after).toEqual(first);
  });

  it('pause a paused subscription (paused_at kept)', async () => {
    const { customerId, id } = await subIn('paused');
    const first = (await api.get(`/subscriptions/${id}`, m.token)).body.data;
    const after = await refused(customerId, id, 'PUT', `/subscriptions/${id}/pause`, {}, 'The subscription is already paused.');
    expect(after).toEqual(first);
  });

  it('reactivate an active subscription', async () => {
    const { customerId, id } = await subIn('active');
    const first = (await api.get(`/subscriptions/${id}`, m.token)).body.data;
    const after = await refused(customerId, id, 'PUT', `/subscriptions/${id}/reactivate`, {}, 'The subscription is already active.');
    expect(after).toEqual(first);
  });

  it('reactivate a cancelled subscription while the customer has another active or paused one', async () => {
    for (const otherState of ['active', 'paused'] as const) {
      const { customerId, id: old } = await subIn('cancelled');
      const other = await createSubscription(m.token, customerId, { plan_name: 'Second', mrr: '40.00' });
      if (otherState === 'paused') await ok(api.put(`/subscriptions/${other.id}/pause`, m.token, {}));
      const oldBefore = (await api.get(`/subscriptions/${old}`, m.token)).body.data;
      const otherBefore = (await api.get(`/subscriptions/${other.id}`, m.token)).body.data;
      const after = await refused(
        customerId,
        old,
        'PUT',
        `/subscriptions/${old}/reactivate`,
        {},
        'The subscription cannot be reactivated: the customer has another active or paused subscription.',
      );
      expect(after, otherState).toEqual(oldBefore);
      expect((await api.get(`/subscriptions/${other.id}`, m.token)).body.data, otherState).toEqual(otherBefore);
      // Once the other one is cancelled, the old one can come back.
      await ok(api.put(`/subscriptions/${other.id}/cancel`, m.token, {}));
      expect(await ok(api.put(`/subscriptions/${old}/reactivate`, m.token, {}))).toMatchObject({ status: 'active', cancelled_at: null });
      expect(await customerMrr(m.token, customerId)).toBe('100.00');
    }
  });

  it('the allowed moves around them still work: update and cancel a paused subscription, reactivate a cancelled one with no other live one', async () => {
    const { customerId, id } = await subIn('paused');
    expect(await ok(api.put(`/subscriptions/${id}`, m.token, { mrr: '130.00' }))).toMatchObject({ status: 'paused', mrr: '130.00' });
    expect(await customerMrr(m.token, customerId)).toBe('0.00');
    expect(await ok(api.put(`/subscriptions/${id}/cancel`, m.token, {}))).toMatchObject({ status: 'cancelled' });
    expect(await ok(api.put(`/subscriptions/${id}/reactivate`, m.token, {}))).toMatchObject({ status: 'active', mrr: '130.00' });
    expect(await customerMrr(m.token, customerId)).toBe('130.00');
  });
});

// ---------------------------------------------------------------------------------------------

describe('one live subscription per customer', () => {
  let m: Merchant;
  beforeAll(async () => {
    m = await newMerchant();
  });

  it('a second POST while the customer has an active or a paused subscription → 422 customer_id; after cancel a new one is created', async () => {
    const c = (await newCustomer(m.token)).id;
    const first = await createSubscription(m.token, c);
    const second = { customer_id: c, plan_name: 'Second', mrr: '50.00', billing_cycle: 'yearly' };

    let before = await snapshot(m);
    expect422(await api.post('/subscriptions', m.token, second), { customer_id: [LIVE_TAKEN] });
    expect(await snapshot(m)).toEqual(before);

    await ok(api.put(`/subscriptions/${first.id}/pause`, m.token, {}));
    before = await snapshot(m);
    expect422(await api.post('/subscriptions', m.token, second), { customer_id: [LIVE_TAKEN] });
    expect(await snapshot(m)).toEqual(before);

    await ok(api.put(`/subscriptions/${first.id}/cancel`, m.token, {}));
    const created = await createSubscription(m.token, c, second);
    expect(created).toMatchObject({ customer_id: c, status: 'active', plan_name: 'Second', mrr: '50.00' });
    expect(await customerMrr(m.token, c)).toBe('50.00');
    // And the rule holds again for the new one.
    expect422(await api.post('/subscriptions', m.token, second), { customer_id: [LIVE_TAKEN] });
    const mine = (await api.get(`/subscriptions?customer_id=${c}`, m.token)).body;
    expect(mine.meta.total).toBe(2);
    expect(mine.data.map((s: any) => s.status).sort()).toEqual(['active', 'cancelled']);
  });

  it('another customer is not affected by the rule', async () => {
    const c1 = (await newCustomer(m.token)).id;
    const c2 = (await newCustomer(m.token)).id;
    await createSubscription(m.token, c1);
    await createSubscription(m.token, c2);
  });

  it('concurrent creates for one customer: exactly one 201, the others 422 customer_id', async () => {
    const c = (await newCustomer(m.token)).id;
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        api.post('/subscriptions', m.token, { customer_id: c, plan_name: `P${i}`, mrr: '10.00', billing_cycle: 'monthly' }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 422, 422, 422, 422, 422]);
    for (const r of results.filter((x) => x.status === 422))
      expect(r.body).toEqual({ message: INVALID, errors: { customer_id: [LIVE_TAKEN] } });
    expect((await api.get(`/subscriptions?customer_id=${c}`, m.token)).body.meta.total).toBe(1);
    expect((await api.get(`/subscriptions/events?customer_id=${c}`, m.token)).body.meta.total).toBe(1);
    expect(await customerMrr(m.token, c)).toBe('10.00');
  });
});

// ---------------------------------------------------------------------------------------------

describe('a customer soft-deleted while holding a live subscription', () => {
  it('keeps it: GET and the lists still show it, it can be updated, paused, resumed and cancelled; the deleted customer cannot get a new one', async () => {
    const m = await newMerchant();
    const customer = await newCustomer(m.token);
    const c = customer.id;
    const sub = await createSubscription(m.token, c, { mrr: '80.00' });
    expect((await api.del(`/customers/${c}`, m.token)).status).toBe(204);
    expect((await api.get(`/customers/${c}`, m.token)).status).toBe(404);

    expect(await ok(api.get(`/subscriptions/${sub.id}`, m.token))).toEqual(sub);
    // The list still names the deleted customer, as orders do.
    expect((await api.get(`/subscriptions?customer_id=${c}`, m.token)).body.data).toEqual([
      { ...sub, customer_email: customer.email, customer_name: customer.name },
    ]);
    expect((await api.get('/subscriptions?status=active', m.token)).body.data.map((s: any) => s.id)).toContain(sub.id);
    expect((await api.get(`/subscriptions/events?customer_id=${c}`, m.token)).body.meta.total).toBe(1);

    const before = await snapshot(m);
    expect422(await api.post('/subscriptions', m.token, { customer_id: c, plan_name: 'New', mrr: '1', billing_cycle: 'monthly' }), {
      customer_id: [CUSTOMER_INVALID],
    });
    expect(await snapshot(m)).toEqual(before);

    // It can still be updated, paused and resumed (docs/subscriptions.md: a deleted customer's subscriptions stay).
    expect(await ok(api.put(`/subscriptions/${sub.id}`, m.token, { mrr: '90.00' }))).toMatchObject({ mrr: '90.00', status: 'active' });
    // Its figures still count it (the merchant's only customer): a deleted customer changes no figure.
    const currentMrr = async () => (await ok(api.get('/metrics/summary', m.token))).current_mrr;
    expect(await currentMrr()).toBe('90.00');
    expect(await ok(api.put(`/subscriptions/${sub.id}/pause`, m.token, {}))).toMatchObject({ status: 'paused' });
    expect(await ok(api.put(`/subscriptions/${sub.id}/reactivate`, m.token, {}))).toMatchObject({ status: 'active' });
    const cancelled = await ok(api.put(`/subscriptions/${sub.id}/cancel`, m.token, { reason: 'customer left' }));
    expect(cancelled).toMatchObject({ id: sub.id, customer_id: c, status: 'cancelled', cancel_reason: 'customer left' });
    expect(await ok(api.get(`/subscriptions/${sub.id}`, m.token))).toEqual(cancelled);
    const events = (await api.get(`/subscriptions/events?customer_id=${c}`, m.token)).body.data;
    expect(events.map((e: any) => e.event_type).sort()).toEqual(['cancel', 'created', 'reactivated', 'upgrade'].sort());
    expect(await currentMrr()).toBe('0.00');
  });
});
