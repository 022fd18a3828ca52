import { describe, expect, it } from 'vitest';
import { authKindOf } from '#lib/http/route';
import { routeList } from '#lib/api/routes';
import { runOps } from '../../infra/ops/cli.ts';
import { backofficeJwt, backoffice } from '../backoffice/support.ts';
import { newMerchant, useApi, type ApiResponse } from '../support/api.ts';
import { merchantSnapshot, SAMPLE_BODIES, snapshotDiff } from './support.ts';

/**
 * Isolation: merchant B's token on every route that names one of merchant A's resources
 * (an id, an order number, an external_id, an endpoint or event id: every route of the route table
 * with a path parameter) → 404, and nothing of A changes; no list, stats or metrics answer B gets
 * contains A's data; a deleted merchant's token (and back office) is refused.
 */
process.env.RATE_LIMIT_PER_HOUR = '1000000';
const api = useApi();

const ok = (r: ApiResponse, what: string) => {
  expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBeLessThan(300);
  return r.body?.data;
};

/** A's data, every text marked `alpha` so a leak into B's answers is easy to see. */
const seedAlpha = async (token: string) => {
  const customer = ok(
    await api.post('/customers', token, { email: 'alpha@alpha.test', name: 'Alpha Buyer', external_id: 'alpha-ext' }),
    'customer',
  );
  ok(
    await api.post('/orders', token, {
      order_no: 'ALPHA-1',
      amount: '100.00',
      customer_email: 'alpha@alpha.test',
      status: 'paid',
      billing_cycle: 'monthly',
    }),
    'order',
  );
  const subscription = ok(
    await api.post('/subscriptions', token, { customer_id: customer.id, plan_name: 'alpha-plan', mrr: '50.00', billing_cycle: 'monthly' }),
    'subscription',
  );
  ok(
    await api.post('/subscriptions/events', token, {
      customer_id: customer.id,
      event_type: 'upgrade',
      old_amount: '0',
      new_amount: '10',
      occurred_at: '2025-01-01T00:00:00Z',
    }),
    'event',
  );
  const endpoint = ok(
    await api.post('/webhook-endpoints', token, { url: 'http://localhost:9/alpha-hook', events: ['*'], description: 'alpha-endpoint' }),
    'endpoint',
  );
  // A delivery of A's (the receiver is unreachable here: the attempt is logged either way).
  const attempt = ok(await api.post(`/webhook-endpoints/${endpoint.id}/test`, token), 'test delivery');
  // A batch of A's: its activity-log entry.
  ok(
    await api.post(
      '/orders/batch',
      token,
      { orders: [{ order_no: 'ALPHA-B1', amount: '5', customer_email: 'alpha@alpha.test' }] },
      { 'X-Import-Run': 'alpha-run' },
    ),
    'batch',
  );
  const [activity] = ok(await api.get('/activity', token), 'activity');
  // A's exchange rates (a merchant's own table per currency).
  ok(await api.put('/exchange-rates/CHF', token, { rates: [{ month: '2025-01', rate: '35.7531' }] }), 'rates');
  return { customer, subscription, endpoint, eventId: attempt.event_id as string, activity };
};

describe('merchant isolation', () => {
  it("B's token on each of A's resources: 404, and nothing of A's changes", async () => {
    const a = await newMerchant();
    const b = await newMerchant();
    const alpha = await seedAlpha(a.token);
    const params: Record<string, Record<string, string[]>> = {
      '/customers/': { idOrExternalId: [String(alpha.customer.id), 'alpha-ext'] },
      '/orders/': { orderNo: ['ALPHA-1'] },
      '/subscriptions/': { id: [String(alpha.subscription.id)] },
      '/webhook-endpoints/': { id: [String(alpha.endpoint.id)], event_id: [alpha.eventId] },
      '/activity/': { id: [String(alpha.activity.id)] },
    };
    // A currency's rates are each merchant's own: B's PUT /exchange-rates/CHF writes B's table (checked below), never A's.
    const ownTable = new Set(['exchangeRatesPut']);
    const withParams = routeList.filter((r) => r.path.includes('{') && authKindOf(r) === 'token' && !ownTable.has(r.name));
    expect(withParams.length).toBeGreaterThan(15);
    const before = await merchantSnapshot(a.merchantId);
    let tried = 0;
    for (const route of withParams) {
      const table = Object.entries(params).find(([prefix]) => route.path.startsWith(prefix))?.[1];
      const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const name of names)
        expect(table?.[name], `${route.method} ${route.path}: which of A's resources does {${name}} name? Add it here.`).toBeDefined();
      // Every combination of A's identifiers (customers: by id and by external_id).
      const combos = names.reduce<Record<string, string>[]>((acc, n) => acc.flatMap((c) => table![n].map((v) => ({ ...c, [n]: v }))), [{}]);
      for (const combo of combos) {
        const path = route.path.replace(/\{(\w+)\}/g, (_m, n) => encodeURIComponent(combo[n]));
        const body = route.request?.body ? (SAMPLE_BODIES[route.name] ?? {}) : undefined;
        const asB = await api.request(route.method, path, { token: b.token, body });
        expect(asB.status, `${route.method} ${path} with B's token: ${JSON.stringify(asB.body)}`).toBe(404);
        expect(asB.body).toEqual({ message: 'Resource not found' });
        tried++;
      }
    }
    ok(await api.put('/exchange-rates/CHF', b.token, { rates: [{ month: '2025-01', rate: '1.5' }] }), "B's rates");
    expect(snapshotDiff(before, await merchantSnapshot(a.merchantId))).toEqual([]);
    expect(ok(await api.get('/exchange-rates', a.token), "A's rates")).toEqual([
      { currency: 'CHF', rates: [{ month: '2025-01', rate: '35.7531' }] },
    ]);
    // A still reaches every one of them.
    expect((await api.get(`/customers/${alpha.customer.id}`, a.token)).status).toBe(200);
    expect((await api.get('/orders/ALPHA-1', a.token)).status).toBe(200);
    expect((await api.get(`/subscriptions/${alpha.subscription.id}`, a.token)).status).toBe(200);
    expect((await api.get(`/webhook-endpoints/${alpha.endpoint.id}/deliveries`, a.token)).body.data.length).toBe(1);
    expect((await api.get(`/activity/${alpha.activity.id}`, a.token)).body.data).toMatchObject({
      type: 'orders.batch',
      import_run: 'alpha-run',
    });
    console.info(`[isolation] ${tried} requests with B's token on A's resources, all 404`);
  });

  it("no list, stats or metrics answer to B contains A's data", async () => {
    const a = await newMerchant();
    const b = await newMerchant();
    await seedAlpha(a.token);
    // B's own, smaller business: an unpaid order and a 20.00 subscription.
    const bc = ok(await api.post('/customers', b.token, { email: 'beta@beta.test' }), 'B customer');
    ok(await api.post('/orders', b.token, { order_no: 'BETA-1', amount: '7.00', customer_email: 'beta@beta.test' }), 'B order');
    ok(
      await api.post('/subscriptions', b.token, { customer_id: bc.id, plan_name: 'beta-plan', mrr: '20.00', billing_cycle: 'monthly' }),
      'B subscription',
    );

    const lists = routeList.filter((r) => r.method === 'GET' && !r.path.includes('{') && authKindOf(r) === 'token');
    for (const route of lists) {
      const r = await api.get(route.path, b.token);
      expect(r.status, route.path).toBe(200);
      expect(JSON.stringify(r.body).toLowerCase(), `${route.path} answered to B`).not.toContain('alpha');
      expect(JSON.stringify(r.body), `${route.path} answered to B`).not.toContain('35.7531');
    }
    // Figures are B's alone: A's paid 100.00 and 50.00 MRR are nowhere.
    expect((await api.get('/orders/stats', b.token)).body.data).toMatchObject({
      today_revenue: '0.00',
      monthly_revenue: '0.00',
      today_count: 1,
      today_success_rate: 0,
    });
    expect((await api.get('/metrics/summary', b.token)).body.data).toMatchObject({
      current_mrr: '20.00',
      active_customers: 1,
      active_subscriptions: 1,
    });
    expect((await api.get('/orders', b.token)).body.meta.total).toBe(1);
    expect((await api.get('/customers?search=alpha', b.token)).body.data).toEqual([]);
    expect((await api.get('/orders?customer_email=alpha@alpha.test', b.token)).body.data).toEqual([]);
    expect((await api.get('/activity?import_run=alpha-run', b.token)).body.meta.total).toBe(0);
  });

  it("a deleted merchant's token and back office are refused; its data stays; no new token", async () => {
    const gone = await newMerchant();
    await seedAlpha(gone.token);
    const jwt = await backofficeJwt(gone.merchantId, 'admin');
    expect((await api.get('/customers', gone.token)).status).toBe(200);
    expect((await backoffice(api, 'view', jwt)).status).toBe(200);

    const deleted = (await runOps(['merchant', 'delete', '--merchant', gone.merchantId])) as { merchant_id: string; deleted_at: string };
    expect(deleted).toEqual({ merchant_id: gone.merchantId, deleted_at: expect.stringMatching(/Z$/) });

    const refused = await api.get('/customers', gone.token);
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ message: 'Unauthenticated.' });
    expect((await api.post('/orders', gone.token, { order_no: 'AFTER', amount: '1', customer_email: 'x@alpha.test' })).status).toBe(401);
    expect((await backoffice(api, 'view', jwt)).status).toBe(401);
    expect((await backoffice(api, 'create', jwt)).status).toBe(401);
    await expect(runOps(['token', 'create', '--merchant', gone.merchantId])).rejects.toMatchObject({ status: 404 });
    await expect(runOps(['merchant', 'delete', '--merchant', gone.merchantId])).rejects.toMatchObject({ status: 404 });
    // Soft delete: the data is kept (an operator can still recover it).
    expect((await merchantSnapshot(gone.merchantId)).size).toBeGreaterThan(10);
  });
});
