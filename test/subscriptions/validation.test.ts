import { INVALID_DATA as INVALID } from '#lib/errors';
import { CUSTOMER_INVALID, SUBSCRIPTION_INVALID } from '#lib/subscriptions/events';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { factoriesFor, subscriptionBody } from '../support/factories.ts';
import { outboxEvents } from '../orders/helpers.ts';

/**
 * Field-by-field validation of every subscription write endpoint and of the two list queries
 * (docs/api-conventions.md). Every 422 is checked for its exact body, and that nothing was stored.
 */

const api = useApi();
const { newCustomer, createSubscription } = factoriesFor(api);
afterEach(() => resetClock());

const NOW = '2026-03-01T10:00:00Z';
const long = (n: number) => 'p'.repeat(n);

type Merchant = { merchantId: string; token: string };
type Body = Record<string, unknown>;

const deletedCustomer = async (token: string) => {
  const c = await newCustomer(token);
  expect((await api.del(`/customers/${c.id}`, token)).status).toBe(204);
  return c;
};

/** Everything a merchant can see of its subscriptions and events, plus its webhook outbox. */
const snapshot = async ({ merchantId, token }: Merchant) => {
  const subs = await api.get('/subscriptions?per_page=100', token);
  const events = await api.get('/subscriptions/events?per_page=100', token);
  expect(subs.status).toBe(200);
  expect(events.status).toBe(200);
  return {
    subscriptions: subs.body.data,
    subscriptionsTotal: subs.body.meta.total,
    events: events.body.data,
    eventsTotal: events.body.meta.total,
    outbox: (await outboxEvents(merchantId)).length,
  };
};

const expect422 = (res: { status: number; body: any }, errors: Record<string, string[]>) => {
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(res.body).toEqual({ message: INVALID, errors });
};

/** A case: a name, the body (built from the fixture), the exact `errors` of the 422. */
type Case<F> = [string, (f: F) => Body, Record<string, string[]>];

// ---------------------------------------------------------------------------------------------

describe('POST /subscriptions: validation', () => {
  type Fx = { customerId: number; otherMerchantsCustomerId: number; deletedCustomerId: number };
  let m: Merchant;
  let fx: Fx;
  beforeAll(async () => {
    m = await newMerchant();
    // Merchant B owns customers 1..3; merchant A owns 1..2, so B's customer 3 is not A's.
    const b = await newMerchant();
    await newCustomer(b.token);
    await newCustomer(b.token);
    const bThird = await newCustomer(b.token);
    const live = await newCustomer(m.token);
    const deleted = await deletedCustomer(m.token);
    fx = { customerId: live.id, otherMerchantsCustomerId: bThird.id, deletedCustomerId: deleted.id };
    expect(fx.otherMerchantsCustomerId).toBeGreaterThan(deleted.id);
  });

  const valid = (f: Fx, over: Body = {}) => subscriptionBody(f.customerId, over);
  const customerInvalid = { customer_id: [CUSTOMER_INVALID] };
  const dateTime = (field: string) => [`The ${field} field must be a valid ISO 8601 date-time with a time zone.`];

  const cases: Case<Fx>[] = [
    [
      'empty body: every required field',
      () => ({}),
      {
        customer_id: ['The customer id field is required.'],
        plan_name: ['The plan name field is required.'],
        mrr: ['The mrr field is required.'],
        billing_cycle: ['The billing cycle field is required.'],
      },
    ],
    // customer_id
    ['customer_id missing', (f) => valid(f, { customer_id: undefined }), { customer_id: ['The customer id field is required.'] }],
    ['customer_id null', (f) => valid(f, { customer_id: null }), { customer_id: ['The customer id field is required.'] }],
    [
      'customer_id a numeric string',
      (f) => valid(f, { customer_id: String(f.customerId) }),
      { customer_id: ['The customer id field must be an integer.'] },
    ],
    ['customer_id a fraction', (f) => valid(f, { customer_id: 1.5 }), { customer_id: ['The customer id field must be an integer.'] }],
    ['customer_id a boolean', (f) => valid(f, { customer_id: true }), { customer_id: ['The customer id field must be an integer.'] }],
    ['customer_id 0', (f) => valid(f, { customer_id: 0 }), { customer_id: ['The customer id field must be at least 1.'] }],
    ['customer_id negative', (f) => valid(f, { customer_id: -4 }), { customer_id: ['The customer id field must be at least 1.'] }],
    ['customer_id unknown', (f) => valid(f, { customer_id: 999_999 }), customerInvalid],
    ["customer_id of another merchant's customer", (f) => valid(f, { customer_id: f.otherMerchantsCustomerId }), customerInvalid],
    ['customer_id of a soft-deleted customer', (f) => valid(f, { customer_id: f.deletedCustomerId }), customerInvalid],
    // plan_name
    ['plan_name missing', (f) => valid(f, { plan_name: undefined }), { plan_name: ['The plan name field is required.'] }],
    ['plan_name null', (f) => valid(f, { plan_name: null }), { plan_name: ['The plan name field is required.'] }],
    ['plan_name empty', (f) => valid(f, { plan_name: '' }), { plan_name: ['The plan name field is required.'] }],
    [
      'plan_name over 255',
      (f) => valid(f, { plan_name: long(256) }),
      { plan_name: ['The plan name field must not be greater than 255 characters.'] },
    ],
    ['plan_name a number', (f) => valid(f, { plan_name: 42 }), { plan_name: ['The plan name field must be a string.'] }],
    ['plan_name an array', (f) => valid(f, { plan_name: ['Basic'] }), { plan_name: ['The plan name field must be a string.'] }],
    // mrr
    ['mrr missing', (f) => valid(f, { mrr: undefined }), { mrr: ['The mrr field is required.'] }],
    ['mrr null', (f) => valid(f, { mrr: null }), { mrr: ['The mrr field is required.'] }],
    ['mrr "abc"', (f) => valid(f, { mrr: 'abc' }), { mrr: ['The mrr field must be a number.'] }],
    ['mrr "1e3"', (f) => valid(f, { mrr: '1e3' }), { mrr: ['The mrr field must be a number.'] }],
    ['mrr a boolean', (f) => valid(f, { mrr: true }), { mrr: ['The mrr field must be a number.'] }],
    ['mrr an object', (f) => valid(f, { mrr: { amount: 1 } }), { mrr: ['The mrr field must be a number.'] }],
    [
      'mrr with 3 fraction digits (string)',
      (f) => valid(f, { mrr: '10.125' }),
      { mrr: ['The mrr field must have at most 2 decimal places.'] },
    ],
    [
      'mrr with 3 fraction digits (number)',
      (f) => valid(f, { mrr: 10.125 }),
      { mrr: ['The mrr field must have at most 2 decimal places.'] },
    ],
    ['mrr negative (string)', (f) => valid(f, { mrr: '-1.00' }), { mrr: ['The mrr field must be at least 0.'] }],
    ['mrr negative (number)', (f) => valid(f, { mrr: -0.5 }), { mrr: ['The mrr field must be at least 0.'] }],
    [
      'mrr with 14 integer digits',
      (f) => valid(f, { mrr: '12345678901234' }),
      { mrr: ['The mrr field must not have more than 13 integer digits.'] },
    ],
    [
      'mrr with 14 integer digits and decimals',
      (f) => valid(f, { mrr: '10000000000000.00' }),
      { mrr: ['The mrr field must not have more than 13 integer digits.'] },
    ],
    ['mrr 0 (string)', (f) => valid(f, { mrr: '0.00' }), { mrr: ['The mrr field must be greater than 0.'] }],
    ['mrr 0 (number)', (f) => valid(f, { mrr: 0 }), { mrr: ['The mrr field must be greater than 0.'] }],
    // billing_cycle
    ['billing_cycle missing', (f) => valid(f, { billing_cycle: undefined }), { billing_cycle: ['The billing cycle field is required.'] }],
    [
      'billing_cycle one-time (orders only)',
      (f) => valid(f, { billing_cycle: 'one-time' }),
      { billing_cycle: ['The selected billing cycle is invalid. Allowed: monthly, quarterly, semi-annual, yearly.'] },
    ],
    [
      'billing_cycle weekly',
      (f) => valid(f, { billing_cycle: 'weekly' }),
      { billing_cycle: ['The selected billing cycle is invalid. Allowed: monthly, quarterly, semi-annual, yearly.'] },
    ],
    [
      'billing_cycle a number',
      (f) => valid(f, { billing_cycle: 12 }),
      { billing_cycle: ['The selected billing cycle is invalid. Allowed: monthly, quarterly, semi-annual, yearly.'] },
    ],
    // started_at / current_period_start
    ['started_at not a date', (f) => valid(f, { started_at: 'yesterday' }), { started_at: dateTime('started at') }],
    ['started_at without a zone', (f) => valid(f, { started_at: '2026-02-01T10:00:00' }), { started_at: dateTime('started at') }],
    ['started_at a bare date', (f) => valid(f, { started_at: '2026-02-01' }), { started_at: dateTime('started at') }],
    ['started_at an impossible day', (f) => valid(f, { started_at: '2026-02-30T10:00:00Z' }), { started_at: dateTime('started at') }],
    ['started_at a number', (f) => valid(f, { started_at: 1_770_000_000 }), { started_at: ['The started at field must be a string.'] }],
    [
      'current_period_start not a date',
      (f) => valid(f, { current_period_start: '01/02/2026' }),
      { current_period_start: dateTime('current period start') },
    ],
    [
      'current_period_start without a zone',
      (f) => valid(f, { current_period_start: '2026-02-01 10:00:00' }),
      { current_period_start: dateTime('current period start') },
    ],
    [
      'current_period_start an impossible time',
      (f) => valid(f, { current_period_start: '2026-02-01T25:00:00Z' }),
      { current_period_start: dateTime('current period start') },
    ],
  ];

  it.each(cases)('422 for %s; nothing stored', async (_name, body, errors) => {
    const before = await snapshot(m);
    expect422(await api.post('/subscriptions', m.token, body(fx)), errors);
    expect(await snapshot(m)).toEqual(before);
  });

  it('mrr accepts a JSON number or string above 0, up to 13 integer and 2 fraction digits; written with 2 decimals', async () => {
    const cases: [unknown, string][] = [
      [99.5, '99.50'],
      ['42', '42.00'],
      ['0.01', '0.01'],
      ['0.05', '0.05'],
      ['9999999999999.99', '9999999999999.99'],
      [1234567890123, '1234567890123.00'],
    ];
    for (const [mrr, written] of cases) {
      const c = await newCustomer(m.token);
      const sub = await createSubscription(m.token, c.id, { mrr });
      expect(sub.mrr, String(mrr)).toBe(written);
      expect((await api.get(`/subscriptions/${sub.id}`, m.token)).body.data.mrr).toBe(written);
    }
  });

  it('accepts every subscription billing cycle and a 255-character plan name', async () => {
    for (const billing_cycle of ['monthly', 'quarterly', 'semi-annual', 'yearly']) {
      const c = await newCustomer(m.token);
      expect((await createSubscription(m.token, c.id, { billing_cycle, plan_name: long(255) })).billing_cycle).toBe(billing_cycle);
    }
  });

  it('timestamps with an offset or a fraction are stored in UTC; defaults: started_at now, current_period_start = started_at', async () => {
    fixedClock(NOW);
    const c1 = await newCustomer(m.token);
    const both = await createSubscription(m.token, c1.id, {
      started_at: '2026-02-15T08:30:00+08:00',
      current_period_start: '2026-02-20T12:00:00.750-0500',
    });
    expect(both).toMatchObject({
      started_at: '2026-02-15T00:30:00Z',
      current_period_start: '2026-02-20T17:00:00Z',
      created_at: NOW,
      updated_at: NOW,
    });

    const c2 = await newCustomer(m.token);
    expect(await createSubscription(m.token, c2.id)).toMatchObject({ started_at: NOW, current_period_start: NOW });

    const c3 = await newCustomer(m.token);
    const startedOnly = await createSubscription(m.token, c3.id, { started_at: '2026-01-31T23:00:00-01:00' });
    expect(startedOnly).toMatchObject({ started_at: '2026-02-01T00:00:00Z', current_period_start: '2026-02-01T00:00:00Z' });

    const c4 = await newCustomer(m.token);
    const periodOnly = await createSubscription(m.token, c4.id, { current_period_start: '2026-02-10T00:00:00Z' });
    expect(periodOnly).toMatchObject({ started_at: NOW, current_period_start: '2026-02-10T00:00:00Z' });

    const c5 = await newCustomer(m.token);
    expect(await createSubscription(m.token, c5.id, { started_at: null, current_period_start: null })).toMatchObject({
      started_at: NOW,
      current_period_start: NOW,
    });

    // The created event happens at started_at.
    const events = (await api.get(`/subscriptions/events?subscription_id=${both.id}`, m.token)).body.data;
    expect(events.map((e: any) => [e.event_type, e.occurred_at, e.old_amount, e.new_amount])).toEqual([
      ['created', '2026-02-15T00:30:00Z', '0.00', '100.00'],
    ]);
  });

  it('unknown body fields are ignored (status and source cannot be chosen)', async () => {
    const c = await newCustomer(m.token);
    const sub = await createSubscription(m.token, c.id, {
      status: 'cancelled',
      source: 'import',
      id: 777,
      cancelled_at: '2026-01-01T00:00:00Z',
    });
    expect(sub).toMatchObject({ status: 'active', source: 'api', cancelled_at: null });
    expect(sub.id).not.toBe(777);
  });
});

// ---------------------------------------------------------------------------------------------

describe('PUT /subscriptions/{id}: validation', () => {
  let m: Merchant;
  let sub: any;
  beforeAll(async () => {
    m = await newMerchant();
    const c = await newCustomer(m.token);
    sub = await createSubscription(m.token, c.id, { plan_name: 'Basic', mrr: '100.00', started_at: '2026-01-01T00:00:00Z' });
  });

  const cases: Case<null>[] = [
    ['plan_name empty', () => ({ plan_name: '' }), { plan_name: ['The plan name field is required.'] }],
    [
      'plan_name over 255',
      () => ({ plan_name: long(256) }),
      { plan_name: ['The plan name field must not be greater than 255 characters.'] },
    ],
    ['plan_name a number', () => ({ plan_name: 5 }), { plan_name: ['The plan name field must be a string.'] }],
    ['mrr "abc"', () => ({ mrr: 'abc' }), { mrr: ['The mrr field must be a number.'] }],
    ['mrr with 3 fraction digits', () => ({ mrr: '150.001' }), { mrr: ['The mrr field must have at most 2 decimal places.'] }],
    ['mrr negative', () => ({ mrr: -10 }), { mrr: ['The mrr field must be at least 0.'] }],
    ['mrr with 14 integer digits', () => ({ mrr: 12345678901234 }), { mrr: ['The mrr field must not have more than 13 integer digits.'] }],
    ['mrr a boolean', () => ({ mrr: false }), { mrr: ['The mrr field must be a number.'] }],
    ['mrr 0 (pause or cancel take a subscription to zero)', () => ({ mrr: '0' }), { mrr: ['The mrr field must be greater than 0.'] }],
    [
      'current_period_start not a date',
      () => ({ current_period_start: 'soon' }),
      { current_period_start: ['The current period start field must be a valid ISO 8601 date-time with a time zone.'] },
    ],
    [
      'current_period_start without a zone',
      () => ({ current_period_start: '2026-04-01T00:00:00' }),
      { current_period_start: ['The current period start field must be a valid ISO 8601 date-time with a time zone.'] },
    ],
    [
      'current_period_start a number',
      () => ({ current_period_start: 20260401 }),
      { current_period_start: ['The current period start field must be a string.'] },
    ],
    [
      'a valid field beside an invalid one (nothing applied)',
      () => ({ plan_name: 'Pro', mrr: '1.999' }),
      { mrr: ['The mrr field must have at most 2 decimal places.'] },
    ],
    [
      'several invalid fields',
      () => ({ plan_name: '', mrr: 'x', current_period_start: 'y' }),
      {
        plan_name: ['The plan name field is required.'],
        mrr: ['The mrr field must be a number.'],
        current_period_start: ['The current period start field must be a valid ISO 8601 date-time with a time zone.'],
      },
    ],
  ];

  it.each(cases)('422 for %s; the subscription and its events unchanged', async (_name, body, errors) => {
    const before = await snapshot(m);
    const stored = (await api.get(`/subscriptions/${sub.id}`, m.token)).body.data;
    expect422(await api.put(`/subscriptions/${sub.id}`, m.token, body(null)), errors);
    expect((await api.get(`/subscriptions/${sub.id}`, m.token)).body.data).toEqual(stored);
    expect(await snapshot(m)).toEqual(before);
  });

  it('a body that changes nothing answers 200 with the subscription as it was, and records no event', async () => {
    const stored = (await api.get(`/subscriptions/${sub.id}`, m.token)).body.data;
    const eventsBefore = (await snapshot(m)).eventsTotal;
    const bodies: Body[] = [
      {},
      { plan_name: null, mrr: null, current_period_start: null },
      { mrr: '100' },
      { mrr: 100 },
      { plan_name: stored.plan_name, mrr: stored.mrr, current_period_start: stored.current_period_start },
      { current_period_start: '2026-01-01T08:00:00+08:00' }, // the same instant, written another way
    ];
    const { updated_at: _u, ...fields } = stored;
    for (const body of bodies) {
      const r = await api.put(`/subscriptions/${sub.id}`, m.token, body);
      expect(r.status, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.body.data, JSON.stringify(body)).toMatchObject(fields);
    }
    expect((await snapshot(m)).eventsTotal).toBe(eventsBefore);
  });

  it('an empty or whitespace-only body reads as {} (200), and valid values are normalised', async () => {
    const r0 = await api.request('PUT', `/subscriptions/${sub.id}`, {
      token: m.token,
      rawBody: '  ',
      headers: { 'content-type': 'application/json' },
    });
    expect(r0.status, JSON.stringify(r0.body)).toBe(200);
    const r = await api.put(`/subscriptions/${sub.id}`, m.token, {
      current_period_start: '2026-04-01T09:00:00+09:00',
      plan_name: long(255),
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ current_period_start: '2026-04-01T00:00:00Z', plan_name: long(255), mrr: '100.00' });
  });
});

// ---------------------------------------------------------------------------------------------

describe('PUT /subscriptions/{id}/cancel: validation', () => {
  let m: Merchant;
  let sub: any;
  beforeAll(async () => {
    m = await newMerchant();
    sub = await createSubscription(m.token, (await newCustomer(m.token)).id);
  });

  const cases: Case<null>[] = [
    [
      'cancelled_at not a date',
      () => ({ cancelled_at: 'now' }),
      { cancelled_at: ['The cancelled at field must be a valid ISO 8601 date-time with a time zone.'] },
    ],
    [
      'cancelled_at without a zone',
      () => ({ cancelled_at: '2026-03-01T00:00:00' }),
      { cancelled_at: ['The cancelled at field must be a valid ISO 8601 date-time with a time zone.'] },
    ],
    ['cancelled_at a number', () => ({ cancelled_at: 1 }), { cancelled_at: ['The cancelled at field must be a string.'] }],
    ['reason over 255', () => ({ reason: long(256) }), { reason: ['The reason field must not be greater than 255 characters.'] }],
    ['reason a number', () => ({ reason: 3 }), { reason: ['The reason field must be a string.'] }],
    ['reason an object', () => ({ reason: { why: 'price' } }), { reason: ['The reason field must be a string.'] }],
  ];

  it.each(cases)('422 for %s; still active, no cancel event', async (_name, body, errors) => {
    const before = await snapshot(m);
    expect422(await api.put(`/subscriptions/${sub.id}/cancel`, m.token, body(null)), errors);
    expect((await api.get(`/subscriptions/${sub.id}`, m.token)).body.data).toMatchObject({
      status: 'active',
      cancelled_at: null,
      cancel_reason: null,
    });
    expect(await snapshot(m)).toEqual(before);
  });

  it('accepts a 255-character reason and cancelled_at with an offset (stored in UTC, the event at that instant)', async () => {
    fixedClock(NOW);
    const other = await createSubscription(m.token, (await newCustomer(m.token)).id, { started_at: '2026-02-01T00:00:00Z' });
    const r = await api.put(`/subscriptions/${other.id}/cancel`, m.token, { reason: long(255), cancelled_at: '2026-02-28T20:00:00-05:00' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'cancelled', cancelled_at: '2026-03-01T01:00:00Z', cancel_reason: long(255) });
    const events = (await api.get(`/subscriptions/events?subscription_id=${other.id}&event_type=cancel`, m.token)).body.data;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      occurred_at: '2026-03-01T01:00:00Z',
      old_amount: '100.00',
      new_amount: '0.00',
      amount_change: '-100.00',
    });
  });

  it('without a body: cancelled_at defaults to now and reason to null', async () => {
    fixedClock(NOW);
    const other = await createSubscription(m.token, (await newCustomer(m.token)).id);
    const r = await api.request('PUT', `/subscriptions/${other.id}/cancel`, { token: m.token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'cancelled', cancelled_at: NOW, cancel_reason: null });
  });
});

// ---------------------------------------------------------------------------------------------

describe('POST /subscriptions/events: validation', () => {
  type Fx = {
    customerId: number;
    subscriptionId: number;
    otherCustomersSubscriptionId: number;
    deletedSubscriptionId: number;
    otherMerchantsCustomerId: number;
    deletedCustomerId: number;
  };
  let m: Merchant;
  let fx: Fx;
  beforeAll(async () => {
    m = await newMerchant();
    const b = await newMerchant();
    for (let i = 0; i < 5; i++) await newCustomer(b.token);
    const bLast = await newCustomer(b.token);
    const c1 = await newCustomer(m.token);
    const c2 = await newCustomer(m.token);
    const s1 = await createSubscription(m.token, c1.id);
    const s2 = await createSubscription(m.token, c2.id);
    const c3 = await newCustomer(m.token);
    const s3 = await createSubscription(m.token, c3.id);
    expect((await api.del(`/subscriptions/${s3.id}`, m.token)).status).toBe(204);
    const deleted = await deletedCustomer(m.token);
    fx = {
      customerId: c1.id,
      subscriptionId: s1.id,
      otherCustomersSubscriptionId: s2.id,
      deletedSubscriptionId: s3.id,
      otherMerchantsCustomerId: bLast.id,
      deletedCustomerId: deleted.id,
    };
    expect(fx.otherMerchantsCustomerId).toBeGreaterThan(deleted.id);
  });

  const valid = (f: Fx, over: Body = {}): Body => ({
    customer_id: f.customerId,
    event_type: 'upgrade',
    old_amount: '100.00',
    new_amount: '150.00',
    ...over,
  });
  const subInvalid = { subscription_id: [SUBSCRIPTION_INVALID] };
  const customerInvalid = { customer_id: [CUSTOMER_INVALID] };

  const cases: Case<Fx>[] = [
    [
      'empty body',
      () => ({}),
      {
        customer_id: ['The customer id field is required.'],
        event_type: ['The event type field is required.'],
        old_amount: ['The old amount field is required.'],
        new_amount: ['The new amount field is required.'],
      },
    ],
    ['customer_id missing', (f) => valid(f, { customer_id: undefined }), { customer_id: ['The customer id field is required.'] }],
    ['customer_id a string', (f) => valid(f, { customer_id: 'one' }), { customer_id: ['The customer id field must be an integer.'] }],
    ['customer_id 0', (f) => valid(f, { customer_id: 0 }), { customer_id: ['The customer id field must be at least 1.'] }],
    ['customer_id unknown', (f) => valid(f, { customer_id: 999_999 }), customerInvalid],
    ["customer_id of another merchant's customer", (f) => valid(f, { customer_id: f.otherMerchantsCustomerId }), customerInvalid],
    ['customer_id of a soft-deleted customer', (f) => valid(f, { customer_id: f.deletedCustomerId }), customerInvalid],
    [
      "subscription_id of another customer's subscription",
      (f) => valid(f, { subscription_id: f.otherCustomersSubscriptionId }),
      subInvalid,
    ],
    ['subscription_id unknown', (f) => valid(f, { subscription_id: 999_999 }), subInvalid],
    ['subscription_id of a deleted subscription', (f) => valid(f, { subscription_id: f.deletedSubscriptionId }), subInvalid],
    ['subscription_id 0', (f) => valid(f, { subscription_id: 0 }), { subscription_id: ['The subscription id field must be at least 1.'] }],
    [
      'subscription_id a string',
      (f) => valid(f, { subscription_id: String(f.subscriptionId) }),
      { subscription_id: ['The subscription id field must be an integer.'] },
    ],
    ['event_type missing', (f) => valid(f, { event_type: undefined }), { event_type: ['The event type field is required.'] }],
    [
      'event_type unknown',
      (f) => valid(f, { event_type: 'upgraded' }),
      { event_type: ['The selected event type is invalid. Allowed: created, upgrade, downgrade, cancel, reactivated.'] },
    ],
    [
      'event_type a webhook type',
      (f) => valid(f, { event_type: 'subscription.created' }),
      { event_type: ['The selected event type is invalid. Allowed: created, upgrade, downgrade, cancel, reactivated.'] },
    ],
    ['old_amount missing', (f) => valid(f, { old_amount: undefined }), { old_amount: ['The old amount field is required.'] }],
    ['old_amount null', (f) => valid(f, { old_amount: null }), { old_amount: ['The old amount field is required.'] }],
    [
      'old_amount with 3 fraction digits',
      (f) => valid(f, { old_amount: '1.999' }),
      { old_amount: ['The old amount field must have at most 2 decimal places.'] },
    ],
    ['old_amount negative', (f) => valid(f, { old_amount: '-5' }), { old_amount: ['The old amount field must be at least 0.'] }],
    ['new_amount missing', (f) => valid(f, { new_amount: undefined }), { new_amount: ['The new amount field is required.'] }],
    ['new_amount "abc"', (f) => valid(f, { new_amount: 'abc' }), { new_amount: ['The new amount field must be a number.'] }],
    [
      'new_amount with 14 integer digits',
      (f) => valid(f, { new_amount: '99999999999999' }),
      { new_amount: ['The new amount field must not have more than 13 integer digits.'] },
    ],
    [
      'old_plan over 255',
      (f) => valid(f, { old_plan: long(256) }),
      { old_plan: ['The old plan field must not be greater than 255 characters.'] },
    ],
    [
      'new_plan over 255',
      (f) => valid(f, { new_plan: long(256) }),
      { new_plan: ['The new plan field must not be greater than 255 characters.'] },
    ],
    ['new_plan a number', (f) => valid(f, { new_plan: 7 }), { new_plan: ['The new plan field must be a string.'] }],
    [
      'occurred_at not a date',
      (f) => valid(f, { occurred_at: 'last week' }),
      { occurred_at: ['The occurred at field must be a valid ISO 8601 date-time with a time zone.'] },
    ],
    [
      'occurred_at without a zone',
      (f) => valid(f, { occurred_at: '2025-06-01T00:00:00' }),
      { occurred_at: ['The occurred at field must be a valid ISO 8601 date-time with a time zone.'] },
    ],
    [
      'occurred_at in the future',
      (f) => valid(f, { occurred_at: '2999-01-01T00:00:00Z' }),
      { occurred_at: ['The occurred at field must be a date before or equal to now.'] },
    ],
    // The type agrees with the amounts.
    [
      'created from more than 0',
      (f) => valid(f, { event_type: 'created', old_amount: '5', new_amount: '10' }),
      { event_type: ['The created event type needs old amount 0 and new amount above 0.'] },
    ],
    [
      'created to 0',
      (f) => valid(f, { event_type: 'created', old_amount: '0', new_amount: '0' }),
      { event_type: ['The created event type needs old amount 0 and new amount above 0.'] },
    ],
    [
      'upgrade from 900 to 100',
      (f) => valid(f, { event_type: 'upgrade', old_amount: '900', new_amount: '100' }),
      { event_type: ['The upgrade event type needs new amount greater than old amount.'] },
    ],
    [
      'upgrade to the same amount',
      (f) => valid(f, { event_type: 'upgrade', old_amount: '100', new_amount: '100.00' }),
      { event_type: ['The upgrade event type needs new amount greater than old amount.'] },
    ],
    [
      'downgrade upwards',
      (f) => valid(f, { event_type: 'downgrade', old_amount: '100', new_amount: '150' }),
      { event_type: ['The downgrade event type needs new amount above 0 and less than old amount.'] },
    ],
    [
      'downgrade to 0 (a cancel)',
      (f) => valid(f, { event_type: 'downgrade', old_amount: '100', new_amount: '0' }),
      { event_type: ['The downgrade event type needs new amount above 0 and less than old amount.'] },
    ],
    [
      'cancel to more than 0',
      (f) => valid(f, { event_type: 'cancel', old_amount: '100', new_amount: '50' }),
      { event_type: ['The cancel event type needs old amount above 0 and new amount 0.'] },
    ],
    [
      'cancel from 0',
      (f) => valid(f, { event_type: 'cancel', old_amount: '0', new_amount: '0' }),
      { event_type: ['The cancel event type needs old amount above 0 and new amount 0.'] },
    ],
    [
      'reactivated from more than 0',
      (f) => valid(f, { event_type: 'reactivated', old_amount: '10', new_amount: '20' }),
      { event_type: ['The reactivated event type needs old amount 0 and new amount above 0.'] },
    ],
  ];

  it.each(cases)('422 for %s; nothing stored', async (_name, body, errors) => {
    const before = await snapshot(m);
    expect422(await api.post('/subscriptions/events', m.token, body(fx)), errors);
    expect(await snapshot(m)).toEqual(before);
  });

  it('records a valid event: 201, source import, amount_change computed, occurred_at in UTC, optional fields null', async () => {
    fixedClock(NOW);
    const full = await api.post('/subscriptions/events', m.token, {
      customer_id: fx.customerId,
      subscription_id: fx.subscriptionId,
      event_type: 'downgrade',
      old_amount: 150,
      new_amount: '99.5',
      old_plan: long(255),
      new_plan: 'Lite',
      occurred_at: '2025-06-01T09:00:00+09:00',
    });
    expect(full.status, JSON.stringify(full.body)).toBe(201);
    expect(full.body.data).toEqual({
      id: expect.any(Number),
      customer_id: fx.customerId,
      subscription_id: fx.subscriptionId,
      event_type: 'downgrade',
      source: 'import',
      old_amount: '150.00',
      new_amount: '99.50',
      amount_change: '-50.50',
      old_plan: long(255),
      new_plan: 'Lite',
      occurred_at: '2025-06-01T00:00:00Z',
      created_at: NOW,
    });
    // A customer with no subscription yet: an event without one is its imported history, dated now by default.
    const historyOnly = await newCustomer(m.token);
    const minimal = await api.post('/subscriptions/events', m.token, {
      customer_id: historyOnly.id,
      event_type: 'created',
      old_amount: '0',
      new_amount: '10',
    });
    expect(minimal.status, JSON.stringify(minimal.body)).toBe(201);
    expect(minimal.body.data).toMatchObject({
      subscription_id: null,
      old_plan: null,
      new_plan: null,
      occurred_at: NOW,
      amount_change: '10.00',
      source: 'import',
    });
    // A recorded event changes no subscription.
    expect((await api.get(`/subscriptions/${fx.subscriptionId}`, m.token)).body.data).toMatchObject({
      status: 'active',
      mrr: '100.00',
      plan_name: 'Basic',
    });
  });

  it('accepts every event type with amounts that agree with it', async () => {
    const amounts: Record<string, [string, string]> = {
      created: ['0', '10'],
      upgrade: ['10', '15'],
      downgrade: ['15', '12'],
      cancel: ['12', '0'],
      reactivated: ['0', '9'],
    };
    for (const [event_type, [old_amount, new_amount]] of Object.entries(amounts)) {
      const r = await api.post(
        '/subscriptions/events',
        m.token,
        valid(fx, { subscription_id: fx.subscriptionId, event_type, old_amount, new_amount }),
      );
      expect(r.status, `${event_type}: ${JSON.stringify(r.body)}`).toBe(201);
      expect(r.body.data.event_type).toBe(event_type);
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe('GET /subscriptions and GET /subscriptions/events: query validation', () => {
  let m: Merchant;
  beforeAll(async () => {
    m = await newMerchant();
    await createSubscription(m.token, (await newCustomer(m.token)).id);
  });

  const pageCases: [string, Record<string, string[]>][] = [
    ['page=0', { page: ['The page field must be at least 1.'] }],
    ['page=-1', { page: ['The page field must be an integer.'] }],
    ['page=abc', { page: ['The page field must be an integer.'] }],
    ['page=1.5', { page: ['The page field must be an integer.'] }],
    ['page=2147483648', { page: ['The page field must not be greater than 2147483647.'] }],
    ['per_page=0', { per_page: ['The per page field must be between 1 and 100.'] }],
    ['per_page=101', { per_page: ['The per page field must be between 1 and 100.'] }],
    ['per_page=ten', { per_page: ['The per page field must be an integer.'] }],
    ['page=0&per_page=500', { page: ['The page field must be at least 1.'], per_page: ['The per page field must be between 1 and 100.'] }],
  ];

  const listCases: [string, Record<string, string[]>][] = [
    ...pageCases,
    ['status=trial', { status: ['The selected status is invalid. Allowed: trialing, active, past_due, paused, cancelled.'] }],
    ['status=ACTIVE', { status: ['The selected status is invalid. Allowed: trialing, active, past_due, paused, cancelled.'] }],
    ['status=', { status: ['The selected status is invalid. Allowed: trialing, active, past_due, paused, cancelled.'] }],
    ['customer_id=abc', { customer_id: ['The customer id field must be a positive integer.'] }],
    ['customer_id=0', { customer_id: ['The customer id field must be a positive integer.'] }],
    ['customer_id=-2', { customer_id: ['The customer id field must be a positive integer.'] }],
    ['customer_id=9007199254740992', { customer_id: ['The customer id field must not be greater than 9007199254740991.'] }],
    [`plan_name=${long(256)}`, { plan_name: ['The plan name field must not be greater than 255 characters.'] }],
  ];

  it.each(listCases)('GET /subscriptions?%s → 422 on that parameter', async (query, errors) => {
    expect422(await api.get(`/subscriptions?${query}`, m.token), errors);
  });

  const eventCases: [string, Record<string, string[]>][] = [
    ...pageCases,
    [
      'event_type=upgraded',
      {
        event_type: [
          'The selected event type is invalid. Allowed: created, upgrade, downgrade, cancel, reactivated, trial_converted, trial_cancelled, past_due, recovered.',
        ],
      },
    ],
    [
      'event_type=subscription.created',
      {
        event_type: [
          'The selected event type is invalid. Allowed: created, upgrade, downgrade, cancel, reactivated, trial_converted, trial_cancelled, past_due, recovered.',
        ],
      },
    ],
    ['customer_id=x', { customer_id: ['The customer id field must be a positive integer.'] }],
    ['customer_id=0', { customer_id: ['The customer id field must be a positive integer.'] }],
    ['subscription_id=0', { subscription_id: ['The subscription id field must be a positive integer.'] }],
    ['subscription_id=1.5', { subscription_id: ['The subscription id field must be a positive integer.'] }],
    ['start_date=2026-13-01', { start_date: ['The start date field must be a date (YYYY-MM-DD) or an ISO 8601 date-time.'] }],
    ['start_date=2026-02-30', { start_date: ['The start date field must be a date (YYYY-MM-DD) or an ISO 8601 date-time.'] }],
    ['start_date=2026-01-01T00:00:00', { start_date: ['The start date field must be a date (YYYY-MM-DD) or an ISO 8601 date-time.'] }],
    ['end_date=yesterday', { end_date: ['The end date field must be a date (YYYY-MM-DD) or an ISO 8601 date-time.'] }],
    ['start_date=2026-03-02&end_date=2026-03-01', { end_date: ['The end date field must be a date after or equal to the start date.'] }],
    [
      'start_date=2026-03-01T12:00:00Z&end_date=2026-03-01T11:59:59Z',
      { end_date: ['The end date field must be a date after or equal to the start date.'] },
    ],
  ];

  it.each(eventCases)('GET /subscriptions/events?%s → 422 on that parameter', async (query, errors) => {
    expect422(await api.get(`/subscriptions/events?${query}`, m.token), errors);
  });

  it('valid filters answer 200: every status, every event type, equal or date-time bounds, a page past the end', async () => {
    for (const status of ['active', 'paused', 'cancelled']) {
      expect((await api.get(`/subscriptions?status=${status}&per_page=1&page=1`, m.token)).status, status).toBe(200);
    }
    for (const t of ['created', 'upgrade', 'downgrade', 'cancel', 'reactivated']) {
      expect((await api.get(`/subscriptions/events?event_type=${t}`, m.token)).status, t).toBe(200);
    }
    const sameDay = await api.get('/subscriptions/events?start_date=2026-03-01&end_date=2026-03-01', m.token);
    expect(sameDay.status, JSON.stringify(sameDay.body)).toBe(200);
    const offsets = await api.get(
      `/subscriptions/events?start_date=${encodeURIComponent('2026-03-01T00:00:00+08:00')}&end_date=2026-03-01`,
      m.token,
    );
    expect(offsets.status, JSON.stringify(offsets.body)).toBe(200);
    const past = await api.get('/subscriptions?page=50&per_page=100', m.token);
    expect(past.status).toBe(200);
    expect(past.body).toEqual({
      data: [],
      meta: { current_page: 50, from: null, last_page: 1, per_page: 100, to: null, total: 1, next_cursor: null },
    });
  });
});

// ---------------------------------------------------------------------------------------------

describe('malformed JSON bodies', () => {
  it('400 {message: "The request body is not valid JSON."} on every subscription write with a body; nothing stored', async () => {
    const m = await newMerchant();
    const c = await newCustomer(m.token);
    const sub = await createSubscription(m.token, c.id);
    const before = await snapshot(m);
    const stored = (await api.get(`/subscriptions/${sub.id}`, m.token)).body.data;
    const targets: [string, string][] = [
      ['POST', '/subscriptions'],
      ['PUT', `/subscriptions/${sub.id}`],
      ['PUT', `/subscriptions/${sub.id}/cancel`],
      ['PUT', `/subscriptions/${sub.id}/pause`],
      ['PUT', `/subscriptions/${sub.id}/reactivate`],
      ['POST', '/subscriptions/events'],
    ];
    for (const [method, path] of targets) {
      for (const rawBody of [`{"customer_id": ${c.id}, "plan_name": "Basic",`, "{'mrr': 1}", 'not json']) {
        const r = await api.request(method, path, { token: m.token, rawBody, headers: { 'content-type': 'application/json' } });
        expect(r.status, `${method} ${path} ${rawBody}: ${JSON.stringify(r.body)}`).toBe(400);
        expect(r.body).toEqual({ message: 'The request body is not valid JSON.' });
      }
    }
    expect((await api.get(`/subscriptions/${sub.id}`, m.token)).body.data).toEqual(stored);
    expect(await snapshot(m)).toEqual(before);
  });

  it('a JSON body that is not an object is a 422, not a 5xx', async () => {
    const m = await newMerchant();
    const before = await snapshot(m);
    for (const rawBody of ['[]', '"text"', '42']) {
      const r = await api.request('POST', '/subscriptions', { token: m.token, rawBody, headers: { 'content-type': 'application/json' } });
      expect(r.status, `${rawBody}: ${JSON.stringify(r.body)}`).toBe(422);
      expect(r.body.message).toBe(INVALID);
    }
    expect(await snapshot(m)).toEqual(before);
  });
});
