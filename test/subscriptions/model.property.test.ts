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
 * sequence of commands — create (for one of 2–3 customers, now and then an unknown one; some with a
 * trial ending in the past or the future), update mrr / plan / period / a trial's end, pause,
 * reactivate, cancel (now, back-dated, or scheduled: at a trial's end or a delinquency's time too),
 * mark past due, recover, delete, record a historical event, let time pass (a minute to a month) —
 * sent one at a time with the clock one second further each time, every answer is the one the rules
 * give, and afterwards what is stored equals the model:
 *
 * - each customer's subscriptions (GET /subscriptions?customer_id=…, newest first), each status's
 *   list (GET /subscriptions?status=…) and each one by id (deleted → 404);
 * - every subscription event (GET /subscriptions/events, all, per customer and per subscription),
 *   with exact amounts (decimal.js), plans, sources and times, newest first by occurred_at;
 * - each customer's live-subscription marker;
 * - the list totals (sharded counters) per status and per event type, and the webhook outbox.
 *
 * Scheduled changes (a trial's conversion at trial_ends_at, a cancellation at cancel_at, a past-due
 * subscription's delinquent cancellation 30 days — the default delinquency_days — after failed_at)
 * are armed in the model as the scheduler arms them (from every state a change leaves), and before
 * most commands the scheduler's check runs for each armed one whose time has come: it applies the
 * subscription's due changes (earliest first; at one instant a cancellation before a delinquency
 * before a conversion) when the schedule is still the subscription's, once, and nothing for one
 * replaced, cleared, deleted or applied already; when time passes, a check of one not yet due says
 * when to wake. Now and then the scheduler does not run (before a command, or for a while after time
 * passed without it): reads show the due changes already, and the next change of the subscription
 * (or a create / reactivation meeting it in the customer's live slot) applies them first.
 *
 * Rules modelled: forbidden moves → 422 on `status` (update / pause / cancel a cancelled one, pause
 * anything not active, reactivate an active one without a schedule, a trialing or a past-due one, or
 * a cancelled one while the customer holds another live one, mark past due anything not active,
 * recover anything not past due); a second live subscription → 422 on `customer_id`; an unknown
 * customer → 422 on `customer_id`; a trial ending at or before its start → 422 on `trial_ends_at`, as
 * is moving a trial's end to now or before, or moving one of a subscription not trialing; a change
 * dated before the start or the latest change → 422 on its time; a deleted or unknown subscription →
 * 404 (422 on `subscription_id` when a recorded event names it, or names another customer's; 422 on
 * `occurred_at` when it is dated before the named subscription's trial end).
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

/** Seconds. */
const MINUTE = 60;
const HOUR = 3600;
const DAY = 86_400;
/** The merchant's delinquency_days (the default): a subscription past due this long is cancelled. */
const DELINQUENCY_DAYS = 30;

/**
 * A time in a command: one of TIMES (sent as written), seconds from the clock when the command is
 * sent, or the time of the target's trial end or delinquency (an hour ahead when it has none).
 */
type When = string | { rel: number } | { same: 'trial' | 'delinquent' };
const past = fc.constantFrom(-31 * DAY, -30 * DAY, -2 * DAY, -HOUR, -MINUTE).map((rel): When => ({ rel }));
const ahead = fc.constantFrom(30, HOUR, 2 * DAY, 10 * DAY).map((rel): When => ({ rel }));
/** A trial's end: mostly ahead, sometimes already past, now and then one of TIMES. */
const trialEnd = fc.oneof({ weight: 3, arbitrary: ahead }, { weight: 2, arbitrary: past }, { weight: 1, arbitrary: time });
/** When a renewal failed or was recovered, if given (a time ahead is refused; one before the latest change too). */
const happened = (omitted: number) =>
  fc.oneof(
    { weight: omitted, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: past },
    { weight: 1, arbitrary: time },
    { weight: 1, arbitrary: ahead },
  );
const cancelTime = fc.oneof(
  { weight: 3, arbitrary: time },
  { weight: 1, arbitrary: past },
  { weight: 2, arbitrary: ahead },
  { weight: 4, arbitrary: fc.constantFrom<When>({ same: 'trial' }, { same: 'delinquent' }) },
);

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
/** The event types a merchant may record; a subscription's own changes add the others. */
const RECORDED_TYPES = ['created', 'upgrade', 'downgrade', 'cancel', 'reactivated'] as const;
const EVENT_TYPES = [...RECORDED_TYPES, 'trial_converted', 'trial_cancelled', 'past_due', 'recovered'] as const;
const STATUSES = ['trialing', 'active', 'past_due', 'paused', 'cancelled'] as const;
type Status = (typeof STATUSES)[number];

/**
 * A subscription reference: often one the command fits (`fitting`: one not deleted that a read shows
 * in a status the command accepts), mostly one not deleted (`visible`: an index, modulo, into
 * those), sometimes any created so far (deleted ones included), now and then an id never created.
 */
const subRef = fc.oneof(
  { weight: 4, arbitrary: fc.record({ among: fc.constant('fitting' as const), n: fc.nat(7) }) },
  { weight: 5, arbitrary: fc.record({ among: fc.constant('visible' as const), n: fc.nat(7) }) },
  { weight: 1, arbitrary: fc.record({ among: fc.constant('all' as const), n: fc.nat(7) }) },
  { weight: 1, arbitrary: fc.constant('unknown' as const) },
);
type SubRef = 'unknown' | { among: 'fitting' | 'visible' | 'all'; n: number };
const customerRef = (customers: number) =>
  fc.oneof({ weight: 12, arbitrary: fc.integer({ min: 0, max: customers - 1 }) }, { weight: 1, arbitrary: fc.constant(-1) });

/**
 * Whether the scheduler runs (on everything due) before the command: mostly. When time passes
 * without it (`advance` with `sched` false), it is down until time passes again with it.
 */
const withScheduler = <T>(arbitrary: fc.Arbitrary<T>, down = 1) =>
  fc
    .tuple(arbitrary, fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: down, arbitrary: fc.constant(false) }))
    .map(([c, sched]) => ({ ...c, sched }));

const createCommand = (customers: number) =>
  withScheduler(
    fc.record({
      kind: fc.constant('create' as const),
      customer: customerRef(customers),
      body: fc
        .tuple(
          fc.record(
            { plan_name: plan, mrr: amount, billing_cycle: cycle, started_at: time, current_period_start: time },
            { requiredKeys: ['plan_name', 'mrr', 'billing_cycle'] },
          ),
          // A third with a trial: mostly one that runs on; one ended already needs an earlier start (else a 422).
          fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 3, arbitrary: trialEnd }),
        )
        .map(([body, trial]): typeof body & { trial_ends_at?: When } => (trial === undefined ? body : { ...body, trial_ends_at: trial })),
    }),
  );

const command = (customers: number) =>
  fc.oneof(
    { weight: 3, arbitrary: createCommand(customers) },
    {
      weight: 4,
      arbitrary: withScheduler(
        fc.record({
          kind: fc.constant('update' as const),
          sub: subRef,
          body: fc
            .tuple(
              fc.record({ plan_name: plan, mrr: amount, current_period_start: time }, { requiredKeys: [] }),
              // Now and then a trial's end moved: mostly ahead; sometimes to a time past (refused), or on a subscription not trialing.
              fc.oneof(
                { weight: 9, arbitrary: fc.constant(undefined) },
                { weight: 2, arbitrary: ahead },
                { weight: 1, arbitrary: fc.oneof(past, time) },
              ),
            )
            .map(([body, trial]): typeof body & { trial_ends_at?: When } =>
              trial === undefined ? body : { ...body, trial_ends_at: trial },
            ),
        }),
      ),
    },
    { weight: 3, arbitrary: withScheduler(fc.record({ kind: fc.constant('pause' as const), sub: subRef })) },
    { weight: 3, arbitrary: withScheduler(fc.record({ kind: fc.constant('reactivate' as const), sub: subRef })) },
    {
      weight: 3,
      arbitrary: withScheduler(
        fc.record({
          kind: fc.constant('cancel' as const),
          sub: subRef,
          body: fc.record({ cancelled_at: cancelTime, reason: fc.constantFrom('too expensive', 'moved') }, { requiredKeys: [] }),
        }),
      ),
    },
    {
      weight: 4,
      arbitrary: withScheduler(
        fc.record({
          kind: fc.constant('pastDue' as const),
          sub: subRef,
          body: happened(5).map((failed_at) => (failed_at === undefined ? {} : { failed_at })),
        }),
      ),
    },
    {
      weight: 3,
      arbitrary: withScheduler(
        fc.record({
          kind: fc.constant('recover' as const),
          sub: subRef,
          body: happened(10).map((recovered_at) => (recovered_at === undefined ? {} : { recovered_at })),
        }),
      ),
    },
    {
      weight: 3,
      arbitrary: withScheduler(
        fc.record({
          kind: fc.constant('advance' as const),
          by: fc.constantFrom(MINUTE, HOUR, 2 * DAY, 16 * DAY, 16 * DAY, 31 * DAY, 31 * DAY),
        }),
        2,
      ),
    },
    { weight: 1, arbitrary: withScheduler(fc.record({ kind: fc.constant('delete' as const), sub: subRef })) },
    {
      weight: 2,
      arbitrary: withScheduler(
        fc
          .record({
            kind: fc.constant('record' as const),
            customer: customerRef(customers),
            sub: fc.oneof(fc.constant(null), subRef),
            body: fc
              .record(
                {
                  event_type: fc.constantFrom(...RECORDED_TYPES),
                  old_amount: amount,
                  new_amount: amount,
                  old_plan: plan,
                  new_plan: plan,
                  occurred_at: fc.oneof({ weight: 2, arbitrary: time }, { weight: 1, arbitrary: past }),
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
      ),
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
  /** A trial's end: trialing until then (no mrr counted), converted then. Kept once converted or cancelled. */
  trial_ends_at: string | null;
  /** While past due: when the renewal failed (cancelled as delinquent DELINQUENCY_DAYS later). */
  failed_at: string | null;
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
  return { ...rest, external_id: null, currency: 'TWD', source: 'api' };
};
const isLive = (s: ModelSub) => !s.deleted && s.status !== 'cancelled';
const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;
const plusSeconds = (t: string, seconds: number) => iso(Date.parse(t) + seconds * 1000);

/** A scheduled change of the model: its kind, the time it was armed with, and when it falls due. */
type Kind = 'cancel' | 'delinquent' | 'convert';
type Due = { kind: Kind; armed: string; at: string };
/** At one instant a cancellation comes first (a trial cancelled as it ends never converts), then a delinquency, then a conversion. */
const KIND_ORDER: Record<Kind, number> = { cancel: 0, delinquent: 1, convert: 2 };
const byDue = (a: Due, b: Due) => (a.at !== b.at ? (a.at < b.at ? -1 : 1) : KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);
/** The subscription's scheduled changes not yet applied, earliest first. */
const schedulesOf = (s: ModelSub): Due[] => {
  if (s.deleted || s.status === 'cancelled') return [];
  const out: Due[] = [];
  if (s.cancel_at) out.push({ kind: 'cancel', armed: s.cancel_at, at: s.cancel_at });
  if (s.status === 'past_due' && s.failed_at)
    out.push({ kind: 'delinquent', armed: s.failed_at, at: plusSeconds(s.failed_at, DELINQUENCY_DAYS * DAY) });
  if (s.status === 'trialing' && s.trial_ends_at) out.push({ kind: 'convert', armed: s.trial_ends_at, at: s.trial_ends_at });
  return out.sort(byDue);
};
/** The earliest scheduled change whose time has come by `at`. */
const dueOf = (s: ModelSub, at: string): Due | undefined => schedulesOf(s).find((d) => d.at <= at);
/** The state a due change leads to (what a read shows; the change itself also books its event and webhook). */
const applyDue = (s: ModelSub, d: Due) => {
  if (d.kind === 'convert') {
    s.status = 'active';
    return;
  }
  s.status = 'cancelled';
  s.cancelled_at = d.at;
  s.cancel_at = null;
  s.paused_at = null;
  s.failed_at = null;
  if (d.kind === 'delinquent') s.cancel_reason = 'delinquent';
};
/** The subscription as a read shows it at `at`: every change due by then applied (nothing written: updated_at stays). */
const asOf = (s: ModelSub, at: string): ModelSub => {
  const out = { ...s };
  for (let d = dueOf(out, at); d; d = dueOf(out, at)) applyDue(out, d);
  return out;
};
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
        /** The clock moves on (one second each command; more when time passes). */
        const tick = (seconds = 1) => {
          clock.advance(seconds * 1000);
          at = plusSeconds(at, seconds);
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
        /** Webhooks with the time they were recorded at (at one time, in no particular order: see the check). */
        const hooks: { at: string; type: string; object: unknown }[] = [];
        const trace: string[] = [];
        /** The schedules the scheduler has armed (from every state a change left) and not yet checked at their time. */
        const timers = new Map<string, Due & { id: number }>();
        /** Time passed without the scheduler: it runs again when time passes with it. */
        let schedulerDown = false;

        const customerOf = (ref: number) => (ref === -1 ? UNKNOWN_CUSTOMER : customerIds[ref]);
        /** The statuses (as read now) each command accepts. */
        const fits = (kind: string, s: ModelSub) =>
          ({
            update: s.status !== 'cancelled',
            // A cancellation is sought for a trial or a failed renewal (a schedule may meet theirs); else any not cancelled.
            cancel: s.status === 'trialing' || s.status === 'past_due' || (s.status !== 'cancelled' && 'any'),
            pause: s.status === 'active',
            pastDue: s.status === 'active',
            recover: s.status === 'past_due',
            reactivate: s.status === 'paused' || s.status === 'cancelled' || (s.status === 'active' && s.cancel_at !== null),
          })[kind] ?? true;
        const subOf = (ref: SubRef, kind: string): { id: number; sub?: ModelSub } => {
          if (ref === 'unknown') return { id: UNKNOWN_SUBSCRIPTION };
          const visible = subs.filter((s) => !s.deleted);
          const fitAs = (s: ModelSub) => fits(kind, asOf(s, at));
          const preferred = visible.filter((s) => fitAs(s) === true);
          const fitting = preferred.length ? preferred : visible.filter((s) => fitAs(s) === 'any');
          const pool = ref.among === 'fitting' && fitting.length ? fitting : ref.among !== 'all' && visible.length ? visible : subs;
          if (!pool.length) return { id: UNKNOWN_SUBSCRIPTION };
          const sub = pool[ref.n % pool.length];
          trace[trace.length - 1] += ` → subscription ${sub.id}`;
          return { id: sub.id, sub };
        };
        const liveOf = (customerId: number) => subs.filter((s) => s.customer_id === customerId && isLive(s));
        const _mrrOf = (customerId: number) =>
          money(
            subs
              .filter((s) => s.customer_id === customerId && !s.deleted && s.status === 'active')
              .reduce((sum, s) => sum.plus(s.mrr), new Decimal(0)),
          );
        /** A time as stored: one of TIMES normalised, or relative to now, or the target's trial end or delinquency. */
        const storedOf = (w: When, s?: ModelSub): string => {
          if (typeof w === 'string') return TIMES[w];
          if ('rel' in w) return plusSeconds(at, w.rel);
          if (w.same === 'trial' && s?.status === 'trialing' && s.trial_ends_at) return s.trial_ends_at;
          if (w.same === 'delinquent' && s?.status === 'past_due' && s.failed_at) return plusSeconds(s.failed_at, DELINQUENCY_DAYS * DAY);
          return plusSeconds(at, HOUR);
        };
        /** A body as sent: each time (When) as written (one of TIMES) or as resolved now. */
        const sendable = (body: Record<string, unknown>, s?: ModelSub) =>
          Object.fromEntries(Object.entries(body).map(([k, v]) => [k, v !== null && typeof v === 'object' ? storedOf(v as When, s) : v]));
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
        const hook = (type: string, s: ModelSub) => hooks.push({ at, type: `subscription.${type}`, object: present(s) });

        /**
         * Applies every change of `s` due by now, earliest first, each with its event and webhook: a
         * conversion (trial_converted, its mrr counting from the trial's end), a cancellation (a
         * trial's: trial_cancelled, nothing counted), a delinquent cancellation (reason delinquent).
         */
        const settle = (s: ModelSub) => {
          for (let d = dueOf(s, at); d; d = dueOf(s, at)) {
            const wasTrialing = s.status === 'trialing';
            // Two schedules at one instant: the cancellation wins.
            const tie = schedulesOf(s).some((x) => x.kind !== d.kind && x.at === d.at) ? ', with another at that time' : '';
            applyDue(s, d);
            s.changed = d.at;
            s.updated_at = at;
            if (d.kind === 'convert') {
              emit(s, 'trial_converted', '0', s.mrr, s.plan_name, s.plan_name, d.at);
              hook('trial_converted', s);
            } else if (wasTrialing) {
              emit(s, 'trial_cancelled', '0', '0', s.plan_name, s.plan_name, d.at);
              hook('trial_cancelled', s);
            } else {
              emit(s, 'cancel', s.mrr, '0', s.plan_name, s.plan_name, d.at);
              hook('cancelled', s);
            }
            count(`settled ${d.kind}${wasTrialing && d.kind === 'cancel' ? ' (trial)' : ''}${tie}`);
          }
        };
        /** The customer's live slot held by a subscription whose changes are due: they are applied (the slot may be free then). */
        const settleHolder = (customerId: number, what: string, except?: ModelSub) => {
          for (const holder of liveOf(customerId))
            if (holder !== except && dueOf(holder, at)) {
              settle(holder);
              count(`settled the live slot's holder (${what})`);
            }
        };
        /** The scheduler arms every schedule a change leaves (one timer per subscription, kind and time). */
        const arm = () => {
          for (const s of subs) for (const d of schedulesOf(s)) timers.set(`${s.id}#${d.kind}#${d.armed}`, { ...d, id: s.id });
        };
        const checkOf = (t: Due & { id: number }) =>
          checkScheduledCancel({
            merchant_id: merchantId,
            subscription_id: t.id,
            cancel_at: t.armed,
            ...(t.kind === 'cancel' ? {} : { kind: t.kind }),
          });
        /**
         * The scheduler's run at this time (as the deployed one runs within a minute): the check of each
         * armed schedule whose time has come applies the subscription's due changes when it is still
         * the subscription's, once; one replaced, cleared, deleted or applied already does nothing.
         * With `wake`, each one not yet due is checked too: it says when to look again.
         */
        const runScheduler = async (wake: boolean) => {
          const fired = [...timers.entries()].filter(([, t]) => t.at <= at).sort(([, a], [, b]) => byDue(a, b));
          for (const [key, t] of fired) {
            timers.delete(key);
            const s = subs.find((x) => x.id === t.id)!;
            const current = schedulesOf(s).some((d) => d.kind === t.kind && d.armed === t.armed);
            const check = await checkOf(t);
            expect(check, `scheduler: ${t.kind} of ${t.id} armed at ${t.armed}, due ${t.at}, now ${at}`).toEqual({
              due: true,
              applied: current,
            });
            count(`scheduler ${t.kind} ${current ? 'applied' : 'stale'}`);
            if (current) settle(s);
          }
          if (!wake) return;
          for (const t of timers.values()) {
            const check = await checkOf(t);
            expect(check, `scheduler: ${t.kind} of ${t.id} armed at ${t.armed}, due ${t.at}, now ${at}`).toEqual({
              due: false,
              wake_at: t.at,
              far: false,
            });
            count(`scheduler ${t.kind} not yet`);
          }
        };

        const expectInvalid = (r: ApiResponse, field: string | string[], what: string, message?: string | RegExp) => {
          const fields = [field].flat();
          expect(r.status, `${what}: ${show(r)}`).toBe(422);
          expect(r.body.message, what).toBe(INVALID);
          expect(Object.keys(r.body.errors).sort(), `${what}: ${show(r)}`).toEqual([...fields].sort());
          if (typeof message === 'string') expect(r.body.errors[fields[0]], what).toEqual([message]);
          else if (message) expect(r.body.errors[fields[0]][0], what).toMatch(message);
          count(`422 ${fields.join('+')}${message ? ` (${what.split(' ')[0]})` : ''}`);
        };
        const expectNotFound = (r: ApiResponse, what: string) => {
          expect(r.status, `${what}: ${show(r)}`).toBe(404);
          expect(r.body, what).toEqual(NOT_FOUND);
          count('404');
        };
        const expectOk = (r: ApiResponse, s: ModelSub, what: string, path = '') => {
          expect(r.status, `${what}: ${show(r)}`).toBe(200);
          expect(r.body.data, what).toEqual(present(s));
          count(`200 ${what.split(' ')[0]}${path}`);
        };
        /** Never dated before the start or the latest change. */
        const beforeFloor = (s: ModelSub, t: string | undefined) =>
          t !== undefined && t < (s.changed > s.started_at ? s.changed : s.started_at);
        const TRIAL_AFTER_START = 'The trial ends at field must be a date after started at.';

        const run = async (cmd: Command) => {
          if (cmd.kind === 'advance') {
            tick(cmd.by);
            count(`advance ${cmd.by}s${cmd.sched ? '' : ', scheduler down'}`);
            schedulerDown = !cmd.sched;
            if (cmd.sched) return runScheduler(true);
            // The scheduler has not run yet: every read shows the changes due by now already.
            for (const s of subs.filter((x) => !x.deleted && dueOf(x, at))) {
              const r = await api.get(`/subscriptions/${s.id}`, token);
              expect(r.body.data, `GET ${s.id} with a change due, scheduler not run: ${show(r)}`).toEqual(present(asOf(s, at)));
              count('200 read (due, before the scheduler)');
            }
            return;
          }
          if (cmd.sched && !schedulerDown && [...timers.values()].some((t) => t.at <= at)) {
            tick();
            await runScheduler(false);
          }
          tick();
          if (cmd.kind === 'create') {
            const customerId = customerOf(cmd.customer);
            const trial = cmd.body.trial_ends_at === undefined ? null : storedOf(cmd.body.trial_ends_at);
            const r = await api.post('/subscriptions', token, { customer_id: customerId, ...sendable(cmd.body) });
            const what = `create for customer ${customerId} ${JSON.stringify(sendable(cmd.body))}`;
            const startedAt = cmd.body.started_at ? TIMES[cmd.body.started_at] : at;
            // The body is checked before the customer: an MRR of 0, or a trial not ending after a given start, whoever it is for.
            const bodyErrors = [
              ...(new Decimal(String(cmd.body.mrr)).isZero() ? ['mrr'] : []),
              ...(cmd.body.started_at && trial !== null && trial <= startedAt ? ['trial_ends_at'] : []),
            ];
            if (bodyErrors.length) return expectInvalid(r, bodyErrors, what);
            // A start by default is now: the trial must end after it.
            if (trial !== null && trial <= startedAt) return expectInvalid(r, 'trial_ends_at', what, TRIAL_AFTER_START);
            if (cmd.customer === -1) return expectInvalid(r, 'customer_id', what);
            settleHolder(customerId, 'create');
            if (liveOf(customerId).length) return expectInvalid(r, 'customer_id', what);
            expect(r.status, `${what}: ${show(r)}`).toBe(201);
            // A trial that has ended already is created converted.
            const converted = trial !== null && trial <= at;
            const s: ModelSub = {
              id: r.body.data.id,
              customer_id: customerId,
              status: trial === null || converted ? 'active' : 'trialing',
              plan_name: cmd.body.plan_name,
              mrr: money(cmd.body.mrr),
              billing_cycle: cmd.body.billing_cycle,
              started_at: startedAt,
              current_period_start: cmd.body.current_period_start ? TIMES[cmd.body.current_period_start] : startedAt,
              cancelled_at: null,
              paused_at: null,
              cancel_reason: null,
              cancel_at: null,
              trial_ends_at: trial,
              failed_at: null,
              created_at: at,
              updated_at: at,
              deleted: false,
              changed: converted ? trial : startedAt,
            };
            expect(
              subs.some((x) => x.id === s.id),
              `new id ${s.id}`,
            ).toBe(false);
            expect(r.body.data, what).toEqual(present(s));
            subs.push(s);
            // A trial's created event is at 0: its mrr counts from its conversion.
            emit(s, 'created', '0', trial === null ? s.mrr : '0', null, s.plan_name, startedAt);
            if (converted) emit(s, 'trial_converted', '0', s.mrr, s.plan_name, s.plan_name, trial);
            hook('created', s);
            count(`201 create${trial === null ? '' : converted ? ' (trial ended)' : ' (trialing)'}`);
            return;
          }
          if (cmd.kind === 'record') {
            const customerId = customerOf(cmd.customer);
            const target = cmd.sub === null ? null : subOf(cmd.sub, cmd.kind);
            const occurred = cmd.body.occurred_at === undefined ? at : storedOf(cmd.body.occurred_at);
            const body = { customer_id: customerId, ...(target ? { subscription_id: target.id } : {}), ...sendable(cmd.body) };
            const r = await api.post('/subscriptions/events', token, body);
            const what = `record ${JSON.stringify(body)}`;
            // Body first, every rule at once: history has happened (not after now), and the type agrees with the amounts.
            const bodyErrors = [
              ...(occurred > at ? ['occurred_at'] : []),
              ...(typeAgrees(cmd.body.event_type, new Decimal(String(cmd.body.old_amount)), new Decimal(String(cmd.body.new_amount)))
                ? []
                : ['event_type']),
            ];
            if (bodyErrors.length) return expectInvalid(r, bodyErrors, what);
            // The named subscription's due changes are applied first, as any change applies them (whatever the item's outcome).
            if (target?.sub && !target.sub.deleted && dueOf(target.sub, at)) {
              settle(target.sub);
              count('settled before a recorded event');
            }
            if (cmd.customer === -1) return expectInvalid(r, 'customer_id', what);
            if (target && (!target.sub || target.sub.deleted || target.sub.customer_id !== customerId))
              return expectInvalid(r, 'subscription_id', what);
            // A trial counts nothing until it ends: no recorded change of its amount before then.
            const trialEnds = target?.sub?.trial_ends_at;
            if (trialEnds && occurred < trialEnds) return expectInvalid(r, 'occurred_at', what, /when the subscription's trial ends/);
            if (!target) {
              // Without a subscription an event is history from before the customer's first one here: at
              // or after a (not deleted) subscription's start it must name it. Earlier than every start it
              // may still be refused when an earlier point leads a subscription's line (a recorded event
              // naming it, a cancellation dated before its start): the metrics property test pins that case.
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
              occurred_at: occurred,
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

          const { id, sub } = subOf(cmd.sub, cmd.kind);
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
            const trialTo = cmd.body.trial_ends_at === undefined ? undefined : storedOf(cmd.body.trial_ends_at);
            const body = sendable(cmd.body);
            const r = await api.put(`/subscriptions/${id}`, token, body);
            const what = `update ${id} ${JSON.stringify(body)}`;
            if (cmd.body.mrr !== undefined && new Decimal(String(cmd.body.mrr)).isZero()) return expectInvalid(r, 'mrr', what);
            if (!live) return expectNotFound(r, what);
            // Every change starts from what reads show: the changes due by now are applied first.
            settle(live);
            if (live.status === 'cancelled') return expectInvalid(r, 'status', what);
            if (trialTo !== undefined && live.status !== 'trialing')
              return expectInvalid(r, 'trial_ends_at', what, new RegExp(`it is ${live.status}\\.$`));
            if (trialTo !== undefined && trialTo <= at)
              return expectInvalid(r, 'trial_ends_at', what, 'The trial ends at field must be a date after now.');
            const before = { mrr: live.mrr, plan: live.plan_name, period: live.current_period_start, trial: live.trial_ends_at };
            if (cmd.body.plan_name !== undefined) live.plan_name = cmd.body.plan_name;
            if (cmd.body.mrr !== undefined) live.mrr = money(cmd.body.mrr);
            if (cmd.body.current_period_start !== undefined) live.current_period_start = TIMES[cmd.body.current_period_start];
            if (trialTo !== undefined) live.trial_ends_at = trialTo;
            // A PUT that changes nothing answers the stored subscription and writes nothing (no event, no webhook).
            if (
              live.mrr === before.mrr &&
              live.plan_name === before.plan &&
              live.current_period_start === before.period &&
              live.trial_ends_at === before.trial
            )
              return expectOk(r, live, what);
            live.updated_at = at;
            live.changed = dated(live);
            // While trialing nothing counts yet: no event.
            if (live.status !== 'trialing' && !new Decimal(live.mrr).eq(before.mrr)) {
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
            hook('updated', live);
            return expectOk(r, live, what);
          }
          if (cmd.kind === 'cancel') {
            const cancelledAt = cmd.body.cancelled_at === undefined ? undefined : storedOf(cmd.body.cancelled_at, live);
            const body = sendable(cmd.body, live);
            const r = await api.put(`/subscriptions/${id}/cancel`, token, body);
            const what = `cancel ${id} ${JSON.stringify(body)}`;
            if (!live) return expectNotFound(r, what);
            settle(live);
            if (live.status === 'cancelled') return expectInvalid(r, 'status', what);
            if (beforeFloor(live, cancelledAt)) return expectInvalid(r, 'cancelled_at', what);
            if (cancelledAt && cancelledAt > at) {
              // In the future: scheduled (a later cancel replaces the schedule); nothing else moves yet.
              live.cancel_at = cancelledAt;
              live.cancel_reason = cmd.body.reason ?? null;
              live.updated_at = at;
              hook('updated', live);
              const meets = schedulesOf(live).find((d) => d.kind !== 'cancel' && d.at === cancelledAt);
              return expectOk(r, live, what, ` (scheduled${meets ? `, at its ${meets.kind} time` : ''})`);
            }
            const wasTrialing = live.status === 'trialing';
            live.status = 'cancelled';
            live.cancel_at = null;
            live.cancelled_at = cancelledAt ?? dated(live);
            live.changed = live.cancelled_at;
            live.cancel_reason = cmd.body.reason ?? null;
            live.paused_at = null;
            live.failed_at = null;
            live.updated_at = at;
            // A trial cancelled ends unconverted: nothing counted, nothing churned.
            if (wasTrialing) emit(live, 'trial_cancelled', '0', '0', live.plan_name, live.plan_name, live.cancelled_at);
            else emit(live, 'cancel', live.mrr, '0', live.plan_name, live.plan_name, live.cancelled_at);
            hook(wasTrialing ? 'trial_cancelled' : 'cancelled', live);
            return expectOk(r, live, what, wasTrialing ? ' (trial)' : '');
          }
          if (cmd.kind === 'pastDue') {
            const failedAt = cmd.body.failed_at === undefined ? undefined : storedOf(cmd.body.failed_at);
            const body = sendable(cmd.body);
            const r = await api.put(`/subscriptions/${id}/past-due`, token, body);
            const what = `pastDue ${id} ${JSON.stringify(body)}`;
            if (failedAt && failedAt > at) return expectInvalid(r, 'failed_at', what);
            if (!live) return expectNotFound(r, what);
            settle(live);
            if (live.status !== 'active')
              return expectInvalid(
                r,
                'status',
                what,
                `Only an active subscription can be marked past due; it is ${live.status === 'past_due' ? 'already past due' : live.status}.`,
              );
            if (beforeFloor(live, failedAt)) return expectInvalid(r, 'failed_at', what);
            // Its mrr still counts: the event moves nothing but says when the renewal failed.
            live.status = 'past_due';
            live.failed_at = failedAt ?? dated(live);
            live.changed = live.failed_at;
            live.updated_at = at;
            emit(live, 'past_due', live.mrr, live.mrr, live.plan_name, live.plan_name, live.failed_at);
            hook('past_due', live);
            return expectOk(r, live, what);
          }
          if (cmd.kind === 'recover') {
            const recoveredAt = cmd.body.recovered_at === undefined ? undefined : storedOf(cmd.body.recovered_at);
            const body = sendable(cmd.body);
            const r = await api.put(`/subscriptions/${id}/recover`, token, body);
            const what = `recover ${id} ${JSON.stringify(body)}`;
            if (recoveredAt && recoveredAt > at) return expectInvalid(r, 'recovered_at', what);
            if (!live) return expectNotFound(r, what);
            settle(live);
            if (live.status !== 'past_due')
              return expectInvalid(r, 'status', what, `Only a past-due subscription can be recovered; it is ${live.status}.`);
            if (beforeFloor(live, recoveredAt)) return expectInvalid(r, 'recovered_at', what);
            live.status = 'active';
            live.failed_at = null;
            live.changed = recoveredAt ?? dated(live);
            live.updated_at = at;
            emit(live, 'recovered', live.mrr, live.mrr, live.plan_name, live.plan_name, live.changed);
            hook('recovered', live);
            return expectOk(r, live, what);
          }
          if (cmd.kind === 'pause') {
            const r = await api.put(`/subscriptions/${id}/pause`, token, {});
            const what = `pause ${id}`;
            if (!live) return expectNotFound(r, what);
            settle(live);
            if (live.status !== 'active') return expectInvalid(r, 'status', `${what} (${live.status})`);
            live.status = 'paused';
            live.paused_at = dated(live);
            live.changed = live.paused_at;
            live.updated_at = at;
            hook('paused', live);
            return expectOk(r, live, what);
          }
          // reactivate
          const r = await api.put(`/subscriptions/${id}/reactivate`, token, {});
          const what = `reactivate ${id}`;
          if (!live) return expectNotFound(r, what);
          settle(live);
          if (live.status === 'active' && live.cancel_at) {
            // Keeps a subscription scheduled to cancel: the schedule goes, nothing else moves.
            live.cancel_at = null;
            live.cancel_reason = null;
            live.updated_at = at;
            hook('reactivated', live);
            return expectOk(r, live, what, ' (schedule cleared)');
          }
          if (live.status === 'active' || live.status === 'trialing' || live.status === 'past_due')
            return expectInvalid(r, 'status', `${what} (${live.status})`);
          // The customer's live slot: a holder whose changes are due has them applied first (its cancellation frees it).
          if (live.status === 'cancelled') settleHolder(live.customer_id, 'reactivate', live);
          if (live.status === 'cancelled' && liveOf(live.customer_id).length) return expectInvalid(r, 'status', `${what} (another live)`);
          live.status = 'active';
          live.cancelled_at = null;
          live.cancel_at = null;
          live.paused_at = null;
          live.cancel_reason = null;
          live.updated_at = at;
          live.changed = dated(live);
          emit(live, 'reactivated', '0', live.mrr, live.plan_name, live.plan_name, live.changed);
          hook('reactivated', live);
          return expectOk(r, live, what);
        };

        let t0 = Date.now();
        for (const [n, cmd] of commands.entries()) {
          trace.push(`${n} (${at}): ${JSON.stringify(cmd)}`);
          await run(cmd);
          arm();
          tally.commands++;
        }
        // The scheduler runs on what has fallen due (as the deployed one does within a minute): stored is then what reads show.
        if ([...timers.values()].some((t) => t.at <= at)) {
          tick();
          await runScheduler(false);
        }
        for (const s of subs) expect(dueOf(s, at), `model: nothing of ${s.id} left due`).toBeUndefined();
        tally.ms.commands += Date.now() - t0;
        t0 = Date.now();
        tally.events += events.length;
        tally.maxSubscriptions = Math.max(tally.maxSubscriptions, subs.length);
        const where = `\ncommands:\n${trace.join('\n')}`;

        // Everything stored is read at once (the reads are independent), then compared with the model.
        const visible = subs.filter((s) => !s.deleted);
        const [perCustomer, byIdReads, subTotal, perStatus, listedEvents, typeTotals, eventsPerCustomer, eventsPerSub, outbox] =
          await Promise.all([
            Promise.all(
              customerIds.map(async (customerId) => ({
                customerId,
                listed: await listAll(token, `/subscriptions?customer_id=${customerId}`),
                marker: await readItem(keys.liveSubscription(merchantId, customerId)),
              })),
            ),
            Promise.all(subs.map(async (s) => ({ s, r: await api.get(`/subscriptions/${s.id}`, token) }))),
            totalOf(token, '/subscriptions'),
            Promise.all(STATUSES.map((st) => listAll(token, `/subscriptions?status=${st}`))),
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
        // Each status's list (newest first) and its total (sharded counters).
        expect(subTotal, `subscriptions total${where}`).toBe(visible.length);
        STATUSES.forEach((st, i) => {
          const want = newestFirst(
            visible.filter((s) => s.status === st),
            (s) => s.created_at,
          ).map(present);
          expect(perStatus[i].data.map(unnamed), `subscriptions ${st}${where}`).toEqual(want);
          expect(perStatus[i].total, `total ${st}${where}`).toBe(want.length);
        });

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

        // Webhooks (outbox), oldest first: one per API change (and per scheduled change applied), none
        // for deletes and recorded events. Those of one time (a due change applied, then the change
        // asked for) are in no particular order there: each time's are compared as a set.
        const byTime = (xs: { at: string; type: string; object: unknown }[]) =>
          xs.map((h) => `${h.at} ${canonicalize({ type: h.type, object: h.object })}`).sort();
        const hooksStored = outbox
          .filter((e) => String(e.type).startsWith('subscription.'))
          .map((e) => ({ at: e.created_at as string, type: e.type as string, object: e.data.object }));
        expect(byTime(hooksStored), `webhooks${where}`).toEqual(byTime(hooks));
        tally.ms.checks += Date.now() - t0;
      });

      await assertWithinBudget(property, RUNS, BUDGET_MS);
      console.info(`subscriptions model property: ${JSON.stringify(tally)}`);
    },
    TEST_TIMEOUT_MS,
  );
});
