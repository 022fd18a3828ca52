import Decimal from 'decimal.js';
import { afterAll, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi, type ApiResponse } from '../support/api.ts';
import { faultsAtRate } from '../support/faults.ts';
import { figuresFromOrders, listAll, outboxEvents, pickFigures, storedOrders, storedCustomers } from '../orders/helpers.ts';
import { expectedSummary, refSetFrom, type RefCustomer } from '../metrics/reference.ts';
import { pool } from './support.ts';
import { allPages } from '../support/pages.ts';

/**
 * Faults: DynamoDB throttling, transaction conflicts, timeouts before a call reaches
 * DynamoDB and lost answers of writes that did commit, injected through SDK middleware
 * (test/support/faults.ts `faultsAtRate`) on 10 % of all calls. Every answer is a 2xx or a retryable
 * 409 / 503 with Retry-After (never a 500, never another 4xx to a valid request); once the faults
 * stop, every order create retried with its idempotency key completes with the original result, and
 * what is stored is whole: figures, totals, stats, metrics and outbox equal a recomputation.
 */
process.env.RATE_LIMIT_PER_HOUR = '1000000';
const api = useApi();
afterAll(() => resetClock());

const RATE = 0.1;
const ORDERS = Number(process.env.FAULT_ORDERS ?? 300);
const CUSTOMERS = 20;
const CONCURRENCY = 8;
const TODAY = '2025-06-15';
const NOW = `${TODAY}T12:00:00Z`;

const BUSY = { message: 'The service is busy. Try again shortly.' };
const CONTENTION = { message: 'The resource was changed by concurrent requests. Try again.' };

/** A valid request under faults: a 2xx, or a retryable 409 / 503 with its documented body and Retry-After. */
const expectSuccessOrRetryable = (what: string, r: ApiResponse) => {
  const ok = r.status >= 200 && r.status < 300;
  expect(ok || r.status === 409 || r.status === 503, `${what}: ${r.status} ${JSON.stringify(r.body)}`).toBe(true);
  if (ok) return 'ok';
  expect(r.body, what).toEqual(r.status === 503 ? BUSY : CONTENTION);
  expect(Number(r.headers.get('retry-after')), `${what}: Retry-After`).toBeGreaterThanOrEqual(1);
  return String(r.status);
};

const orderOf = (n: number) => ({
  order_no: `F-${n}`,
  amount: `${(n % 50) + 1}.${String(n % 100).padStart(2, '0')}`,
  customer_email: `f${n % CUSTOMERS}@faults.test`,
  status: n % 2 ? 'paid' : 'pending',
  billing_cycle: n % 3 === 0 ? 'monthly' : 'one-time',
});

describe(`faults on ${RATE * 100} % of DynamoDB calls`, () => {
  it('answers 2xx or 409/503 with Retry-After; idempotent retries complete with the original result; nothing partial stored', async () => {
    fixedClock(NOW);
    const { merchantId, token } = await newMerchant();
    const seeded = await api.post('/customers/batch', token, {
      customers: Array.from({ length: CUSTOMERS }, (_, i) => ({ email: `f${i}@faults.test`, name: `F ${i}` })),
    });
    expect(seeded.body.data.created).toBe(CUSTOMERS);
    const customerIds: number[] = seeded.body.data.results.created.map((c: { id: number }) => c.id);

    const outcomes: Record<string, number> = {};
    const tally = (route: string, r: ApiResponse) => {
      const k = `${route} ${expectSuccessOrRetryable(route, r)}`;
      outcomes[k] = (outcomes[k] ?? 0) + 1;
    };
    const faults = faultsAtRate({ rate: RATE, seed: 11 });
    const first = new Map<string, ApiResponse>();
    let requests = 0;
    try {
      // Writes of every kind, each sent once while faults are on.
      await pool(
        Array.from({ length: ORDERS }, (_, n) => n),
        CONCURRENCY,
        async (n) => {
          const body = orderOf(n);
          const r = await api.post('/orders', token, body, { 'X-Idempotency-Key': `fk-${n}` });
          first.set(body.order_no, r);
          tally('POST /orders', r);
        },
      );
      const created = [...first].filter(([, r]) => r.status === 201 && r.body.data.status === 'pending').map(([no]) => no);
      await pool(created, CONCURRENCY, async (no) =>
        tally('PATCH /orders/{orderNo}', await api.patch(`/orders/${no}`, token, { status: 'paid' })),
      );
      await pool(customerIds, CONCURRENCY, async (id) =>
        tally(
          'POST /subscriptions',
          await api.post('/subscriptions', token, { customer_id: id, plan_name: 'Pro', mrr: '30.00', billing_cycle: 'monthly' }),
        ),
      );
      await pool(
        Array.from({ length: 40 }, (_, i) => i),
        CONCURRENCY,
        async (i) => tally('POST /customers', await api.post('/customers', token, { email: `new${i}@faults.test` })),
      );
      await pool(
        Array.from({ length: 4 }, (_, b) => b),
        2,
        async (b) => {
          const r = await api.post('/orders/batch', token, {
            orders: Array.from({ length: 25 }, (_, i) => ({
              order_no: `FB-${b}-${i}`,
              amount: '5.00',
              customer_email: `f${i % CUSTOMERS}@faults.test`,
              status: 'paid',
            })),
          });
          tally('POST /orders/batch', r);
          if (r.status === 200)
            for (const f of r.body.data.results.failed) expect(['conflict', 'throttled'], JSON.stringify(f)).toContain(f.reason);
        },
      );
      for (const path of [
        '/orders',
        '/customers',
        '/subscriptions',
        '/orders/stats',
        '/metrics/summary',
        `/metrics/mrr?start_date=2025-01-01&end_date=${TODAY}`,
      ]) {
        for (let i = 0; i < 5; i++) tally(`GET ${path.split('?')[0]}`, await api.get(path, token));
      }
    } finally {
      faults.uninstall();
    }
    requests = Object.values(outcomes).reduce((a, b) => a + b, 0);
    console.info(
      `[faults] ${requests} requests, ${faults.stats.seen} DynamoDB calls, injected ${JSON.stringify(faults.stats.injected)}; answers ${JSON.stringify(outcomes)}`,
    );
    expect(Object.values(faults.stats.injected).every((n) => n > 0)).toBe(true);

    // Faults stopped: every order create again, same key and body → 201 with the original result.
    let replayed = 0;
    const final = new Map<string, any>();
    await pool(
      Array.from({ length: ORDERS }, (_, n) => n),
      CONCURRENCY,
      async (n) => {
        const body = orderOf(n);
        const again = await api.post('/orders', token, body, { 'X-Idempotency-Key': `fk-${n}` });
        expect(again.status, `${body.order_no}: ${JSON.stringify(again.body)}`).toBe(201);
        const was = first.get(body.order_no)!;
        if (was.status === 201) {
          expect(again.body, body.order_no).toEqual(was.body);
          expect(again.headers.get('idempotent-replayed')).toBe('true');
        }
        if (again.headers.get('idempotent-replayed') === 'true') replayed++;
        final.set(body.order_no, again.body.data);
      },
    );
    console.info(`[faults] after the faults: ${ORDERS} idempotent retries, all 201, ${replayed} replayed`);

    // Whole writes only: every order once, with the figures, totals, stats, metrics and events it implies.
    const { orders, total } = (await listAll(api, token)) as { orders: any[]; total: number };
    expect(total).toBe(orders.length);
    expect(await storedOrders(merchantId)).toHaveLength(orders.length);
    for (const [no, answered] of final) {
      const o = orders.find((x) => x.order_no === no);
      expect(o, no).toBeDefined();
      expect({ ...o, status: answered.status, paid_at: answered.paid_at, updated_at: answered.updated_at }, no).toEqual(answered);
    }
    const { items: customers, total: customerTotal } = await allPages(api, token, '/customers');
    expect(customerTotal).toBe(customers.length);
    expect(await storedCustomers(merchantId)).toHaveLength(customers.length);
    for (const c of customers) expect(pickFigures(c), c.email).toEqual(figuresFromOrders(orders.filter((o) => o.customer_id === c.id)));
    const paid = orders.filter((o) => o.status === 'paid');
    const revenue = paid.reduce((s, o) => s.plus(o.amount), new Decimal(0)).toFixed(2);
    expect((await api.get('/orders/stats', token)).body.data).toEqual({
      today_revenue: revenue,
      monthly_revenue: revenue,
      today_count: orders.length,
      today_success_rate: new Decimal(paid.length).times(100).div(orders.length).toDecimalPlaces(1, Decimal.ROUND_HALF_UP).toNumber(),
    });

    const events = await outboxEvents(merchantId);
    const ofType = (type: string) =>
      events
        .filter((e) => e.type === type)
        .map((e) => e.data.object.order_no)
        .sort();
    const apiOrders = orders
      .filter((o) => o.source === 'api')
      .map((o) => o.order_no)
      .sort();
    expect(ofType('order.created')).toEqual(apiOrders);
    expect(ofType('order.paid')).toEqual(
      paid
        .filter((o) => o.source === 'api')
        .map((o) => o.order_no)
        .sort(),
    );

    // Metrics: the subscriptions that exist, and the paid monthly orders (all paid today, created now).
    const subs = (await api.get('/subscriptions?per_page=100', token)).body.data as any[];
    expect(new Set(subs.map((s) => s.customer_id)).size).toBe(subs.length);
    const ref: RefCustomer[] = customers.map((c) => {
      const rc: RefCustomer = { lines: new Map() };
      for (const s of subs.filter((x) => x.customer_id === c.id)) refSetFrom(rc, `S${s.id}`, s.started_at, s.mrr, 'a');
      for (const o of paid.filter((x) => x.customer_id === c.id && x.billing_cycle === 'monthly')) {
        rc.lines.set(`O${o.order_no}`, [
          { at: o.paid_at, amount: new Decimal(o.amount), flag: 'o' },
          { at: '2025-07-15T12:00:00Z', amount: new Decimal(0), flag: 'o' },
        ]);
      }
      return rc;
    });
    expect((await api.get('/metrics/summary', token)).body.data).toEqual(expectedSummary(ref, TODAY));
  });
});
