import { INVALID_DATA as INVALID } from '#lib/errors';
import canonicalize from 'canonicalize';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { checkScheduledCancel } from '#lib/subscriptions/schedule';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { newMerchant, useApi, type ApiResponse } from '../support/api.ts';
import { unnamed } from '../support/factories.ts';
import { outboxEvents } from '../orders/helpers.ts';
import { assertWithinBudget } from '../support/property.ts';

/**
 * Model-based property of subscriptions (docs/subscriptions.md): for a random
 * sequence of commands — create (for one of 2–3 customers, now and then an unknown one), update
 * mrr / plan / period, pause, reactivate, cancel, delete, record a historical event — sent one at a
 * time with the clock one second further each time, every answer is the one the rules give, and
 * afterwards what is stored equals the model:
 *
 * - each customer's subscriptions (GET /subscriptions?customer_id=…, newest first) and each one by id
 *   (deleted → 404);
 * - every subscription event (GET /subscriptions/events, all, per customer and per subscription),
 *   with exact amounts (decimal.js), plans, sources and times, newest first by occurred_at, and in
 *   id order the order the model generated them;
 * - each customer's live-subscription marker;
 * - the list totals (sharded counters) per status and per event type, and the webhook outbox.
 *
 * Rules modelled: forbidden moves → 422 on `status` (update / pause / cancel a cancelled one, pause
 * a paused one, reactivate an active one, reactivate a cancelled one while the customer holds another
 * live one); a second live subscription → 422 on `customer_id`; an unknown customer → 422 on
 * `customer_id`; a deleted or unknown subscription → 404 (422 on `subscription_id` when a recorded
 * event names it, or names another customer's).
 *
 * Where docs/subscriptions.md is silent the model follows service.ts: a PUT that changes nothing
 * answers the stored subscription and writes nothing (updated_at stays; no event, no webhook), a
 * `cancel` event's old_amount is the subscription's mrr even when it was paused (events describe
 * the subscription's price; pausing moves the customer's MRR without an event), and cancelling a
 * paused subscription clears its paused_at.
 */
const api = useApi();
afterEach(() => resetClock());

/**
 * Runs by default (PROP_RUNS overrides) and the wall-clock budget they must all finish in, or the
 * test FAILS (PROP_BUDGET_MS overrides; it grows with PROP_RUNS).
 */
const DEFAULT_RUNS = 25;
const RUNS = Number(process.env.PROP_RUNS ?? DEFAULT_RUNS);
const BUDGET_MS = Number(process.env.PROP_BUDGET_MS ?? Math.max(240_000, Math.ceil((RUNS * 240_000) / DEFAULT_RUNS)));
const TEST_TIMEOUT_MS = BUDGET_MS + 30_000;

const START = '2026-04-01T00:00:00Z';
const UNKNOWN_CUSTOMER = 999_999;
const UNKNOWN_SUBSCRIPTION = 999_999_999;
const NOT_FOUND = { message: 'Resource not found' };

/** Times as sent → as stored (offsets normalised to Z). Some before, some after the clock. */
const TIMES: Record<string, string> = {
  '2026-01-15T08:00:00Z': '2026-01-15T08:00:00Z',
  '2026-02-01T00:00:00+08:00': '2026-01-31T16:00:00Z',
  '2025-12-31T23:00:00-02:00': '2026-01-01T01:00:00Z',
  '2026-03-31T23:59:59Z': '2026-03-31T23:59:59Z',
  '2026-04-01T00:00:30Z': '2026-04-01T00:00:30Z',
};
const time = fc.constantFrom(...Object.keys(TIMES));

/** An amount in cents, sent as a 2-decimal string, a minimal string ("100.5", "10") or a JSON number. */
const cents = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(0, 1000, 9999, 10050, 25000, 999_999_999_999_999) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 9_999_999 }) },
);
const sent = (c: number) =>
  fc.constantFrom<string | number>(new Decimal(c).div(100).toFixed(2), new Decimal(c).div(100).toString(), c / 100);
const amount = cents.chain(sent);
const plan = fc.constantFrom('Basic', 'Pro', 'Team Plus');

/** Two amounts that agree with an event type, sent in any of the forms. */
const agreeing = (type: string) =>
  fc.tuple(fc.integer({ min: 1, max: 9_999_999 }), fc.integer({ min: 1, max: 9_999_999 })).chain(([a, b]) => {
    const [lo, hi] = a === b ? [a, a + 1] : [Math.min(a, b), Math.max(a, b)];
    const [from, to] = (
      { created: [0, hi], upgrade: [lo, hi], downgrade: [hi, lo], cancel: [hi, 0], reactivated: [0, lo] } as Record<string, number[]>
    )[type];
    return fc.record({ old_amount: sent(from), new_amount: sent(to) });
  });

/** What a recorded event's type says of its amounts. */
const typeAgrees = (type: string, from: Decimal, to: Decimal): boolean =>
  ({
    created: from.isZero() && to.gt(0),
    upgrade: to.gt(from),
    downgrade: to.gt(0) && to.lt(from),
    cancel: from.gt(0) && to.isZero(),
    reactivated: from.isZero() && to.gt(0),
  })[type] ?? false;
const cycle = fc.constantFrom('monthly', 'quarterly', 'semi-annual', 'yearly');
const EVENT_TYPES = ['created', 'upgrade', 'downgrade', 'cancel', 'reactivated'] as const;
const STATUSES = ['active', 'paused', 'cancelled'] as const;
type Status = (typeof STATUSES)[number];

/**
 * A subscription reference: mostly one not deleted (`live`: an index, modulo, into those), sometimes
 * any created so far (deleted ones included), now and then an id never created.
 */
const subRef = fc.oneof(
  { weight: 8, arbitrary: fc.record({ among: fc.constant('visible' as const), n: fc.nat(7) }) },
  { weight: 1, arbitrary: fc.record({ among: fc.constant('all' as const), n: fc.nat(7) }) },
  { weight: 1, arbitrary: fc.constant('unknown' as const) },
);
type SubRef = 'unknown' | { among: 'visible' | 'all'; n: number };
const customerRef = (customers: number) =>
  fc.oneof({ weight: 12, arbitrary: fc.integer({ min: 0, max: customers - 1 }) }, { weight: 1, arbitrary: fc.constant(-1) });

const createCommand = (customers: number) =>
  fc.record({
    kind: fc.constant('create' as const),
    customer: customerRef(customers),
    body: fc.record(
      { plan_name: plan, mrr: amount, billing_cycle: cycle, started_at: time, current_period_start: time },
      { requiredKeys: ['plan_name', 'mrr', 'billing_cycle'] },
    ),
  });

const command = (customers: number) =>
  fc.oneof(
    { weight: 3, arbitrary: createCommand(customers) },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('update' as const),
        sub: subRef,
        body: fc.record({ plan_name: plan, mrr: amount, current_period_start: time }, { requiredKeys: [] }),
      }),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('pause' as const), sub: subRef }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('reactivate' as const), sub: subRef }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('cancel' as const),
        sub: subRef,
        body: fc.record({ cancelled_at: time, reason: fc.constantFrom('too expensive', 'moved') }, { requiredKeys: [] }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), sub: subRef }) },
    {
      weight: 2,
      arbitrary: fc
        .record({
          kind: fc.constant('record' as const),
          customer: customerRef(customers),
          sub: fc.oneof(fc.constant(null), subRef),
          body: fc
            .record(
              {
                event_type: fc.constantFrom(...EVENT_TYPES),
                old_amount: amount,
                new_amount: amount,
                old_plan: plan,
                new_plan: plan,
                occurred_at: time,
              },
              { requiredKeys: ['event_type', 'old_amount', 'new_amount'] },
            )
            // Mostly amounts that agree with the type (else nearly every recorded event would be a 422).
            .chain((body) =>
              fc.oneof(
                { weight: 1, arbitrary: fc.constant(body) },
                { weight: 4, arbitrary: agreeing(body.event_type).map((a) => ({ ...body, ...a })) },
              ),
            ),
        })
        // An unknown customer is sent without a subscription, so one field alone is wrong.
        .map((c) => (c.customer === -1 ? { ...c, sub: null } : c)),
    },
  );
type Command = ReturnType<typeof command> extends fc.Arbitrary<infer T> ? T : never;

/** 2–3 customers; the sequence opens with 1–2 creates so that most commands address a subscription that exists. */
const scenario = fc.integer({ min: 2, max: 3 }).chain((customers) =>
  fc.record({
    customers: fc.constant(customers),
    commands: fc
      .tuple(
        fc.array(createCommand(customers), { minLength: 1, maxLength: 2 }),
        fc.array(command(customers), { minLength: 4, maxLength: 20 }),
      )
      .map(([opening, rest]) => [...opening, ...rest]),
  }),
);

/* ------------------------------------------------------------------------------------------ */
/* The model                                                                                    */
/* ------------------------------------------------------------------------------------------ */

type ModelSub = {
  id: number;
  customer_id: number;
  status: Status;
  plan_name: string;
  mrr: string;
  billing_cycle: string;
  started_at: string;
  current_period_start: string;
  cancelled_at: string | null;
  paused_at: string | null;
  cancel_reason: string | null;
  /** A scheduled cancellation (a future cancelled_at), applied by the scheduler once due. */
  cancel_at: string | null;
  created_at: string;
  updated_at: string;
  deleted: boolean;
  /** When its latest change took effect: no change may be dated before it (nor before the start). */
  changed: string;
};
type ModelEvent = {
  /** Known for recorded events (their 201 shows it); generated ones are matched by order. */
  id?: number;
  customer_id: number;
  subscription_id: number | null;
  event_type: string;
  source: 'api' | 'import';
  old_amount: string;
  new_amount: string;
  amount_change: string;
  old_plan: string | null;
  new_plan: string | null;
  occurred_at: string;
  created_at: string;
};

const money = (v: Decimal.Value) => new Decimal(String(v)).toFixed(2);
const show = (r: ApiResponse) => `${r.status} ${JSON.stringify(r.body)}`;
const present = (s: ModelSub) => {
  const { deleted: _d, changed: _c, ...rest } = s;
  return { ...rest, external_id: null, currency: 'TWD', source: 'api', trial_ends_at: null, failed_at: null };
};
const isLive = (s: ModelSub) => !s.deleted && s.status !== 'cancelled';
/** Newest first: the key, then the model's order (= id order) descending. */
const newestFirst = <T>(xs: T[], key: (x: T) => string) =>
  xs
    .map((x, i) => ({ x, i }))
    .sort((a, b) => (key(a.x) === key(b.x) ? b.i - a.i : key(a.x) < key(b.x) ? 1 : -1))
    .map(({ x }) => x);
const withoutId = ({ id: _id, ...rest }: Record<string, any>) => rest;
/** Events as a sorted list of their canonical JSON without ids: equal when the same events, in any order. */
const sameEvents = (xs: Array<Record<string, any>>) => xs.map((x) => canonicalize(withoutId(x))!).sort();

const readItem = async (key: { pk: string; sk: string }) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;

const listAll = async (token: string, path: string): Promise<{ data: any[]; total: number }> => {
  const data: any[] = [];
  let total = 0;
  for (let page = 1; ; page++) {
    const r = await api.get(`${path}${path.includes('?') ? '&' : '?'}per_page=100&page=${page}`, token);
    expect(r.status, `${path}: ${show(r)}`).toBe(200);
    data.push(...r.body.data);
    total = r.body.meta.total;
    if (page >= r.body.meta.last_page) break;
  }
  return { data, total };
};
const totalOf = async (token: string, path: string) => {
  const r = await api.get(`${path}${path.includes('?') ? '&' : '?'}per_page=1`, token);
  expect(r.status, `${path}: ${show(r)}`).toBe(200);
  return r.body.meta.total as number;
};

/** Totals over the whole property, reported at the end (the interesting paths must be reached). */
const tally = {
  runs: 0,
  commands: 0,
  answers: {} as Record<string, number>,
  events: 0,
  maxSubscriptions: 0,
  /** Wall-clock time spent sending the commands and checking the stores afterwards. */
  ms: { commands: 0, checks: 0 },
};
const count = (label: string) => void (tally.answers[label] = (tally.answers[label] ?? 0) + 1);

describe('subscriptions model property', () => {
  it(
    'random command sequences: every answer follows docs/subscriptions.md, and stored subscriptions, events, markers, totals and webhooks equal the model',
    async () => {
      const property = fc.asyncProperty(scenario, async ({ customers: customerCount, commands }) => {
        const clock = fixedClock(START);
        let at = START;
        const tick = () => {
          clock.advance(1000);
          at = `${new Date(Date.parse(at) + 1000).toISOString().slice(0, 19)}Z`;
        };
        /** A change without a time of its own takes effect now, or at the start when that is still ahead. */
        const dated = (s: ModelSub) => (at < s.started_at ? s.started_at : at);
        const { merchantId, token } = await newMerchant();
        tally.runs++;
        const customerIds: number[] = [];
        for (let i = 0; i < customerCount; i++) {
          tick();
          const r = await api.post('/customers', token, { email: `c${i}@example.com`, name: `C${i}` });
          expect(r.status, show(r)).toBe(201);
          customerIds.push(r.body.data.id);
        }
        const subs: ModelSub[] = [];
        const events: ModelEvent[] = [];
        const hooks: { type: string; object: unknown }[] = [];
        const trace: string[] = [];

        const customerOf = (ref: number) => (ref === -1 ? UNKNOWN_CUSTOMER : customerIds[ref]);
        const subOf = (ref: SubRef): { id: number; sub?: ModelSub } => {
          if (ref === 'unknown') return { id: UNKNOWN_SUBSCRIPTION };
          const visible = subs.filter((s) => !s.deleted);
          const pool = ref.among === 'visible' && visible.length ? visible : subs;
          if (!pool.length) return { id: UNKNOWN_SUBSCRIPTION };
          const sub = pool[ref.n % pool.length];
          return { id: sub.id, sub };
        };
        const liveOf = (customerId: number) => subs.filter((s) => s.customer_id === customerId && isLive(s));
        const _mrrOf = (customerId: number) =>
          money(
            subs
              .filter((s) => s.customer_id === customerId && !s.deleted && s.status === 'active')
              .reduce((sum, s) => sum.plus(s.mrr), new Decimal(0)),
          );
        const emit = (
          s: ModelSub,
          type: string,
          oldAmount: string,
          newAmount: string,
          oldPlan: string | null,
          newPlan: string | null,
          occurredAt: string,
        ) =>
          events.push({
            customer_id: s.customer_id,
            subscription_id: s.id,
            event_type: type,
            source: 'api',
            old_amount: money(oldAmount),
            new_amount: money(newAmount),
            amount_change: money(new Decimal(newAmount).minus(oldAmount)),
            old_plan: oldPlan,
            new_plan: newPlan,
            occurred_at: occurredAt,
            created_at: at,
          });

        const expectInvalid = (r: ApiResponse, field: string | string[], what: string) => {
          const fields = [field].flat();
          expect(r.status, `${what}: ${show(r)}`).toBe(422);
          expect(r.body.message, what).toBe(INVALID);
          expect(Object.keys(r.body.errors).sort(), `${what}: ${show(r)}`).toEqual([...fields].sort());
          count(`422 ${fields.join('+')}`);
        };
        const expectNotFound = (r: ApiResponse, what: string) => {
          expect(r.status, `${what}: ${show(r)}`).toBe(404);
          expect(r.body, what).toEqual(NOT_FOUND);
          count('404');
        };
        const expectOk = (r: ApiResponse, s: ModelSub, what: string) => {
          expect(r.status, `${what}: ${show(r)}`).toBe(200);
          expect(r.body.data, what).toEqual(present(s));
          count(`200 ${what.split(' ')[0]}`);
        };

        /** The scheduler's run at this time (as the deployed one runs within a minute): every due schedule is applied. */
        const runScheduler = async () => {
          for (const s of subs) {
            if (s.deleted || s.status === 'cancelled' || !s.cancel_at || s.cancel_at > at) continue;
            const check = await checkScheduledCancel({ merchant_id: merchantId, subscription_id: s.id, cancel_at: s.cancel_at });
            expect(check, `scheduler for ${s.id} at ${s.cancel_at}`).toEqual({ due: true, applied: true });
            s.status = 'cancelled';
            s.cancelled_at = s.cancel_at;
            s.cancel_at = null;
            s.paused_at = null;
            s.changed = s.cancelled_at;
            s.updated_at = at;
            emit(s, 'cancel', s.mrr, '0', s.plan_name, s.plan_name, s.cancelled_at);
            hooks.push({ type: 'subscription.cancelled', object: present(s) });
          }
        };

        const run = async (cmd: Command) => {
          tick();
          await runScheduler();
          if (cmd.kind === 'create') {
            const customerId = customerOf(cmd.customer);
            const r = await api.post('/subscriptions', token, { customer_id: customerId, ...cmd.body });
            const what = `create for customer ${customerId}`;
            // The body is checked before the customer: an MRR of 0 is refused whoever it is for.
            if (new Decimal(String(cmd.body.mrr)).isZero()) return expectInvalid(r, 'mrr', what);
            if (cmd.customer === -1) return expectInvalid(r, 'customer_id', what);
            if (liveOf(customerId).length) return expectInvalid(r, 'customer_id', what);
            expect(r.status, `${what}: ${show(r)}`).toBe(201);
            const startedAt = cmd.body.started_at ? TIMES[cmd.body.started_at] : at;
            const s: ModelSub = {
              id: r.body.data.id,
              customer_id: customerId,
              status: 'active',
              plan_name: cmd.body.plan_name,
              mrr: money(cmd.body.mrr),
              billing_cycle: cmd.body.billing_cycle,
              started_at: startedAt,
              current_period_start: cmd.body.current_period_start ? TIMES[cmd.body.current_period_start] : startedAt,
              cancelled_at: null,
              paused_at: null,
              cancel_reason: null,
              cancel_at: null,
              created_at: at,
              updated_at: at,
              deleted: false,
              changed: startedAt,
            };
            expect(
              subs.some((x) => x.id === s.id),
              `new id ${s.id}`,
            ).toBe(false);
            expect(r.body.data, what).toEqual(present(s));
            subs.push(s);
            emit(s, 'created', '0', s.mrr, null, s.plan_name, startedAt);
            hooks.push({ type: 'subscription.created', object: present(s) });
            count('201 create');
            return;
          }
          if (cmd.kind === 'record') {
            const customerId = customerOf(cmd.customer);
            const target = cmd.sub === null ? null : subOf(cmd.sub);
            const body = { customer_id: customerId, ...(target ? { subscription_id: target.id } : {}), ...cmd.body };
            const r = await api.post('/subscriptions/events', token, body);
            const what = `record ${cmd.body.event_type} for customer ${customerId}${target ? ` subscription ${target.id}` : ''}`;
            // Body first, every rule at once: history has happened (not after now), and the type agrees with the amounts.
            const bodyErrors = [
              ...(cmd.body.occurred_at && TIMES[cmd.body.occurred_at] > at ? ['occurred_at'] : []),
              ...(typeAgrees(cmd.body.event_type, new Decimal(String(cmd.body.old_amount)), new Decimal(String(cmd.body.new_amount)))
                ? []
                : ['event_type']),
            ];
            if (bodyErrors.length) return expectInvalid(r, bodyErrors, what);
            if (cmd.customer === -1) return expectInvalid(r, 'customer_id', what);
            if (target && (!target.sub || target.sub.deleted || target.sub.customer_id !== customerId))
              return expectInvalid(r, 'subscription_id', what);
            if (!target) {
              // Without a subscription an event is history from before the customer's first one here: at
              // or after a (not deleted) subscription's start it must name it. Earlier than every start it
              // may still be refused when an earlier point leads a subscription's line (a recorded event
              // naming it, a cancellation dated before its start): the metrics property test pins that case.
              const occurred = cmd.body.occurred_at ? TIMES[cmd.body.occurred_at] : at;
              const starts = subs.filter((x) => x.customer_id === customerId && !x.deleted).map((x) => x.started_at);
              const refused = r.status === 422 && Object.keys(r.body.errors ?? {}).join() === 'subscription_id';
              if (starts.some((t) => t <= occurred)) return expectInvalid(r, 'subscription_id', what);
              if (starts.length && refused) return void count('422 subscription_id (history after a line start)');
            }
            expect(r.status, `${what}: ${show(r)}`).toBe(201);
            const e: ModelEvent = {
              id: r.body.data.id,
              customer_id: customerId,
              subscription_id: target ? target.id : null,
              event_type: cmd.body.event_type,
              source: 'import',
              old_amount: money(cmd.body.old_amount),
              new_amount: money(cmd.body.new_amount),
              amount_change: money(new Decimal(String(cmd.body.new_amount)).minus(String(cmd.body.old_amount))),
              old_plan: cmd.body.old_plan ?? null,
              new_plan: cmd.body.new_plan ?? null,
              occurred_at: cmd.body.occurred_at ? TIMES[cmd.body.occurred_at] : at,
              created_at: at,
            };
            expect(r.body.data, what).toEqual(e);
            events.push(e);
            // The record shows the present: an event that is (or becomes) the subscription's latest
            // change and leaves it an amount sets its mrr and plan (the plan kept without a new one).
            const named = target?.sub;
            if (named && e.occurred_at >= named.changed && new Decimal(e.new_amount).gt(0)) {
              named.mrr = e.new_amount;
              named.plan_name = e.new_plan ?? named.plan_name;
              named.changed = e.occurred_at;
              named.updated_at = at;
              count('201 record (shown on the subscription)');
            }
            count('201 record');
            return;
          }

          const { id, sub } = subOf(cmd.sub);
          const live = sub && !sub.deleted ? sub : undefined;
          if (cmd.kind === 'delete') {
            const r = await api.del(`/subscriptions/${id}`, token);
            const what = `delete ${id}`;
            if (!live) return expectNotFound(r, what);
            expect(r.status, `${what}: ${show(r)}`).toBe(204);
            live.deleted = true;
            live.updated_at = at;
            count('204 delete');
            return;
          }
          if (cmd.kind === 'update') {
            const r = await api.put(`/subscriptions/${id}`, token, cmd.body);
            const what = `update ${id} ${JSON.stringify(cmd.body)}`;
            if (cmd.body.mrr !== undefined && new Decimal(String(cmd.body.mrr)).isZero()) return expectInvalid(r, 'mrr', what);
            if (!live) return expectNotFound(r, what);
            if (live.status === 'cancelled') return expectInvalid(r, 'status', what);
            const before = { mrr: live.mrr, plan: live.plan_name, period: live.current_period_start };
            if (cmd.body.plan_name !== undefined) live.plan_name = cmd.body.plan_name;
            if (cmd.body.mrr !== undefined) live.mrr = money(cmd.body.mrr);
            if (cmd.body.current_period_start !== undefined) live.current_period_start = TIMES[cmd.body.current_period_start];
            // A PUT that changes nothing answers the stored subscription and writes nothing (no event, no webhook).
            if (live.mrr === before.mrr && live.plan_name === before.plan && live.current_period_start === before.period)
              return expectOk(r, live, what);
            live.updated_at = at;
            live.changed = dated(live);
            if (!new Decimal(live.mrr).eq(before.mrr)) {
              emit(
                live,
                new Decimal(live.mrr).gt(before.mrr) ? 'upgrade' : 'downgrade',
                before.mrr,
                live.mrr,
                before.plan,
                live.plan_name,
                live.changed,
              );
            }
            hooks.push({ type: 'subscription.updated', object: present(live) });
            return expectOk(r, live, what);
          }
          if (cmd.kind === 'cancel') {
            const r = await api.put(`/subscriptions/${id}/cancel`, token, cmd.body);
            const what = `cancel ${id} ${JSON.stringify(cmd.body)}`;
            if (!live) return expectNotFound(r, what);
            if (live.status === 'cancelled') return expectInvalid(r, 'status', what);
            // Never dated before the start or the latest change.
            if (cmd.body.cancelled_at && TIMES[cmd.body.cancelled_at] < (live.changed > live.started_at ? live.changed : live.started_at)) {
              return expectInvalid(r, 'cancelled_at', what);
            }
            if (cmd.body.cancelled_at && TIMES[cmd.body.cancelled_at] > at) {
              // In the future: scheduled (a later cancel replaces the schedule); nothing else moves yet.
              live.cancel_at = TIMES[cmd.body.cancelled_at];
              live.cancel_reason = cmd.body.reason ?? null;
              live.updated_at = at;
              hooks.push({ type: 'subscription.updated', object: present(live) });
              return expectOk(r, live, what);
            }
            live.status = 'cancelled';
            live.cancel_at = null;
            live.cancelled_at = cmd.body.cancelled_at ? TIMES[cmd.body.cancelled_at] : dated(live);
            live.changed = live.cancelled_at;
            live.cancel_reason = cmd.body.reason ?? null;
            live.paused_at = null;
            live.updated_at = at;
            emit(live, 'cancel', live.mrr, '0', live.plan_name, live.plan_name, live.cancelled_at);
            hooks.push({ type: 'subscription.cancelled', object: present(live) });
            return expectOk(r, live, what);
          }
          if (cmd.kind === 'pause') {
            const r = await api.put(`/subscriptions/${id}/pause`, token, {});
            const what = `pause ${id}`;
            if (!live) return expectNotFound(r, what);
            if (live.status !== 'active') return expectInvalid(r, 'status', `${what} (${live.status})`);
            live.status = 'paused';
            live.paused_at = dated(live);
            live.changed = live.paused_at;
            live.updated_at = at;
            hooks.push({ type: 'subscription.paused', object: present(live) });
            return expectOk(r, live, what);
          }
          // reactivate
          const r = await api.put(`/subscriptions/${id}/reactivate`, token, {});
          const what = `reactivate ${id}`;
          if (!live) return expectNotFound(r, what);
          if (live.status === 'active' && live.cancel_at) {
            // Keeps a subscription scheduled to cancel: the schedule goes, nothing else moves.
            live.cancel_at = null;
            live.cancel_reason = null;
            live.updated_at = at;
            hooks.push({ type: 'subscription.reactivated', object: present(live) });
            return expectOk(r, live, what);
          }
          if (live.status === 'active') return expectInvalid(r, 'status', `${what} (active)`);
          if (live.status === 'cancelled' && liveOf(live.customer_id).length) return expectInvalid(r, 'status', `${what} (another live)`);
          live.status = 'active';
          live.cancelled_at = null;
          live.cancel_at = null;
          live.paused_at = null;
          live.cancel_reason = null;
          live.updated_at = at;
          live.changed = dated(live);
          emit(live, 'reactivated', '0', live.mrr, live.plan_name, live.plan_name, live.changed);
          hooks.push({ type: 'subscription.reactivated', object: present(live) });
          return expectOk(r, live, what);
        };

        let t0 = Date.now();
        for (const [n, cmd] of commands.entries()) {
          const target = cmd.kind === 'create' || cmd.kind === 'record' ? undefined : subOf(cmd.sub);
          trace.push(`${n}: ${JSON.stringify(cmd)}${target ? ` → subscription ${target.id}` : ''}`);
          await run(cmd);
          tally.commands++;
        }
        tally.ms.commands += Date.now() - t0;
        t0 = Date.now();
        tally.events += events.length;
        tally.maxSubscriptions = Math.max(tally.maxSubscriptions, subs.length);
        const where = `\ncommands:\n${trace.join('\n')}`;

        // Everything stored is read at once (the reads are independent), then compared with the model.
        const visible = subs.filter((s) => !s.deleted);
        const [perCustomer, byIdReads, subTotals, listedEvents, typeTotals, eventsPerCustomer, eventsPerSub, outbox] = await Promise.all([
          Promise.all(
            customerIds.map(async (customerId) => ({
              customerId,
              listed: await listAll(token, `/subscriptions?customer_id=${customerId}`),
              marker: await readItem(keys.liveSubscription(merchantId, customerId)),
            })),
          ),
          Promise.all(subs.map(async (s) => ({ s, r: await api.get(`/subscriptions/${s.id}`, token) }))),
          Promise.all(['/subscriptions', ...STATUSES.map((st) => `/subscriptions?status=${st}`)].map((path) => totalOf(token, path))),
          listAll(token, '/subscriptions/events'),
          Promise.all(EVENT_TYPES.map((type) => totalOf(token, `/subscriptions/events?event_type=${type}`))),
          Promise.all(customerIds.map((customerId) => listAll(token, `/subscriptions/events?customer_id=${customerId}`))),
          Promise.all(subs.map((s) => listAll(token, `/subscriptions/events?subscription_id=${s.id}`))),
          outboxEvents(merchantId),
        ]);

        // Subscriptions: per customer (newest first) and the live marker (read by key).
        for (const { customerId, listed, marker } of perCustomer) {
          const want = newestFirst(
            visible.filter((s) => s.customer_id === customerId),
            (s) => s.created_at,
          ).map(present);
          expect(listed.data.map(unnamed), `subscriptions of customer ${customerId}${where}`).toEqual(want);
          expect(listed.total, `total of customer ${customerId}${where}`).toBe(want.length);
          const holders = liveOf(customerId);
          expect(holders.length, 'model: at most one live subscription').toBeLessThanOrEqual(1);
          if (holders.length)
            expect(marker, `live marker of customer ${customerId}${where}`).toMatchObject({ subscription_id: holders[0].id });
          else expect(marker, `live marker of customer ${customerId}${where}`).toBeUndefined();
        }
        // Each by id (deleted → 404), and the totals (sharded counters) overall and per status.
        for (const { s, r } of byIdReads) {
          if (s.deleted) expect(r.body, `GET deleted ${s.id}: ${show(r)}${where}`).toEqual(NOT_FOUND);
          else expect(r.body.data, `GET ${s.id}: ${show(r)}${where}`).toEqual(present(s));
          expect(r.status, `GET ${s.id}`).toBe(s.deleted ? 404 : 200);
        }
        expect(subTotals, `subscriptions totals: all, ${STATUSES.join(', ')}${where}`).toEqual([
          visible.length,
          ...STATUSES.map((st) => visible.filter((s) => s.status === st).length),
        ]);

        // Events: exactly the model's. Ids are distinct per merchant but not a creation order (a
        // subscription takes its changes' ids from a block it holds), so the model compares without
        // them; lists are newest first by occurred_at, then id descending.
        expect(listedEvents.total, `events total${where}`).toBe(events.length);
        const listedIds = listedEvents.data.map((e: { id: number }) => e.id);
        expect(new Set(listedIds).size, 'distinct event ids').toBe(listedIds.length);
        events.forEach((e, i) => {
          if (e.id !== undefined)
            expect(
              listedEvents.data.find((x: { id: number }) => x.id === e.id),
              `recorded event ${i}: the id its 201 showed`,
            ).toEqual(e);
        });
        const listedAs = (listed: Array<Record<string, any>>, model: typeof events, label: string) => {
          expect(
            listed.map((e) => e.occurred_at),
            `${label}: newest first by occurred_at${where}`,
          ).toEqual(newestFirst(model, (e) => e.occurred_at).map((e) => e.occurred_at));
          expect(sameEvents(listed), `${label}: the model's events${where}`).toEqual(sameEvents(model));
          listed.forEach((e, i) => {
            if (i > 0 && listed[i - 1].occurred_at === e.occurred_at)
              expect(e.id, `${label}: equal occurred_at, id descending`).toBeLessThan(listed[i - 1].id);
          });
        };
        listedAs(listedEvents.data, events, 'events list');
        expect(typeTotals, `events totals by type (${EVENT_TYPES.join(', ')})${where}`).toEqual(
          EVENT_TYPES.map((type) => events.filter((e) => e.event_type === type).length),
        );
        customerIds.forEach((customerId, i) => {
          const want = events.filter((e) => e.customer_id === customerId);
          listedAs(eventsPerCustomer[i].data, want, `events of customer ${customerId}`);
          expect(eventsPerCustomer[i].total, `events total of customer ${customerId}`).toBe(want.length);
        });
        subs.forEach((s, i) => {
          listedAs(
            eventsPerSub[i].data,
            events.filter((e) => e.subscription_id === s.id),
            `events of subscription ${s.id}`,
          );
        });

        // Webhooks (outbox), oldest first: one per API change, none for deletes and recorded events.
        const hooksStored = outbox
          .filter((e) => String(e.type).startsWith('subscription.'))
          .map((e) => ({ type: e.type, object: e.data.object }));
        expect(hooksStored, `webhooks${where}`).toEqual(hooks);
        tally.ms.checks += Date.now() - t0;
      });

      await assertWithinBudget(property, RUNS, BUDGET_MS);
      console.info(`subscriptions model property: ${JSON.stringify(tally)}`);
    },
    TEST_TIMEOUT_MS,
  );
});
