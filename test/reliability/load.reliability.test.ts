import Decimal from 'decimal.js';
import { afterAll, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { retryStats } from '#lib/db/retry';
import { newMerchant, useApi } from '../support/api.ts';
import { transactionConflictModel } from '../support/faults.ts';
import { figuresFromOrders, listAll, outboxEvents, pickFigures, storedOrders } from '../orders/helpers.ts';
import { expectedSeries, expectedSummary, refSegment, type RefCustomer } from '../metrics/reference.ts';
import { addCounts, sendUntilSettled } from './support.ts';
import { allPages } from '../support/pages.ts';

/**
 * Load and no loss: 2,000 order creates from 50 concurrent clients against one merchant,
 * under the model of AWS's transaction isolation (a transaction naming an item another in-flight one
 * holds is cancelled). Each client retries any 5xx, 409 or network error with the same idempotency
 * key. Afterwards: exactly the 2,000 orders, every answer the stored order, customer figures, stats
 * and metrics equal to a recomputation from the orders, one `order.created` outbox event each.
 */
process.env.RATE_LIMIT_PER_HOUR = '1000000';
const api = useApi();
afterAll(() => resetClock());

const ORDERS = Number(process.env.LOAD_ORDERS ?? 2000);
const CLIENTS = 50;
const CUSTOMERS_PER_CLIENT = 8;
const TODAY = '2025-06-15';
const NOW = `${TODAY}T12:00:00Z`;
const DAY_MS = 86_400_000;

/** Order n of the load: amounts with cents, a third pending, a tenth in USD, a quarter monthly, paid over the last 40 days. */
const orderOf = (client: number, i: number) => {
  const n = client * (ORDERS / CLIENTS) + i;
  const status = n % 3 === 0 ? 'pending' : 'paid';
  return {
    order_no: `LOAD-${n}`,
    amount: `${(n % 97) + 1}.${String(n % 100).padStart(2, '0')}`,
    customer_email: `c${client}-${i % CUSTOMERS_PER_CLIENT}@load.test`,
    customer_name: `Client ${client}`,
    status,
    currency: n % 10 === 0 ? 'USD' : 'TWD',
    billing_cycle: n % 4 === 0 ? 'monthly' : 'one-time',
    ...(status === 'paid' ? { paid_at: new Date(Date.parse(NOW) - (n % 40) * DAY_MS).toISOString().replace('.000', '') } : {}),
  };
};

const addOneMonth = (t: string) => {
  const d = new Date(t);
  const target = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()));
  const last = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(d.getUTCDate(), last));
  return target.toISOString().replace('.000', '');
};

describe(`${ORDERS} order creates from ${CLIENTS} concurrent retrying clients`, () => {
  it('stores exactly every order once; figures, stats, metrics and outbox equal a recomputation', async () => {
    fixedClock(NOW);
    const { merchantId, token } = await newMerchant();
    const model = transactionConflictModel();
    const retriesBefore = retryStats.retries;
    const started = Date.now();
    const retried: Record<string, number> = {};
    let requests = 0;
    const answers = new Map<string, any>();
    try {
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, client) => {
          for (let i = 0; i < ORDERS / CLIENTS; i++) {
            const body = orderOf(client, i);
            const settled = await sendUntilSettled(() => api.post('/orders', token, body, { 'X-Idempotency-Key': `key-${body.order_no}` }));
            requests += settled.attempts;
            addCounts(retried, settled.retried);
            expect(settled.res.status, `${body.order_no}: ${JSON.stringify(settled.res.body)}`).toBe(201);
            answers.set(body.order_no, settled.res.body.data);
          }
        }),
      );
    } finally {
      model.uninstall();
    }
    const ms = Date.now() - started;
    console.info(
      `[load] ${ORDERS} orders, ${requests} requests in ${(ms / 1000).toFixed(1)} s; client retries by answer ${JSON.stringify(retried)}; ` +
        `server retries ${retryStats.retries - retriesBefore}; cancelled transactions ${model.stats.conflicts} of ${model.stats.transactions}`,
    );

    // Exactly the orders sent, each once, each stored as it was answered.
    const stored = await storedOrders(merchantId);
    expect(stored).toHaveLength(ORDERS);
    const { orders, total } = (await listAll(api, token)) as { orders: any[]; total: number };
    expect(total).toBe(ORDERS);
    expect(new Set(orders.map((o) => o.order_no)).size).toBe(ORDERS);
    for (const o of orders) expect(o, o.order_no).toEqual(answers.get(o.order_no));
    const lost = [...answers.keys()].filter((no) => !orders.some((o) => o.order_no === no));
    expect(lost).toEqual([]);

    // Customer figures = the recomputation from each customer's orders.
    const byCustomer = new Map<number, any[]>();
    for (const o of orders) byCustomer.set(o.customer_id, [...(byCustomer.get(o.customer_id) ?? []), o]);
    const { items: customers } = await allPages(api, token, '/customers');
    expect(customers).toHaveLength(CLIENTS * CUSTOMERS_PER_CLIENT);
    for (const c of customers) expect(pickFigures(c), c.email).toEqual(figuresFromOrders(byCustomer.get(c.id) ?? []));

    // Stats = the recomputation (every order was created today; revenue by paid_at).
    for (const currency of ['TWD', 'USD']) {
      const paid = orders.filter((o) => o.status === 'paid' && o.currency === currency);
      const sum = (list: any[]) => list.reduce((s, o) => s.plus(o.amount), new Decimal(0)).toFixed(2);
      const stats = (await api.get(`/orders/stats?currency=${currency}`, token)).body.data;
      expect(stats, currency).toEqual({
        today_revenue: sum(paid.filter((o) => o.paid_at.startsWith(TODAY))),
        monthly_revenue: sum(paid.filter((o) => o.paid_at.startsWith(TODAY.slice(0, 7)))),
        today_count: ORDERS,
        today_success_rate: new Decimal(orders.filter((o) => o.status === 'paid').length)
          .times(100)
          .div(ORDERS)
          .toDecimalPlaces(1, Decimal.ROUND_HALF_UP)
          .toNumber(),
      });
    }

    // Metrics = the from-scratch reference: each paid monthly order is its amount for one month; the USD
    // ones have no exchange rate, so they are left out of the figures and reported as unconverted.
    const ref: RefCustomer[] = refSegment(
      [...byCustomer.values()].map((list) => ({
        lines: new Map(
          list
            .filter((o) => o.status === 'paid' && o.billing_cycle === 'monthly')
            .map((o) => {
              const tags = { plan: null, cycle: 'monthly', currency: o.currency };
              return [
                `O${o.order_no}`,
                [
                  { at: o.paid_at, amount: new Decimal(o.amount), flag: 'o' as const, ...tags },
                  { at: addOneMonth(o.paid_at), amount: new Decimal(0), flag: 'o' as const, ...tags },
                ],
              ];
            }),
        ),
      })),
      {},
    );
    const series = await api.get(`/metrics/mrr?start_date=2025-04-01&end_date=${TODAY}&interval=day`, token);
    const expected = expectedSeries(ref, '2025-04-01', TODAY, 'day');
    expect(series.body.data).toEqual(expected.data);
    expect(series.body.summary).toEqual(expected.summary);
    expect((await api.get('/metrics/summary', token)).body.data).toEqual(expectedSummary(ref, TODAY));

    // One order.created outbox event per order, and one order.paid per paid order.
    const events = await outboxEvents(merchantId);
    const created = events.filter((e) => e.type === 'order.created').map((e) => e.data.object.order_no);
    expect(created).toHaveLength(ORDERS);
    expect(new Set(created).size).toBe(ORDERS);
    expect(events.filter((e) => e.type === 'order.paid')).toHaveLength(orders.filter((o) => o.status === 'paid').length);
  });
});
