import Decimal from 'decimal.js';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi, type ApiResponse } from '../support/api.ts';
import { transactionConflictModel, type TransactionConflictModel } from '../support/faults.ts';
import { figuresFromOrders, figuresOfStoredCustomer, listAll, pickFigures, storedCustomer } from './helpers.ts';
import { assertWithinBudget } from '../support/property.ts';
import { refLocalDate } from '../metrics/reference.ts';
import { updateMerchant } from '#lib/merchants/service';

/**
 * Model-based property: after any short sequence of ROUNDS — each round 1–4 commands (creates,
 * PATCHes, batch upserts, customer deletes) sent at the same moment — every order is what the rules
 * of docs/customers.md and docs/orders.md say, and every pre-aggregated figure equals the figure recomputed from the
 * orders themselves: each customer's ltv / order_count / payment times (deleted customers included,
 * read from the table since the API hides them), the stats of EVERY day and month an order touched
 * (read through GET /orders/stats with the clock set to that day), and the list totals per status.
 *
 * Commands of one round address distinct order_nos, so their effects commute and the model stays
 * exact whatever order they commit in, while they still share customers (the same emails): figures,
 * payment times, customer creation and the stats race. A customer delete is the one command whose
 * outcome depends on the order against a write naming its email (that write links to the old or to
 * a new customer), so no other command of its round names the deleted email.
 *
 * About half the runs (chosen by the scenario, so a counterexample replays in the same mode) install
 * the transaction conflict model: overlapping transactions are cancelled as on AWS, and every
 * answer must still be the modelled 2xx/4xx (never 409/5xx at these loads).
 */
const api = useApi();
afterEach(() => resetClock());

const NOW = '2026-03-15T12:00:00Z';
const CLOCKS = [
  NOW,
  '2026-03-15T00:00:00Z',
  '2026-03-14T23:59:59Z',
  '2026-03-01T00:00:00Z',
  '2026-02-28T23:59:59Z',
  '2026-01-31T10:00:00Z',
];
const PAID_ATS = [
  '2026-03-15T01:00:00Z',
  '2026-03-14T23:00:00Z',
  '2026-03-02T00:00:00Z',
  '2026-02-28T12:00:00Z',
  '2026-02-01T00:00:00Z',
  '2025-12-31T23:59:59Z',
];
const STATUSES = ['pending', 'paid', 'failed', 'refunded', 'cancelled'] as const;
type Status = (typeof STATUSES)[number];
const CURRENCIES = ['TWD', 'USD', 'JPY'];
/** JPY has no minor unit: its amounts are whole. */
const wholeOk = (amount: string, currency: string) => currency.toUpperCase() !== 'JPY' || /^\d+(\.0+)?$/.test(String(amount));
const EMAILS = ['a@example.com', 'b@example.com', 'c@example.com'];
const ORDER_NOS = ['P-1', 'P-2', 'P-3', 'P-4', 'P-5', 'P-6', 'P-7', 'P-8'];
const ALLOWED: Record<Status, Status[]> = {
  pending: ['paid', 'failed', 'cancelled'],
  failed: ['paid', 'cancelled'],
  paid: ['refunded'],
  refunded: [],
  cancelled: [],
};
const STAMP: Partial<Record<Status, 'paid_at' | 'failed_at' | 'refunded_at'>> = {
  paid: 'paid_at',
  failed: 'failed_at',
  refunded: 'refunded_at',
};

/**
 * Runs by default (PROP_RUNS overrides; 1–2 s each here) and the wall-clock budget they must all
 * finish in, or the test FAILS (PROP_BUDGET_MS overrides; it grows with PROP_RUNS).
 */
const DEFAULT_RUNS = 10;
const RUNS = Number(process.env.PROP_RUNS ?? DEFAULT_RUNS);
const BUDGET_MS = Number(process.env.PROP_BUDGET_MS ?? Math.max(360_000, Math.ceil((RUNS * 360_000) / DEFAULT_RUNS)));
/** The vitest timeout leaves room for the last run's checks and fast-check's report after the budget. */
const TEST_TIMEOUT_MS = BUDGET_MS + 30_000;

const amount = fc.integer({ min: 0, max: 500_000 }).map((cents) => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`);
const clock = fc.constantFrom(...CLOCKS);
const orderNo = fc.constantFrom(...ORDER_NOS);
const currency = fc.constantFrom(...CURRENCIES, 'usd');
/** The first `customers` emails, the last one also in another case (the same customer). */
const email = (customers: number) => {
  const last = EMAILS[customers - 1];
  return fc.constantFrom(...EMAILS.slice(0, customers), `${last[0].toUpperCase()}@Example.com`);
};

const createCmd = (customers: number) =>
  fc.record(
    {
      kind: fc.constant('create' as const),
      order_no: orderNo,
      amount,
      customer_email: email(customers),
      status: fc.constantFrom(...STATUSES),
      currency,
      paid_at: fc.constantFrom(...PAID_ATS),
    },
    { requiredKeys: ['kind', 'order_no', 'amount', 'customer_email'] },
  );
const patchCmd = fc.record(
  { kind: fc.constant('patch' as const), order_no: orderNo, status: fc.constantFrom(...STATUSES), paid_at: fc.constantFrom(...PAID_ATS) },
  { requiredKeys: ['kind', 'order_no', 'status'] },
);
const batchItem = (customers: number) =>
  fc.record(
    {
      order_no: orderNo,
      amount: fc.oneof({ arbitrary: amount, weight: 3 }, { arbitrary: fc.constant(''), weight: 1 }),
      customer_email: fc.oneof({ arbitrary: email(customers), weight: 3 }, { arbitrary: fc.constant(null), weight: 1 }),
      status: fc.oneof(fc.constantFrom(...STATUSES), fc.constant(null)),
      currency: fc.oneof(currency, fc.constant('')),
      paid_at: fc.constantFrom(...PAID_ATS),
    },
    { requiredKeys: ['order_no'] },
  );
const batchCmd = (customers: number) =>
  fc.record({ kind: fc.constant('batch' as const), items: fc.array(batchItem(customers), { minLength: 1, maxLength: 4 }) });
/** Soft-deletes the live customer holding this email (found through GET /customers?search=). */
const deleteCmd = (customers: number) => fc.record({ kind: fc.constant('delete' as const), email: email(customers) });

const command = (customers: number) =>
  fc.oneof(
    { arbitrary: createCmd(customers), weight: 3 },
    { arbitrary: patchCmd, weight: 2 },
    { arbitrary: batchCmd(customers), weight: 2 },
    { arbitrary: deleteCmd(customers), weight: 2 },
  );
type Command = ReturnType<typeof command> extends fc.Arbitrary<infer T> ? T : never;

const lower = (e: string) => e.toLowerCase();
const orderNosOf = (c: Command): string[] =>
  c.kind === 'create' || c.kind === 'patch' ? [c.order_no] : c.kind === 'batch' ? c.items.map((i) => i.order_no) : [];
const emailsOf = (c: Command): string[] =>
  c.kind === 'create'
    ? [lower(c.customer_email)]
    : c.kind === 'batch'
      ? c.items.flatMap((i) => (i.customer_email ? [lower(i.customer_email)] : []))
      : [];

/**
 * Makes one round's commands commute: each order_no is addressed by one command only (a batch may
 * repeat its own), and an email being deleted is named by no other command of the round. Later
 * commands (batch items) that would break this are dropped, so the first command always stays.
 */
const exclusive = (commands: Command[]): Command[] => {
  const nos = new Set<string>();
  const named = new Set<string>();
  const deleted = new Set<string>();
  const out: Command[] = [];
  for (const c of commands) {
    if (c.kind === 'delete') {
      const e = lower(c.email);
      if (named.has(e) || deleted.has(e)) continue;
      deleted.add(e);
      out.push(c);
      continue;
    }
    let kept: Command = c;
    if (c.kind === 'batch') {
      const items = c.items.filter((i) => !nos.has(i.order_no) && !(i.customer_email && deleted.has(lower(i.customer_email))));
      if (!items.length) continue;
      kept = { ...c, items };
    } else if (orderNosOf(c).some((n) => nos.has(n)) || emailsOf(c).some((e) => deleted.has(e))) {
      continue;
    }
    for (const n of orderNosOf(kept)) nos.add(n);
    for (const e of emailsOf(kept)) named.add(e);
    out.push(kept);
  }
  return out;
};

const round = (customers: number) =>
  fc
    .record({ at: clock, commands: fc.array(command(customers), { minLength: 1, maxLength: 4 }) })
    .map(({ at, commands }) => ({ at, commands: exclusive(commands) }));

/**
 * Exchange rates and the reporting time zone set once the orders are in (docs/customers.md,
 * "Lifetime value in other currencies"): months on both sides of the paid_at values' month ends,
 * and zones that move 31 December 23:59:59 UTC into January (Taipei) and 1 February 00:00 UTC into
 * January (New York).
 */
const fx = fc.record({
  zone: fc.constantFrom('UTC', 'Asia/Taipei', 'America/New_York'),
  // Each currency's month has a rate or not, independently: an order near a month end then often has a rate on one side only.
  rates: fc
    .tuple(
      ...['USD', 'JPY'].flatMap((currency) =>
        ['2025-12', '2026-01', '2026-02', '2026-03'].map((month) =>
          fc.option(
            fc.constantFrom('31.5', '0.2125', '30.123456789').map((rate) => ({ currency, month, rate })),
            { nil: null },
          ),
        ),
      ),
    )
    .map((set) => set.filter((r) => r !== null)),
});
type Fx = { zone: string; rates: { currency: string; month: string; rate: string }[] };

const scenario = fc
  .tuple(fc.boolean(), fc.integer({ min: 1, max: 3 }))
  .chain(([conflicts, customers]) =>
    fc.record({ conflicts: fc.constant(conflicts), rounds: fc.array(round(customers), { minLength: 4, maxLength: 8 }), fx }),
  );

/** The rate of a currency's month, the last one set winning (as the API merges by month). */
const rateBook = ({ rates }: Fx) => {
  const book = new Map<string, string>();
  for (const r of rates) book.set(`${r.currency}#${r.month}`, r.rate);
  return (currency: string, month: string) => book.get(`${currency}#${month}`);
};
/** `ltv` recomputed from a customer's orders: TWD paid, plus each other currency's paid order at its local month's rate. */
const convertedLtv = (orders: any[], fxs: Fx) => {
  const rate = rateBook(fxs);
  let sum = new Decimal(0);
  for (const o of orders.filter((x) => x.status === 'paid')) {
    if (o.currency === 'TWD') sum = sum.plus(o.amount);
    else {
      const r = rate(o.currency, refLocalDate(o.paid_at, fxs.zone).slice(0, 7));
      if (r !== undefined) sum = sum.plus(new Decimal(o.amount).times(r));
    }
  }
  return sum.toFixed(2);
};

/** One customer as the model knows it: an email's holder from its creation until its delete. */
type ModelCustomer = { email: string; id?: number; deleted: boolean };
type ModelOrder = {
  amount: string;
  currency: string;
  status: Status;
  paid_at: string | null;
  refunded_at: string | null;
  failed_at: string | null;
  customer: ModelCustomer;
  created_at: string;
};

const fill = (o: ModelOrder, at: string) => {
  const field = STAMP[o.status];
  if (field && !o[field]) o[field] = at;
};
const money = (v: string) => new Decimal(v).toFixed(2);
const present = (v: unknown) => v !== undefined && v !== null && v !== '';
const show = (r: ApiResponse) => `${r.status} ${JSON.stringify(r.body)}`;

/** What one command got back (a delete: its search, then its DELETE when it had an id to send). */
type Answer = { r: ApiResponse; search?: ApiResponse };

/** Totals over the whole property, reported at the end (the conflict model must really bite). */
const tally = {
  runs: 0,
  conflictRuns: 0,
  rounds: 0,
  commands: 0,
  concurrentRounds: 0,
  /** Customers deleted (204). */
  deletes: 0,
  /** Customers created for an email whose earlier customer was deleted. */
  recreated: 0,
  /** Successful writes to an order whose customer had been deleted (its figures must still move). */
  deletedCustomerWrites: 0,
  /** Transactions / single writes the conflict model cancelled (the app retried them). */
  cancelled: 0,
  statsDays: 0,
};

describe('orders model property', () => {
  it(
    'concurrent rounds of commands: stored orders follow the rules and every figure equals the figure recomputed from the orders',
    async () => {
      const property = fc.asyncProperty(scenario, async ({ conflicts, rounds, fx: fxs }) => {
        const time = fixedClock(NOW);
        const { merchantId, token } = await newMerchant();
        const conflictModel: TransactionConflictModel | null = conflicts ? transactionConflictModel({ holdMs: 50 }) : null;
        tally.runs++;
        if (conflictModel) tally.conflictRuns++;
        try {
          const orders = new Map<string, ModelOrder>();
          const customers: ModelCustomer[] = [];
          const live = new Map<string, ModelCustomer>();
          /** Every UTC day an order's created_at or paid_at was ever on (stats days and months to check). */
          const days = new Set<string>();
          const touch = (o: ModelOrder) => {
            days.add(o.created_at.slice(0, 10));
            if (o.paid_at) days.add(o.paid_at.slice(0, 10));
          };
          const liveCustomer = (address: string) => {
            const e = lower(address);
            let c = live.get(e);
            if (!c) {
              if (customers.some((x) => x.email === e)) tally.recreated++;
              c = { email: e, deleted: false };
              customers.push(c);
              live.set(e, c);
            }
            return c;
          };
          const learn = (c: ModelCustomer, id: number, where: string) => {
            if (c.id === undefined) c.id = id;
            else expect(id, `${where}: customer id of ${c.email}`).toBe(c.id);
          };

          const send = async (cmd: Command): Promise<Answer> => {
            if (cmd.kind === 'create') {
              const { kind: _k, ...body } = cmd;
              return { r: await api.post('/orders', token, body) };
            }
            if (cmd.kind === 'patch') {
              const { kind: _k, order_no, ...body } = cmd;
              return { r: await api.patch(`/orders/${order_no}`, token, body) };
            }
            if (cmd.kind === 'batch') return { r: await api.post('/orders/batch', token, { orders: cmd.items }) };
            // Delete: look the live holder of the email up, as a client would, then delete it by id;
            // with no live holder, deleting the email's last deleted customer again must be a 404.
            const e = lower(cmd.email);
            const search = await api.get(`/customers?per_page=100&search=${encodeURIComponent(e)}`, token);
            const found = search.status === 200 ? (search.body.data as any[]).find((c) => c.email === e) : undefined;
            const id = found?.id ?? customers.filter((c) => c.email === e && c.deleted).at(-1)?.id;
            return {
              search,
              r: id === undefined ? { status: 0, headers: new Headers(), body: 'not sent' } : await api.del(`/customers/${id}`, token),
            };
          };

          const apply = (cmd: Command, { r, search }: Answer, at: string) => {
            if (cmd.kind === 'create') {
              // The body first: yen take whole amounts.
              if (!wholeOk(cmd.amount, cmd.currency ?? 'TWD')) {
                expect(r.status, show(r)).toBe(422);
                expect(Object.keys(r.body.errors)).toEqual(['amount']);
                return;
              }
              if (orders.has(cmd.order_no)) {
                expect(r.status, show(r)).toBe(422);
                expect(Object.keys(r.body.errors)).toEqual(['order_no']);
                return;
              }
              expect(r.status, show(r)).toBe(201);
              const o: ModelOrder = {
                amount: money(cmd.amount),
                currency: (cmd.currency ?? 'TWD').toUpperCase(),
                status: cmd.status ?? 'pending',
                paid_at: cmd.paid_at ?? null,
                refunded_at: null,
                failed_at: null,
                customer: liveCustomer(cmd.customer_email),
                created_at: at,
              };
              fill(o, at);
              learn(o.customer, r.body.data.customer_id, `create ${cmd.order_no}`);
              orders.set(cmd.order_no, o);
              touch(o);
            } else if (cmd.kind === 'patch') {
              const o = orders.get(cmd.order_no);
              if (!o) {
                expect(r.status, show(r)).toBe(404);
              } else if (!ALLOWED[o.status].includes(cmd.status)) {
                expect(r.status, show(r)).toBe(422);
                expect(Object.keys(r.body.errors)).toEqual(['status']);
              } else {
                expect(r.status, show(r)).toBe(200);
                if (o.customer.deleted) tally.deletedCustomerWrites++;
                o.status = cmd.status;
                if (cmd.paid_at) o.paid_at = cmd.paid_at;
                fill(o, at);
                learn(o.customer, r.body.data.customer_id, `patch ${cmd.order_no}`);
                touch(o);
              }
            } else if (cmd.kind === 'batch') {
              expect(r.status, show(r)).toBe(200);
              const want = { created: [] as number[], updated: [] as number[], failed: [] as number[] };
              cmd.items.forEach((item, index) => {
                const o = orders.get(item.order_no);
                if (present(item.amount) && present(item.currency) && !wholeOk(item.amount!, item.currency!))
                  return void want.failed.push(index);
                if (!o) {
                  if (!present(item.amount) || !present(item.customer_email)) return void want.failed.push(index);
                  const created: ModelOrder = {
                    amount: money(item.amount!),
                    currency: present(item.currency) ? item.currency!.toUpperCase() : 'TWD',
                    status: item.status ?? 'pending',
                    paid_at: item.paid_at ?? null,
                    refunded_at: null,
                    failed_at: null,
                    customer: liveCustomer(item.customer_email!),
                    created_at: at,
                  };
                  fill(created, at);
                  orders.set(item.order_no, created);
                  touch(created);
                  want.created.push(index);
                } else {
                  // The stored amount and a new currency (or the reverse) must agree too.
                  if (!wholeOk(present(item.amount) ? item.amount! : o.amount, present(item.currency) ? item.currency! : o.currency))
                    return void want.failed.push(index);
                  if (o.customer.deleted) tally.deletedCustomerWrites++;
                  if (present(item.amount)) o.amount = money(item.amount!);
                  if (present(item.currency)) o.currency = item.currency!.toUpperCase();
                  if (present(item.status)) o.status = item.status!;
                  if (present(item.paid_at)) o.paid_at = item.paid_at!;
                  // A named email links the order to that email's LIVE customer (a new one after a delete).
                  if (present(item.customer_email)) o.customer = liveCustomer(item.customer_email!);
                  fill(o, at);
                  touch(o);
                  want.updated.push(index);
                }
              });
              const results = r.body.data.results;
              expect(
                {
                  created: results.created.map((x: { index: number }) => x.index),
                  updated: results.updated.map((x: { index: number }) => x.index),
                  failed: results.failed.map((x: { index: number }) => x.index),
                },
                show(r),
              ).toEqual(want);
            } else {
              const e = lower(cmd.email);
              expect(search!.status, show(search!)).toBe(200);
              const found = (search!.body.data as any[]).filter((c) => c.email === e);
              const c = live.get(e);
              if (c) {
                expect(found.length, `live customers holding ${e}: ${show(search!)}`).toBe(1);
                learn(c, found[0].id, `search ${e}`);
                expect(r.status, `DELETE /customers/${found[0].id}: ${show(r)}`).toBe(204);
                c.deleted = true;
                tally.deletes++;
                live.delete(e);
              } else {
                expect(found, `no live customer holds ${e}`).toEqual([]);
                if (customers.some((x) => x.email === e && x.deleted))
                  expect(r.status, `DELETE of a deleted customer: ${show(r)}`).toBe(404);
              }
            }
          };

          for (const { at, commands } of rounds) {
            time.set(at);
            // The round's commands go out together; the model applies them afterwards, in any order (they commute).
            const answers = await Promise.all(commands.map(send));
            tally.rounds++;
            tally.commands += commands.length;
            if (commands.length > 1) tally.concurrentRounds++;
            commands.forEach((cmd, i) => apply(cmd, answers[i], at));
          }

          conflictModel?.uninstall();
          time.set(NOW);
          const { orders: stored, total } = await listAll(api, token);

          // The orders are what the rules say, each linked to its modelled customer.
          expect(total).toBe(orders.size);
          const byNo = new Map(stored.map((o) => [o.order_no, o]));
          for (const [no, want] of orders) {
            const got = byNo.get(no);
            expect(got, no).toBeDefined();
            const { amount, currency, status, paid_at, refunded_at, failed_at, customer_email, created_at } = got;
            const { customer, ...fields } = want;
            expect({ amount, currency, status, paid_at, refunded_at, failed_at, customer_email, created_at }, no).toEqual({
              ...fields,
              customer_email: customer.email,
            });
            learn(customer, got.customer_id, `order ${no}`);
          }

          // Live customers: exactly one per email the model holds live.
          const list = await api.get('/customers?per_page=100', token);
          expect(list.status, show(list)).toBe(200);
          const listed = list.body.data as any[];
          expect(listed.map((c) => c.email).sort(), 'live customers').toEqual([...live.keys()].sort());
          expect(list.body.meta.total).toBe(live.size);
          for (const c of listed) learn(live.get(c.email)!, c.id, `list ${c.email}`);
          const ids = customers.map((c) => c.id);
          expect(
            ids.every((id) => id !== undefined),
            'every customer has an id',
          ).toBe(true);
          expect(new Set(ids).size, `one id per customer: ${JSON.stringify(customers)}`).toBe(customers.length);

          // Every customer's figures — deleted ones included — equal those recomputed from the orders linked to it.
          const listedById = new Map(listed.map((c) => [c.id as number, c]));
          const reads = await Promise.all(
            customers.map(async (c) => ({
              c,
              single: await api.get(`/customers/${c.id}`, token),
              item: c.deleted ? await storedCustomer(merchantId, c.id!) : undefined,
            })),
          );
          for (const { c, single, item } of reads) {
            const label = `${c.deleted ? 'deleted' : 'live'} customer ${c.id} (${c.email})`;
            const expected = figuresFromOrders(stored.filter((o) => o.customer_id === c.id));
            if (c.deleted) {
              expect(single.status, `${label}: ${show(single)}`).toBe(404);
              expect(item, label).toBeDefined();
              expect(item!.deleted_at, label).toBeTruthy();
              expect(figuresOfStoredCustomer(item!), label).toEqual(expected);
            } else {
              expect(single.status, `${label}: ${show(single)}`).toBe(200);
              expect(pickFigures(listedById.get(c.id!)), label).toEqual(expected);
              expect(pickFigures(single.body.data), label).toEqual(expected);
            }
          }

          // Stats per currency for every day (and its month) an order ever touched, plus every day the
          // clock and the paid_at values can reach (untouched ones must read zero), with the clock on that day.
          const statsDays = new Set([...days, ...CLOCKS.map((t) => t.slice(0, 10)), ...PAID_ATS.map((t) => t.slice(0, 10))]);
          const revenue = (ccy: string, prefix: string) =>
            stored
              .filter((o) => o.status === 'paid' && o.currency === ccy && o.paid_at?.startsWith(prefix))
              .reduce((s, o) => s.plus(o.amount), new Decimal(0))
              .toFixed(2);
          for (const day of [...statsDays].sort()) {
            time.set(`${day}T12:00:00Z`);
            const createdThatDay = stored.filter((o) => o.created_at.slice(0, 10) === day);
            const paidThatDay = createdThatDay.filter((o) => o.status === 'paid').length;
            const rate = createdThatDay.length
              ? new Decimal(paidThatDay).times(100).div(createdThatDay.length).toDecimalPlaces(1, Decimal.ROUND_HALF_UP).toNumber()
              : 0;
            const stats = await Promise.all(CURRENCIES.map((ccy) => api.get(`/orders/stats?currency=${ccy}`, token)));
            CURRENCIES.forEach((ccy, i) => {
              expect(stats[i].status, show(stats[i])).toBe(200);
              expect(stats[i].body.data, `stats of ${day} in ${ccy}`).toEqual({
                today_revenue: revenue(ccy, day),
                monthly_revenue: revenue(ccy, day.slice(0, 7)),
                today_count: createdThatDay.length,
                today_success_rate: rate,
              });
            });
            tally.statsDays++;
          }
          time.set(NOW);

          // List totals (kept by counters) per status.
          const perStatus = await Promise.all(STATUSES.map((s) => api.get(`/orders?status=${s}&per_page=1`, token)));
          STATUSES.forEach((s, i) => expect(perStatus[i].body.meta.total, s).toBe(stored.filter((o) => o.status === s).length));

          // Rates and a zone set afterwards: ltv and the stats convert at read time, from the next request on.
          await updateMerchant(merchantId, { timezone: fxs.zone });
          for (const r of fxs.rates) {
            const put = await api.put(`/exchange-rates/${r.currency}`, token, { rates: [{ month: r.month, rate: r.rate }] });
            expect(put.status, show(put)).toBe(200);
          }
          const relisted = new Map(((await api.get('/customers?per_page=100', token)).body.data as any[]).map((c) => [c.id as number, c]));
          for (const c of customers.filter((x) => !x.deleted)) {
            const want = convertedLtv(
              stored.filter((o) => o.customer_id === c.id),
              fxs,
            );
            const label = `customer ${c.id} in ${fxs.zone} at ${JSON.stringify(fxs.rates)}`;
            expect((await api.get(`/customers/${c.id}`, token)).body.data.ltv, label).toBe(want);
            expect(relisted.get(c.id!)?.ltv, label).toBe(want);
          }
          // Today and this month in the zone: TWD, and the others at this month's rate or named as left out.
          const today = refLocalDate(NOW, fxs.zone);
          const rate = rateBook(fxs);
          const paidIn = (ccy: string, prefix: string) =>
            stored
              .filter((o) => o.status === 'paid' && o.currency === ccy && refLocalDate(o.paid_at, fxs.zone).startsWith(prefix))
              .reduce((sum, o) => sum.plus(o.amount), new Decimal(0));
          const converted = (prefix: string) =>
            CURRENCIES.reduce((sum, ccy) => {
              if (ccy === 'TWD') return sum.plus(paidIn(ccy, prefix));
              const r = rate(ccy, today.slice(0, 7));
              return r === undefined ? sum : sum.plus(paidIn(ccy, prefix).times(r));
            }, new Decimal(0)).toFixed(2);
          const leftOut = Object.fromEntries(
            CURRENCIES.filter((ccy) => ccy !== 'TWD' && rate(ccy, today.slice(0, 7)) === undefined)
              .filter((ccy) => !paidIn(ccy, today).isZero() || !paidIn(ccy, today.slice(0, 7)).isZero())
              .map((ccy) => [
                ccy,
                { today_revenue: paidIn(ccy, today).toFixed(2), monthly_revenue: paidIn(ccy, today.slice(0, 7)).toFixed(2) },
              ]),
          );
          const stats = (await api.get('/orders/stats', token)).body;
          const where = `stats in ${fxs.zone} at ${JSON.stringify(fxs.rates)}`;
          expect(stats.data, where).toMatchObject({ today_revenue: converted(today), monthly_revenue: converted(today.slice(0, 7)) });
          expect(stats.unconverted, where).toEqual(leftOut);
        } finally {
          if (conflictModel) {
            tally.cancelled += conflictModel.stats.conflicts + conflictModel.stats.singleWriteConflicts;
            conflictModel.uninstall();
          }
        }
      });
      await assertWithinBudget(property, RUNS, BUDGET_MS);
      console.info(`figures property: ${JSON.stringify(tally)}`);
    },
    TEST_TIMEOUT_MS,
  );
});
