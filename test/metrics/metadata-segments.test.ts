import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { repairCustomer } from '#lib/customers/repair';
import { rebuildMerchantAggregates } from '#lib/metrics/rebuild';
import { newMerchant, useApi } from '../support/api.ts';

/**
 * Segments read from the matching customers' timelines (docs/metrics.md, "Segments"): customer
 * metadata filters (ANDed), a union of plans, a plan with another filter. Each figure by hand from
 * one small history; the request counts of such a read grow with the customers it matches only.
 */
const api = useApi();
afterEach(() => resetClock());

const report = (call: string, requests: number, budget: number) =>
  console.info(`[budget] ${call}: ${requests} requests (budget ≤ ${budget})`);

type Entry = { date: string; mrr: string; new: string; active_customers: number; active_subscriptions: number };
const pick = (e: Entry) => [e.date, e.mrr, e.new, e.active_customers, e.active_subscriptions];

const monthly = async (token: string, filter: string) => {
  const r = await api.get(`/metrics/mrr?start_date=2026-01-01&end_date=2026-02-20&interval=month&${filter}`, token);
  expect(r.status, `${filter} ${JSON.stringify(r.body)}`).toBe(200);
  return (r.body.data as Entry[]).map(pick);
};

/**
 * On 2026-01-05: A {tier: gold, region: eu} Pro 100; B {tier: gold, region: us} Basic 50; C
 * {tier: silver} Pro 30; D {tier: {level: gold}} (an object: not indexed) Pro 7; E {tier: Gold,
 * vip: true, seats: 3} Pro 11, yearly. All monthly but E.
 */
const history = async () => {
  const clock = fixedClock('2026-01-05T00:00:00Z');
  const { token, merchantId } = await newMerchant();
  const customer = async (email: string, metadata: Record<string, unknown>) => {
    const r = await api.post('/customers', token, { email, metadata });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.data.id as number;
  };
  const ids = {
    a: await customer('a@meta.test', { tier: 'gold', region: 'eu' }),
    b: await customer('b@meta.test', { tier: 'gold', region: 'us' }),
    c: await customer('c@meta.test', { tier: 'silver' }),
    d: await customer('d@meta.test', { tier: { level: 'gold' } }),
    e: await customer('e@meta.test', { tier: 'Gold', vip: true, seats: 3 }),
  };
  for (const [who, plan_name, mrr, billing_cycle] of [
    ['a', 'Pro', '100', 'monthly'],
    ['b', 'Basic', '50', 'monthly'],
    ['c', 'Pro', '30', 'monthly'],
    ['d', 'Pro', '7', 'monthly'],
    ['e', 'Pro', '11', 'yearly'],
  ] as const) {
    const r = await api.post('/subscriptions', token, { customer_id: ids[who], plan_name, mrr, billing_cycle });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  }
  clock.set('2026-02-20T12:00:00Z');
  return { token, merchantId, ids, clock };
};

describe('segments read from the matching customers', () => {
  it('metadata filters (exact, case-sensitive, ANDed), a union of plans, a plan with a cycle; objects never match', {
    timeout: 60_000,
  }, async () => {
    const { token } = await history();
    const jan = (mrr: string, customers: number) => ['2026-01-01', mrr, mrr, customers, customers];
    const feb = (mrr: string, customers: number) => ['2026-02-01', mrr, '0.00', customers, customers];
    expect(await monthly(token, 'metadata.tier=gold')).toEqual([jan('150.00', 2), feb('150.00', 2)]);
    expect(await monthly(token, 'metadata.tier=Gold')).toEqual([jan('11.00', 1), feb('11.00', 1)]);
    expect(await monthly(token, 'metadata.tier=gold&metadata.region=eu')).toEqual([jan('100.00', 1), feb('100.00', 1)]);
    // A number and a boolean match their String().
    expect(await monthly(token, 'metadata.vip=true&metadata.seats=3')).toEqual([jan('11.00', 1), feb('11.00', 1)]);
    // D's tier is an object: never indexed, so no value matches it.
    expect(await monthly(token, 'metadata.tier=%5Bobject%20Object%5D')).toEqual([jan('0.00', 0), feb('0.00', 0)]);
    expect(await monthly(token, `metadata.tier=${encodeURIComponent('{"level":"gold"}')}`)).toEqual([jan('0.00', 0), feb('0.00', 0)]);
    expect(await monthly(token, 'metadata.unknown=x')).toEqual([jan('0.00', 0), feb('0.00', 0)]);
    // A union of plans is the whole here; with metadata, its customers' lines of those plans.
    expect(await monthly(token, 'plan=Pro&plan=Basic')).toEqual([jan('198.00', 5), feb('198.00', 5)]);
    expect(await monthly(token, 'plan=Pro&plan=Basic&metadata.tier=gold')).toEqual([jan('150.00', 2), feb('150.00', 2)]);
    expect(await monthly(token, 'plan=Pro&metadata.tier=gold')).toEqual([jan('100.00', 1), feb('100.00', 1)]);
    expect(await monthly(token, 'plan=Pro&billing_cycle=monthly')).toEqual([jan('137.00', 3), feb('137.00', 3)]);
    // A plan name holding a comma is one plan, not two.
    expect(await monthly(token, `plan=${encodeURIComponent('Pro,Basic')}&plan=Basic`)).toEqual([jan('50.00', 1), feb('50.00', 1)]);

    const summary = await api.get('/metrics/summary?metadata.tier=gold&plan=Pro&plan=Basic', token);
    expect(summary.status).toBe(200);
    expect(summary.body.data).toMatchObject({ current_mrr: '150.00', active_customers: 2, active_subscriptions: 2 });
    const cohorts = await api.get('/metrics/cohorts?start_month=2026-01&end_month=2026-02&metadata.region=us', token);
    expect(cohorts.status).toBe(200);
    expect(cohorts.body.data[0]).toMatchObject({ cohort: '2026-01', customers: 1, mrr: '50.00' });
    expect(cohorts.body.data[0].retention.map((r: { mrr: string }) => r.mrr)).toEqual(['50.00', '50.00']);
  });

  it('a customer whose metadata changes moves between segments on the next read; a deleted one still counts', {
    timeout: 60_000,
  }, async () => {
    const { token, ids } = await history();
    expect((await api.put(`/customers/${ids.c}`, token, { metadata: { tier: 'gold' } })).status).toBe(200);
    expect((await monthly(token, 'metadata.tier=gold')).map((e) => e[1])).toEqual(['180.00', '180.00']);
    expect((await monthly(token, 'metadata.tier=silver')).map((e) => e[1])).toEqual(['0.00', '0.00']);
    // A pair removed goes from its index; the others stay.
    expect((await api.put(`/customers/${ids.a}`, token, { metadata: { tier: 'gold' } })).status).toBe(200);
    expect((await monthly(token, 'metadata.region=eu')).map((e) => e[1])).toEqual(['0.00', '0.00']);
    expect((await monthly(token, 'metadata.tier=gold')).map((e) => e[1])).toEqual(['180.00', '180.00']);
    // A soft-deleted customer's lines still count in the whole, so in its metadata segment too.
    expect((await api.del(`/customers/${ids.b}`, token)).status).toBe(204);
    expect((await monthly(token, 'metadata.tier=gold')).map((e) => e[1])).toEqual(['180.00', '180.00']);
    expect((await monthly(token, 'metadata.region=us')).map((e) => e[1])).toEqual(['50.00', '50.00']);
  });

  it('50 metadata keys, every value replaced at once: one transaction (200), the first 40 keys in key order indexed', {
    timeout: 60_000,
  }, async () => {
    const { token, ids } = await history();
    // k00 … k49: k00–k39 are the first 40 in key order.
    const meta = (v: string) => Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${String(i).padStart(2, '0')}`, `${v}${i}`]));
    expect((await api.put(`/customers/${ids.c}`, token, { metadata: meta('x') })).status).toBe(200);
    const replaced = await api.put(`/customers/${ids.c}`, token, { metadata: meta('y') });
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect(replaced.body.data.metadata.k49).toBe('y49');
    expect((await monthly(token, 'metadata.k39=y39')).map((e) => e[1])).toEqual(['30.00', '30.00']);
    expect((await monthly(token, 'metadata.k00=x0')).map((e) => e[1])).toEqual(['0.00', '0.00']);
    // Past the 40th key: stored and returned, but not indexed.
    expect((await monthly(token, 'metadata.k40=y40')).map((e) => e[1])).toEqual(['0.00', '0.00']);
  });

  it('ops metrics rebuild gives customers written before the indexes their entries', { timeout: 60_000 }, async () => {
    const { token, merchantId, ids } = await history();
    // As written before the indexes: A's metadata pairs and B's plan entry gone.
    for (const key of [
      keys.customerMetadata(merchantId, 'tier', 'gold', ids.a),
      keys.customerMetadata(merchantId, 'region', 'eu', ids.a),
      keys.planCustomer(merchantId, 'Basic', ids.b),
    ])
      await db().send(new DeleteCommand({ TableName: tableName(), Key: key }));
    expect((await monthly(token, 'metadata.tier=gold')).map((e) => e[1])).toEqual(['50.00', '50.00']);
    expect((await monthly(token, 'plan=Pro&plan=Basic')).map((e) => e[1])).toEqual(['148.00', '148.00']);
    expect(await rebuildMerchantAggregates(merchantId, repairCustomer)).toMatchObject({ index_entries_added: 3, aggregates_corrected: 0 });
    expect((await monthly(token, 'metadata.tier=gold')).map((e) => e[1])).toEqual(['150.00', '150.00']);
    expect((await monthly(token, 'plan=Pro&plan=Basic')).map((e) => e[1])).toEqual(['198.00', '198.00']);
    expect(await rebuildMerchantAggregates(merchantId, repairCustomer)).toMatchObject({ index_entries_added: 0 });
  });

  it('bad filters are a 422 on the parameter', async () => {
    fixedClock('2026-03-31T12:00:00Z');
    const { token } = await newMerchant();
    const bad = async (path: string, field: string, message: string) => {
      const r = await api.get(path, token);
      expect(r.status, path).toBe(422);
      expect(r.body.errors[field], path).toEqual([message]);
    };
    const noKey = 'The metadata. parameter must name a metadata key: metadata.<key>=<value>.';
    await bad('/metrics/mrr?metadata.=x', 'metadata.', noKey);
    await bad('/metrics/summary?metadata.=x', 'metadata.', noKey);
    await bad('/metrics/cohorts?metadata.=x&metadata.a=b', 'metadata.', noKey);
    await bad('/metrics/mrr?plan=Pro&plan=', 'plan', 'Each plan must have 1 to 255 characters.');
    // Which customers a cycle and a currency alone concern, no index says: still one at a time.
    await bad(
      '/metrics/mrr?billing_cycle=monthly&currency=USD',
      'currency',
      'Give one segment filter at a time: plan, billing_cycle or currency.',
    );
  });

  it('a metadata segment and a 2-plan segment cost 2 + 4 per index + 1 per 100 matching customers, whatever the other customers', {
    timeout: 120_000,
  }, async () => {
    fixedClock('2026-01-05T00:00:00Z');
    const merchant = async (others: number) => {
      const m = await newMerchant();
      const customers = [
        ...Array.from({ length: 30 }, (_, i) => ({ email: `in${i}@cost.test`, metadata: { team: 'core' } })),
        ...Array.from({ length: others }, (_, i) => ({ email: `out${i}@cost.test`, metadata: { team: 'other' } })),
      ];
      const chunks = <T>(list: T[]) => Array.from({ length: Math.ceil(list.length / 100) }, (_, i) => list.slice(i * 100, i * 100 + 100));
      for (const chunk of chunks(customers)) {
        const made = await api.post('/customers/batch', m.token, { customers: chunk });
        expect(made.status, JSON.stringify(made.body).slice(0, 500)).toBe(200);
      }
      const subscriptions = customers.map((c, i) => ({
        external_id: `s${i}`,
        customer_email: c.email,
        plan_name: i < 30 ? (i % 2 ? 'A' : 'B') : 'C',
        mrr: '10',
        billing_cycle: 'monthly',
        started_at: '2025-12-01T00:00:00Z',
      }));
      for (const chunk of chunks(subscriptions)) {
        const subs = await api.post('/subscriptions/batch', m.token, { subscriptions: chunk });
        expect(subs.status, JSON.stringify(subs.body).slice(0, 500)).toBe(200);
      }
      return m;
    };
    const reads = async (token: string) => ({
      metadata: await api.counted('GET', '/metrics/mrr?start_date=2025-12-01&end_date=2026-01-05&metadata.team=core', { token }),
      plans: await api.counted('GET', '/metrics/mrr?start_date=2025-12-01&end_date=2026-01-05&plan=A&plan=B', { token }),
    });
    const alone = await reads((await merchant(0)).token);
    const among = await reads((await merchant(300)).token);
    const budgets = { metadata: 2 + 4 + 1, plans: 2 + 4 * 2 + 1 };
    for (const name of ['metadata', 'plans'] as const) {
      expect(among[name].res.status).toBe(200);
      expect(among[name].res.body.data.at(-1).mrr).toBe('300.00');
      expect(among[name].res.body).toEqual(alone[name].res.body);
      report(`GET /metrics/mrr ${name} segment (30 matching, 0 others)`, alone[name].requests, budgets[name]);
      report(`GET /metrics/mrr ${name} segment (30 matching, 300 others)`, among[name].requests, budgets[name]);
      expect(alone[name].requests).toBe(budgets[name]);
      expect(among[name].requests).toBe(alone[name].requests);
    }
  });
});
