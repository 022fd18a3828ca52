import Decimal from 'decimal.js';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { figuresFromOrders, listAll, pickFigures } from './helpers.ts';

/**
 * Model-based property: after any short sequence of creates, PATCHes and batch upserts, every order
 * is what the rules of decisions §6 say, and every pre-aggregated figure (customer ltv / order_count /
 * payment times, today's and this month's stats per currency, list totals per status) equals the
 * figure recomputed from the orders themselves.
 */
const api = useApi();
afterEach(() => resetClock());

const NOW = '2026-03-15T12:00:00Z';
const CLOCKS = [NOW, '2026-03-15T00:00:00Z', '2026-03-14T23:59:59Z', '2026-03-01T00:00:00Z', '2026-02-28T23:59:59Z'];
const PAID_ATS = ['2026-03-15T01:00:00Z', '2026-03-14T23:00:00Z', '2026-03-02T00:00:00Z', '2026-02-01T00:00:00Z', '2025-12-31T23:59:59Z'];
const STATUSES = ['pending', 'paid', 'failed', 'refunded', 'cancelled'] as const;
type Status = (typeof STATUSES)[number];
const CURRENCIES = ['TWD', 'USD', 'JPY'];
const EMAILS = ['a@example.com', 'b@example.com', 'c@example.com'];
const ORDER_NOS = ['P-1', 'P-2', 'P-3', 'P-4', 'P-5', 'P-6'];
const ALLOWED: Record<Status, Status[]> = { pending: ['paid', 'failed', 'cancelled'], failed: ['paid', 'cancelled'], paid: ['refunded'], refunded: [], cancelled: [] };
const STAMP: Partial<Record<Status, 'paid_at' | 'failed_at' | 'refunded_at'>> = { paid: 'paid_at', failed: 'failed_at', refunded: 'refunded_at' };

const amount = fc.integer({ min: 0, max: 500_000 }).map((cents) => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`);
const clock = fc.constantFrom(...CLOCKS);
const orderNo = fc.constantFrom(...ORDER_NOS);
const currency = fc.constantFrom(...CURRENCIES, 'usd');
const email = (customers: number) => fc.constantFrom(...EMAILS.slice(0, customers), ...(customers > 1 ? ['B@Example.com'] : []));

const createCmd = (customers: number) =>
  fc.record(
    {
      kind: fc.constant('create' as const),
      at: clock,
      order_no: orderNo,
      amount,
      customer_email: email(customers),
      status: fc.constantFrom(...STATUSES),
      currency,
      paid_at: fc.constantFrom(...PAID_ATS),
    },
    { requiredKeys: ['kind', 'at', 'order_no', 'amount', 'customer_email'] },
  );
const patchCmd = fc.record(
  { kind: fc.constant('patch' as const), at: clock, order_no: orderNo, status: fc.constantFrom(...STATUSES), paid_at: fc.constantFrom(...PAID_ATS) },
  { requiredKeys: ['kind', 'at', 'order_no', 'status'] },
);
const batchItem = (customers: number) =>
  fc.record(
    {
      order_no: orderNo,
      amount: fc.oneof(amount, fc.constant('')),
      customer_email: fc.oneof(email(customers), fc.constant(null)),
      status: fc.oneof(fc.constantFrom(...STATUSES), fc.constant(null)),
      currency: fc.oneof(currency, fc.constant('')),
      paid_at: fc.constantFrom(...PAID_ATS),
    },
    { requiredKeys: ['order_no'] },
  );
const batchCmd = (customers: number) =>
  fc.record({ kind: fc.constant('batch' as const), at: clock, items: fc.array(batchItem(customers), { minLength: 1, maxLength: 5 }) });

const scenario = fc.integer({ min: 2, max: 3 }).chain((customers) =>
  fc.array(fc.oneof({ arbitrary: createCmd(customers), weight: 3 }, { arbitrary: patchCmd, weight: 2 }, { arbitrary: batchCmd(customers), weight: 2 }), {
    minLength: 5,
    maxLength: 10,
  }),
);

type ModelOrder = {
  amount: string;
  currency: string;
  status: Status;
  paid_at: string | null;
  refunded_at: string | null;
  failed_at: string | null;
  customer_email: string;
  created_at: string;
};

const fill = (o: ModelOrder, at: string) => {
  const field = STAMP[o.status];
  if (field && !o[field]) o[field] = at;
};
const money = (v: string) => new Decimal(v).toFixed(2);
const present = (v: unknown) => v !== undefined && v !== null && v !== '';

describe('orders model property', () => {
  it('stored orders follow the rules and every figure equals the figure recomputed from the orders', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (commands) => {
        const time = fixedClock(NOW);
        const { token } = await newMerchant();
        const model = new Map<string, ModelOrder>();

        for (const cmd of commands) {
          time.set(cmd.at);
          if (cmd.kind === 'create') {
            const { kind: _k, at: _a, ...body } = cmd;
            const r = await api.post('/orders', token, body);
            if (model.has(cmd.order_no)) {
              expect(r.status, JSON.stringify(r.body)).toBe(422);
              expect(Object.keys(r.body.errors)).toEqual(['order_no']);
              continue;
            }
            expect(r.status, JSON.stringify(r.body)).toBe(201);
            const o: ModelOrder = {
              amount: money(cmd.amount),
              currency: (cmd.currency ?? 'TWD').toUpperCase(),
              status: cmd.status ?? 'pending',
              paid_at: cmd.paid_at ?? null,
              refunded_at: null,
              failed_at: null,
              customer_email: cmd.customer_email.toLowerCase(),
              created_at: cmd.at,
            };
            fill(o, cmd.at);
            model.set(cmd.order_no, o);
          } else if (cmd.kind === 'patch') {
            const { kind: _k, at: _a, order_no, ...body } = cmd;
            const r = await api.patch(`/orders/${order_no}`, token, body);
            const o = model.get(order_no);
            if (!o) {
              expect(r.status).toBe(404);
            } else if (!ALLOWED[o.status].includes(cmd.status)) {
              expect(r.status, JSON.stringify(r.body)).toBe(422);
              expect(Object.keys(r.body.errors)).toEqual(['status']);
            } else {
              expect(r.status, JSON.stringify(r.body)).toBe(200);
              o.status = cmd.status;
              if (cmd.paid_at) o.paid_at = cmd.paid_at;
              fill(o, cmd.at);
            }
          } else {
            const r = await api.post('/orders/batch', token, { orders: cmd.items });
            expect(r.status, JSON.stringify(r.body)).toBe(200);
            const want = { created: [] as number[], updated: [] as number[], failed: [] as number[] };
            cmd.items.forEach((item, index) => {
              const o = model.get(item.order_no);
              if (!o) {
                if (!present(item.amount) || !present(item.customer_email)) return void want.failed.push(index);
                const created: ModelOrder = {
                  amount: money(item.amount!),
                  currency: present(item.currency) ? item.currency!.toUpperCase() : 'TWD',
                  status: item.status ?? 'pending',
                  paid_at: item.paid_at ?? null,
                  refunded_at: null,
                  failed_at: null,
                  customer_email: item.customer_email!.toLowerCase(),
                  created_at: cmd.at,
                };
                fill(created, cmd.at);
                model.set(item.order_no, created);
                want.created.push(index);
              } else {
                if (present(item.amount)) o.amount = money(item.amount!);
                if (present(item.currency)) o.currency = item.currency!.toUpperCase();
                if (present(item.status)) o.status = item.status!;
                if (present(item.paid_at)) o.paid_at = item.paid_at!;
                if (present(item.customer_email)) o.customer_email = item.customer_email!.toLowerCase();
                fill(o, cmd.at);
                want.updated.push(index);
              }
            });
            const results = r.body.data.results;
            expect({
              created: results.created.map((x: { index: number }) => x.index),
              updated: results.updated.map((x: { index: number }) => x.index),
              failed: results.failed.map((x: { index: number }) => x.index),
            }).toEqual(want);
          }
        }

        time.set(NOW);
        const { orders, total } = await listAll(api, token);

        // The orders are what the rules say.
        expect(total).toBe(model.size);
        const byNo = new Map(orders.map((o) => [o.order_no, o]));
        for (const [no, want] of model) {
          const got = byNo.get(no);
          expect(got, no).toBeDefined();
          const { amount, currency, status, paid_at, refunded_at, failed_at, customer_email, created_at } = got;
          expect({ amount, currency, status, paid_at, refunded_at, failed_at, customer_email, created_at }, no).toEqual(want);
        }

        // Customer figures equal those recomputed from the orders (customers without orders included).
        const customers = (await api.get('/customers?per_page=100', token)).body.data as any[];
        const single = await Promise.all(customers.map((c) => api.get(`/customers/${c.id}`, token)));
        customers.forEach((c, i) => {
          expect(pickFigures(c), c.email).toEqual(figuresFromOrders(orders.filter((o) => o.customer_id === c.id)));
          expect(pickFigures(single[i].body.data), c.email).toEqual(pickFigures(c));
        });
        expect(new Set(orders.map((o) => o.customer_id)).size).toBeLessThanOrEqual(customers.length);

        // Stats per currency, recomputed from the orders.
        const today = NOW.slice(0, 10);
        const createdToday = orders.filter((o) => o.created_at.slice(0, 10) === today);
        const paidToday = createdToday.filter((o) => o.status === 'paid').length;
        const rate = createdToday.length ? new Decimal(paidToday).times(100).div(createdToday.length).toDecimalPlaces(1, Decimal.ROUND_HALF_UP).toNumber() : 0;
        const revenue = (ccy: string, prefix: string) =>
          orders
            .filter((o) => o.status === 'paid' && o.currency === ccy && o.paid_at?.startsWith(prefix))
            .reduce((s, o) => s.plus(o.amount), new Decimal(0))
            .toFixed(2);
        const stats = await Promise.all(CURRENCIES.map((ccy) => api.get(`/orders/stats?currency=${ccy}`, token)));
        CURRENCIES.forEach((ccy, i) => {
          expect(stats[i].body.data, ccy).toEqual({
            today_revenue: revenue(ccy, today),
            monthly_revenue: revenue(ccy, NOW.slice(0, 7)),
            today_count: createdToday.length,
            today_success_rate: rate,
          });
        });

        // List totals (kept by counters) per status.
        const perStatus = await Promise.all(STATUSES.map((s) => api.get(`/orders?status=${s}&per_page=1`, token)));
        STATUSES.forEach((s, i) => expect(perStatus[i].body.meta.total, s).toBe(orders.filter((o) => o.status === s).length));
      }),
      // PROP_RUNS raises the runs for a deeper search; the time limit keeps a slow machine within the test timeout.
      { numRuns: Number(process.env.PROP_RUNS ?? 25), interruptAfterTimeLimit: 150_000 },
    );
  }, 240_000);
});
