import Decimal from 'decimal.js';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { checkScheduledCancel } from '#lib/subscriptions/schedule';
import { newMerchant, useApi } from '../support/api.ts';
import { backofficeJwt } from '../backoffice/support.ts';
import { assertWithinBudget } from '../support/property.ts';
import {
  expectedChurnReasons,
  expectedCohorts,
  expectedRecovery,
  expectedSeries,
  expectedSummary,
  expectedTrials,
  refEndTrial,
  refImportedEnd,
  refLocalDate,
  refMovements,
  refRenewals,
  refSegment,
  refSetAt,
  refSetFrom,
  type RefCustomer,
  type RefRates,
  type RefPoint,
  type RefSegment,
} from './reference.ts';
import { type RefOrder, type RefRateBook, refPaymentMethods, refPurchaseCohorts, refSales } from './sales-reference.ts';

/**
 * Property (docs/metrics.md, "Freshness and cost"): for random histories sent through the API — subscription
 * creates (some back-dated), updates (some of the plan alone), pauses, reactivations, cancellations (some
 * back-dated) and deletions; trials (back-dated or not, ended at creation or not, imported in batches too, their
 * end moved, cancelled during them or after, converted by the scheduler); failed renewals (some back-dated,
 * some delinquent at once), recoveries (refused once the delinquent cancellation has come) and delinquent
 * cancellations applied by the scheduler; recorded events (back-dated, with or without a subscription),
 * recurring paid orders in the reporting currency or another (some with a past paid_at), renewals of them on
 * time, within the 30-day renewal grace or past it (at the same amount or another, their graces run out and
 * settled by the scheduler: the reference chains the order lines as docs/metrics.md "Renewals" says), refunds, order batches
 * (new orders, status moves, a repeated order_no) and groups of writers for different customers sent
 * concurrently — the pre-aggregated daily, weekly and monthly series (the MRR past due and the churn split into
 * voluntary and delinquent included), the summary, the cohorts, the trials and the failed renewals (GET
 * /metrics/trials, /metrics/recovery) equal a from-scratch recomputation over the raw records (`reference.ts`,
 * which shares no code with lib/metrics). Customers carry metadata (replaced now and then), and the segments
 * checked include ones read from the matching customers' timelines: a metadata filter, two ANDed, and a
 * union of two plans, each against the reference over only the matching customers' lines. The
 * merchant's reporting time zone is random (UTC, ahead, behind, DST, a quarter-hour off) and may
 * change between two steps: every bucket is the zone's days, weeks and months, what was written
 * before the change included. The sales reads (GET /metrics/sales whole, by day and week, segmented by
 * currency, cycle and metadata; payment methods; purchase cohorts) equal the sales reference over
 * the orders as GET /orders lists them.
 */
const api = useApi();
afterEach(() => resetClock());

const DEFAULT_RUNS = 6;
const RUNS = Number(process.env.PROP_RUNS ?? DEFAULT_RUNS);
const BUDGET_MS = Number(process.env.PROP_BUDGET_MS ?? Math.max(240_000, Math.ceil((RUNS * 240_000) / DEFAULT_RUNS)));

const START = Date.parse('2025-01-01T00:00:00Z');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;
const CUSTOMERS = 4;
const CYCLES = { monthly: 1, quarterly: 3, 'semi-annual': 6, yearly: 12 } as const;

type Op =
  | { kind: 'sub'; c: number; variant: number; amount: number; back: number }
  | { kind: 'delete'; c: number }
  | { kind: 'event'; c: number; withSub: boolean; amount: number; back: number; between?: boolean }
  | { kind: 'order'; c: number; cycle: keyof typeof CYCLES; usd: boolean; amount: number; back: number; renewals: number[] }
  | { kind: 'renew'; c: number; gap: number; amount: number; usd: boolean }
  | { kind: 'refund'; c: number }
  | {
      kind: 'batch';
      c: number;
      items: {
        existing: boolean;
        status: 'paid' | 'cancelled' | 'refunded' | 'pending';
        back: number;
        cycle: keyof typeof CYCLES;
        amount: number;
      }[];
      repeat: boolean;
    }
  | { kind: 'import'; c: number; amount: number; back: number; cancelAfter: number; usd: boolean; trial: number }
  | { kind: 'trial'; c: number; variant: number; amount: number; back: number; hours: number; cancel: number }
  | { kind: 'due'; c: number; variant: number; back: number; recover: number }
  | { kind: 'events'; c: number; items: { withSub: boolean; amount: number; back: number }[] }
  | { kind: 'schedule'; c: number; ahead: number }
  | { kind: 'meta'; c: number; meta: Meta };
/** A customer's metadata: the pairs the metadata segments filter on (`region` may be left out; `extra` is an object: never indexed). */
type Meta = { tier: string; region?: string; extra?: { tier: string } };
type Step = { advance: number; ops: Op[] };

const customer = fc.integer({ min: 0, max: CUSTOMERS - 1 });
const amount = fc.integer({ min: 0, max: 40 }).map((n) => n * 25 + (n % 3)); // some cents-free, some not divisible by 3
/** A subscription's MRR is above 0 (pause and cancel take it to 0). */
const positive = (n: number) => (n > 0 ? n : 7);
const back = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 200 }));
const cycle = fc.constantFrom<keyof typeof CYCLES>('monthly', 'quarterly', 'semi-annual', 'yearly');
const meta: fc.Arbitrary<Meta> = fc.record(
  { tier: fc.constantFrom('a', 'b'), region: fc.constantFrom('x', 'y'), extra: fc.constant({ tier: 'a' }) },
  { requiredKeys: ['tier'] },
);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('sub' as const), c: customer, variant: fc.nat(5), amount, back }) },
  // A change of plan alone (variant 1, an even amount: no mrr sent), often enough that a back-dated event lands before one.
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('sub' as const),
      c: customer,
      variant: fc.constant(1),
      amount: fc.integer({ min: 0, max: 20 }).map((n) => n * 50),
      back,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), c: customer }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('event' as const), c: customer, withSub: fc.boolean(), amount, back }) },
  // History recorded between a subscription's start and its latest change (where it reclassifies what follows).
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('event' as const),
      c: customer,
      withSub: fc.constant(true),
      amount: amount.map(positive),
      back,
      between: fc.constant(true),
    }),
  },
  // A paid recurring order, and renewals of it each `gap` days after the period before it ended (those already come).
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('order' as const),
      c: customer,
      cycle,
      usd: fc.boolean(),
      amount,
      back,
      renewals: fc.array(fc.integer({ min: 0, max: 45 }), { maxLength: 3 }),
    }),
  },
  // A renewal of the customer's latest paid order `gap` days after its period ended (within the 30-day grace or
  // past it), at the same amount or another, in the same currency or not: sent when that time has come.
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('renew' as const),
      c: customer,
      gap: fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 4, arbitrary: fc.integer({ min: 1, max: 45 }) }),
      amount,
      usd: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('refund' as const), c: customer }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('batch' as const),
      c: customer,
      items: fc.array(
        fc.record({ existing: fc.boolean(), status: fc.constantFrom('paid', 'cancelled', 'refunded', 'pending'), back, cycle, amount }),
        { minLength: 1, maxLength: 3 },
      ),
      repeat: fc.boolean(),
    }),
  },
  // Imported history: a subscription (cancelled `cancelAfter` days after its start when that has passed; a trial
  // `trial` hours long when not 0, ended or not), recorded events in bulk.
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('import' as const),
      c: customer,
      amount,
      back,
      cancelAfter: fc.integer({ min: 0, max: 120 }),
      usd: fc.boolean(),
      trial: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 60 * 24 })),
    }),
  },
  // A trial `hours` long started `back` days ago (ended already or not), cancelled `cancel` % of its length after its
  // start when not 0 (during it or after, now, back-dated or scheduled); while one runs, its end moved (or refused).
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('trial' as const),
      c: customer,
      variant: fc.nat(5),
      amount,
      back: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 })),
      hours: fc.integer({ min: 1, max: 45 * 24 }),
      cancel: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 150 })),
    }),
  },
  // A failed renewal (`back` days ago, delinquent at once when over 30), recovered `recover` % of the way from then to
  // now when not 0 (refused once delinquent); while past due, its recovery.
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('due' as const),
      c: customer,
      variant: fc.nat(5),
      back: fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 3, arbitrary: fc.integer({ min: 1, max: 45 }) }),
      recover: fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 3, arbitrary: fc.integer({ min: 1, max: 100 }) }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('events' as const),
      c: customer,
      items: fc.array(fc.record({ withSub: fc.boolean(), amount, back }), { minLength: 1, maxLength: 3 }),
    }),
  },
  // A cancellation scheduled `ahead` hours from now (the scheduler applies it once the clock passes it).
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('schedule' as const), c: customer, ahead: fc.integer({ min: 1, max: 40 * 24 }) }) },
  // The customer's metadata replaced (it moves between the metadata segments).
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('meta' as const), c: customer, meta }) },
);
/** A step: one op, or ops of distinct customers sent at once (concurrent writers). */
const step: fc.Arbitrary<Step> = fc.record({
  advance: fc.integer({ min: 1, max: 20 * 24 }).map((h) => h * HOUR),
  ops: fc.oneof(
    { weight: 4, arbitrary: op.map((o) => [o]) },
    { weight: 1, arbitrary: fc.uniqueArray(op, { minLength: 2, maxLength: 3, selector: (o) => o.c }) },
  ),
});

/** A range of days around the histories (START − 60 d … START + 700 d; at most 500 days long). */
const range = fc.tuple(fc.integer({ min: -60, max: 200 }), fc.integer({ min: 0, max: 500 }));
/**
 * The merchant's reporting time zone: where it starts, where it moves to, and before which step
 * (past the last: never). A DST zone, one a quarter-hour off, one ahead of UTC, one behind.
 */
const ZONES = ['UTC', 'Asia/Taipei', 'America/New_York', 'Asia/Kathmandu', 'Pacific/Pago_Pago'] as const;
const zones = fc.record({ first: fc.constantFrom(...ZONES), next: fc.constantFrom(...ZONES), at: fc.integer({ min: 0, max: 16 }) });

/**
 * USD's exchange rates: set before step `firstAt` for some months, then changed (`null` removes a
 * month) before step `secondAt` (past the last: after every step, before the reads). Months from
 * 2024-11 to 2026-10.
 */
const RATE_VALUES = ['30', '31.5', '29.875', '0.0333333333', '1'] as const;
const rateMonth = fc
  .integer({ min: 0, max: 23 })
  .map((i) => `${2024 + Math.floor((10 + i) / 12)}-${String(((10 + i) % 12) + 1).padStart(2, '0')}`);
const rating = fc.record({
  first: fc.array(fc.tuple(rateMonth, fc.constantFrom(...RATE_VALUES)), { maxLength: 14 }),
  firstAt: fc.integer({ min: 0, max: 16 }),
  second: fc.array(fc.tuple(rateMonth, fc.option(fc.constantFrom(...RATE_VALUES), { nil: null })), { maxLength: 8 }),
  secondAt: fc.integer({ min: 0, max: 16 }),
});

/** `changed`: when its latest change took effect (no change may be dated before it, nor before the start). */
type Sub = {
  id: number;
  plan: string;
  cycle: 'monthly' | 'yearly';
  status: 'trialing' | 'active' | 'past_due' | 'paused' | 'cancelled';
  mrr: string;
  started_at: string;
  changed: string;
  deleted: boolean;
  /** Absent: the reporting currency (only imports name another). */
  currency?: string;
  cancel_at?: string | null;
  /** The reason a scheduled cancellation was given. */
  cancel_reason?: string | null;
  /** Its trial's end (kept once it has converted or been cancelled: recorded history before it is refused). */
  trial_ends_at?: string | null;
  /** While past due: when the renewal failed (cancelled as delinquent `DELINQUENCY` later). */
  failed_at?: string | null;
};
type Order = {
  no: string;
  amount: string;
  currency: string;
  cycle: keyof typeof CYCLES;
  status: string;
  paid_at: string | null;
  refunded_at: string | null;
  line: RefPoint[];
};

const addMonths = (t: string, months: number) => {
  const d = new Date(t);
  const target = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()));
  const last = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(d.getUTCDate(), last));
  return iso(target.getTime());
};

/** What a subscription's points count under in segments (and a cancellation's reason). */
const tagsOf = (s: Sub, reason?: string | null) => ({
  plan: s.plan,
  cycle: s.cycle,
  currency: s.currency ?? 'TWD',
  ...(reason ? { reason } : {}),
});
/**
 * The record shows the present: a recorded event that is (or, arriving late, becomes) its
 * subscription's latest change and leaves it an amount sets its mrr, as of its time; an older one
 * or one to 0 leaves the record as it is.
 */
const recordShows = (s: Sub, occurred: string, amount: number) => {
  if (occurred < s.changed || amount <= 0) return;
  s.mrr = String(amount);
  s.changed = occurred;
};
const REASONS = [null, 'price', 'product'] as const;
/** The merchant's delinquency_days (the default): a past-due subscription is cancelled this long after failed_at. */
const DELINQUENCY = 30 * DAY;
type ScheduledKind = 'convert' | 'cancel' | 'delinquent';
/** At one instant a cancellation comes first, then a delinquent one, then a trial's conversion. */
const KIND_ORDER: Record<ScheduledKind, number> = { cancel: 0, delinquent: 1, convert: 2 };
/** A subscription's scheduled changes not applied yet, earliest first (`armed`: the time the scheduler is called with). */
const scheduledOf = (s: Sub) => {
  if (s.deleted || s.status === 'cancelled') return [];
  const out: { kind: ScheduledKind; at: string; armed: string }[] = [];
  if (s.status === 'trialing') out.push({ kind: 'convert', at: s.trial_ends_at!, armed: s.trial_ends_at! });
  if (s.status === 'past_due') out.push({ kind: 'delinquent', at: iso(Date.parse(s.failed_at!) + DELINQUENCY), armed: s.failed_at! });
  if (s.cancel_at) out.push({ kind: 'cancel', at: s.cancel_at, armed: s.cancel_at });
  return out.sort((a, b) => a.at.localeCompare(b.at) || KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);
};
/** The segments checked against the reference after each history. */
const SEGMENTS: [query: string, seg: RefSegment][] = [
  ['plan=P', { plan: 'P' }],
  ['plan=Q', { plan: 'Q' }],
  ['billing_cycle=monthly', { cycle: 'monthly' }],
  ['billing_cycle=yearly', { cycle: 'yearly' }],
  ['currency=USD', { currency: 'USD' }],
  // The reporting currency's own lines: stored as their difference from the whole.
  ['currency=TWD', { currency: 'TWD' }],
];
/** Segments read from the matching customers' timelines: the customers whose metadata has every pair, their lines of the plans given. */
const CUSTOMER_SEGMENTS: [query: string, seg: RefSegment, pairs: [keyof Meta, string][]][] = [
  ['metadata.tier=a', {}, [['tier', 'a']]],
  [
    'metadata.tier=a&metadata.region=x',
    {},
    [
      ['tier', 'a'],
      ['region', 'x'],
    ],
  ],
  ['plan=P&plan=Q', { plans: ['P', 'Q'] }, []],
  ['metadata.tier=a&currency=TWD', { currency: 'TWD' }, [['tier', 'a']]],
];

/** GET /metrics/trials and /metrics/recovery, and their references. */
const TRIAL_READS = [
  ['trials', expectedTrials],
  ['recovery', expectedRecovery],
] as const;

describe('metrics equal a from-scratch recomputation (property)', () => {
  it(`random histories (${RUNS} runs)`, { timeout: BUDGET_MS + 60_000 }, async () => {
    await assertWithinBudget(
      fc.asyncProperty(
        fc.array(step, { minLength: 4, maxLength: 14 }),
        range,
        fc.array(meta, { minLength: CUSTOMERS, maxLength: CUSTOMERS }),
        zones,
        rating,
        async (steps, [offset, length], metas, zoning, fx) => {
          let now = START;
          const clock = fixedClock(iso(now));
          const { token, merchantId } = await newMerchant();
          const admin = await backofficeJwt(merchantId, 'admin');
          let zone = 'UTC';
          const setZone = async (next: string) => {
            if (next === zone) return;
            const r = await api.request('PUT', '/settings', { headers: { authorization: `Bearer ${admin}` }, body: { timezone: next } });
            expect(r.status, JSON.stringify(r.body)).toBe(200);
            zone = next;
          };
          await setZone(zoning.first);
          const usdRates = new Map<string, string>();
          const setRates = async (change: [string, string | null][]) => {
            const byMonth = new Map(change);
            if (!byMonth.size) return;
            const rates = [...byMonth].map(([month, rate]) => ({ month, rate }));
            const r = await api.request('PUT', '/exchange-rates/USD', { token, body: { rates } });
            expect(r.status, JSON.stringify(r.body)).toBe(200);
            for (const [month, rate] of byMonth) {
              if (rate === null) usdRates.delete(month);
              else usdRates.set(month, rate);
            }
            expect(r.body.data.rates).toEqual([...usdRates].sort(([a], [b]) => (a < b ? -1 : 1)).map(([month, rate]) => ({ month, rate })));
          };
          const emails = Array.from({ length: CUSTOMERS }, (_, i) => `p${i}@prop.test`);
          const created = await api.post('/customers/batch', token, {
            customers: emails.map((email, i) => ({ email, name: email, metadata: metas[i] })),
          });
          const ids: number[] = created.body.data.results.created.map((r: { id: number }) => r.id);
          const ref: RefCustomer[] = ids.map(() => ({ lines: new Map() }));
          const subs: Sub[][] = ids.map(() => []);
          const orders: Order[][] = ids.map(() => []);
          let orderSeq = 0;
          let importSeq = 0;
          const max = (a: string, b: string) => (a > b ? a : b);
          /**
           * The scheduler's run at the current time: the check a subscription's earliest due change was
           * armed for applies every change due by now, in order (the reference: a trial's conversion is its
           * mrr from trial_ends_at; a scheduled cancellation 0 from cancel_at, a trial's ending it
           * unconverted; a delinquent one 0 from DELINQUENCY after failed_at). A check for a change applied
           * with it finds nothing left to apply.
           */
          const settle = (c: number, s: Sub) => {
            const applied: { kind: ScheduledKind; armed: string }[] = [];
            for (let [due] = scheduledOf(s); due && due.at <= iso(now); [due] = scheduledOf(s)) {
              const line = `S${s.id}`;
              const reason = due.kind === 'cancel' ? s.cancel_reason : 'delinquent';
              if (due.kind === 'convert') refSetFrom(ref[c], line, due.at, s.mrr, 'a', tagsOf(s));
              else if (s.status === 'trialing') refEndTrial(ref[c], line, due.at, tagsOf(s, reason));
              else refSetFrom(ref[c], line, due.at, 0, 'c', tagsOf(s, reason));
              s.status = due.kind === 'convert' ? 'active' : 'cancelled';
              s.changed = due.at;
              if (due.kind !== 'convert') [s.cancel_at, s.failed_at] = [null, null];
              applied.push(due);
            }
            return applied;
          };
          const runScheduler = async () => {
            for (const [c, list] of subs.entries()) {
              for (const s of list) {
                const applied = settle(c, s);
                for (const [i, { kind, armed }] of applied.slice(0, 2).entries()) {
                  const check = {
                    merchant_id: merchantId,
                    subscription_id: s.id,
                    cancel_at: armed,
                    ...(kind === 'cancel' ? {} : { kind }),
                  };
                  expect(await checkScheduledCancel(check), `${kind} ${armed} of ${s.id}`).toEqual({ due: true, applied: i === 0 });
                }
              }
            }
            // Renewal graces that ran out by now: each customer with orders is settled (the check armed for its grace's end).
            for (const [c, list] of orders.entries()) {
              if (!list.length) continue;
              const checked = await checkScheduledCancel({
                merchant_id: merchantId,
                customer_id: ids[c],
                cancel_at: iso(START),
                kind: 'renewal',
              });
              const open = refRenewals([ref[c]], 30, iso(now))[0];
              // A grace still running is waited for (to a second after its end); none: done.
              const running = [...open.lines.values()].flatMap((pts) => (pts.at(-1)?.flag === 'g' ? [pts.at(-1)!.at] : []));
              expect(checked.due, `renewal check of customer ${c}`).toBe(running.length === 0);
            }
          };

          /** The imported line (in the reporting currency) ends where the customer's first subscription in it starts. */
          const importedLineEnd = (c: RefCustomer) =>
            refImportedEnd({ lines: new Map([...c.lines].filter(([, pts]) => pts.every((p) => (p.currency ?? 'TWD') === 'TWD'))) });
          const ok = (r: { status: number; body: unknown }, what: string) =>
            expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBeLessThan(300);

          /**
           * An order's line after a write (docs/metrics.md's rules, as the reference reads them): only a
           * paid order counts, over its cycle, in its currency; any other never counted.
           */
          const relineOrder = (c: number, o: Order) => {
            const months = CYCLES[o.cycle];
            if (o.paid_at && o.status === 'paid') {
              const share = new Decimal(o.amount).div(months).toDecimalPlaces(10, Decimal.ROUND_HALF_UP);
              const tags = { plan: null, cycle: o.cycle, currency: o.currency };
              o.line = [
                { at: o.paid_at, amount: share, flag: 'o', ...tags },
                { at: addMonths(o.paid_at, months), amount: new Decimal(0), flag: 'o', ...tags },
              ];
            } else {
              o.line = [];
            }
            if (o.line.length) ref[c].lines.set(`O${o.no}`, o.line);
            else ref[c].lines.delete(`O${o.no}`);
          };

          /** A paid recurring order sent through the API, and its line in the reference. */
          const placeOrder = async (
            c: number,
            amount: string,
            currency: string,
            cycle: keyof typeof CYCLES,
            paidAt: string,
            what: string,
          ) => {
            const order: Order = {
              no: `O${++orderSeq}`,
              amount,
              currency,
              cycle,
              status: 'paid',
              paid_at: paidAt,
              refunded_at: null,
              line: [],
            };
            const body = {
              order_no: order.no,
              amount,
              customer_email: emails[c],
              status: 'paid',
              billing_cycle: cycle,
              currency,
              paid_at: paidAt,
            };
            ok(await api.post('/orders', token, body), what);
            orders[c].push(order);
            relineOrder(c, order);
            return order;
          };

          const run = async (o: Op) => {
            const c = o.c;
            const at = iso(now);
            const live = subs[c].find((s) => !s.deleted && s.status !== 'cancelled');
            switch (o.kind) {
              case 'sub': {
                /**
                 * A change through the API, back-dated by `back` days when that is not 0 (refused with a
                 * 422 naming the floor when before the start or the latest change), else dated now (the
                 * start, when still ahead). Returns its effective time, or null when refused.
                 */
                const change = async (s: Sub, path: string, field: string, body: Record<string, unknown>, what: string) => {
                  const given = o.back > 0 ? iso(now - o.back * DAY) : null;
                  const floor = max(s.started_at, s.changed);
                  const r = await api.put(`/subscriptions/${s.id}${path}`, token, given ? { ...body, [field]: given } : body);
                  if (given && given < floor) {
                    expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(422);
                    expect(r.body.errors[field][0]).toContain(floor);
                    return null;
                  }
                  ok(r, what);
                  return given ?? max(at, s.started_at);
                };
                if (!live) {
                  const dormant = subs[c].filter((s) => !s.deleted && s.status === 'cancelled').at(-1);
                  if (dormant && o.variant % 2 === 0) {
                    const effective = await change(dormant, '/reactivate', 'reactivated_at', {}, 'reactivate');
                    if (!effective) return;
                    dormant.status = 'active';
                    dormant.changed = effective;
                    refSetFrom(ref[c], `S${dormant.id}`, effective, dormant.mrr, 'a', tagsOf(dormant));
                    return;
                  }
                  const started = iso(now - o.back * DAY);
                  const mrr = positive(o.amount);
                  const plan = o.variant % 2 ? 'Q' : 'P';
                  const billing = o.amount % 2 ? 'yearly' : 'monthly';
                  const r = await api.post('/subscriptions', token, {
                    customer_id: ids[c],
                    plan_name: plan,
                    mrr: String(mrr),
                    billing_cycle: billing,
                    started_at: started,
                  });
                  ok(r, 'create');
                  subs[c].push({
                    id: r.body.data.id,
                    plan,
                    cycle: billing,
                    status: 'active',
                    mrr: String(mrr),
                    started_at: started,
                    changed: started,
                    deleted: false,
                  });
                  refSetFrom(ref[c], `S${r.body.data.id}`, started, mrr, 'a', tagsOf(subs[c].at(-1)!));
                  return;
                }
                const line = `S${live.id}`;
                if ((o.variant === 2 || o.variant === 3) && (live.status === 'trialing' || live.status === 'past_due')) {
                  // A trial becomes active when it ends, a failed renewal when recovered: neither pauses nor reactivates.
                  const r = await api.put(`/subscriptions/${live.id}/${o.variant === 2 ? 'pause' : 'reactivate'}`, token, {});
                  expect(r.status, JSON.stringify(r.body)).toBe(422);
                  return;
                }
                if (o.variant <= 1) {
                  // Variant 1 also moves the subscription to the other plan (the plan segments follow it),
                  // every other time with no mrr at all: a plan change alone keeps the line's amount.
                  const planOnly = o.variant === 1 && o.amount % 2 === 0;
                  const mrr = planOnly ? live.mrr : positive(o.amount);
                  const plan = o.variant === 1 ? (live.plan === 'P' ? 'Q' : 'P') : live.plan;
                  const body = { ...(planOnly ? {} : { mrr: String(mrr) }), ...(plan !== live.plan ? { plan_name: plan } : {}) };
                  const effective = await change(live, '', 'effective_at', body, 'update');
                  if (!effective) return;
                  const same = new Decimal(live.mrr).eq(mrr);
                  const moved = !same || plan !== live.plan;
                  if (moved) live.changed = effective;
                  live.mrr = String(mrr);
                  live.plan = plan;
                  if (moved && live.status === 'active') refSetFrom(ref[c], line, effective, mrr, 'a', tagsOf(live), same);
                  if (moved && live.status === 'past_due') refSetFrom(ref[c], line, effective, mrr, 'd', tagsOf(live), same);
                  if (moved && live.status === 'paused') refSetFrom(ref[c], line, effective, 0, 'p', tagsOf(live));
                  // A trial counts nothing yet: its start follows the plan (the trials' segments), its mrr counts once converted.
                  if (moved && live.status === 'trialing') refSetFrom(ref[c], line, live.started_at, 0, 't', tagsOf(live));
                } else if (o.variant === 2 && live.status === 'active') {
                  const effective = await change(live, '/pause', 'paused_at', {}, 'pause');
                  if (!effective) return;
                  live.status = 'paused';
                  live.changed = effective;
                  refSetFrom(ref[c], line, effective, 0, 'p', tagsOf(live));
                } else if (o.variant === 3 && live.status === 'paused') {
                  const effective = await change(live, '/reactivate', 'reactivated_at', {}, 'resume');
                  if (!effective) return;
                  live.status = 'active';
                  live.changed = effective;
                  live.cancel_at = null;
                  refSetFrom(ref[c], line, effective, live.mrr, 'a', tagsOf(live));
                } else {
                  // Cancellations are always dated (back 0: now).
                  const cancelledAt = iso(now - o.back * DAY);
                  const floor = max(live.started_at, live.changed);
                  const reason = REASONS[o.amount % REASONS.length];
                  const r = await api.put(`/subscriptions/${live.id}/cancel`, token, {
                    cancelled_at: cancelledAt,
                    ...(reason ? { reason } : {}),
                  });
                  if (cancelledAt < floor) {
                    // Never dated before the start or the latest change: refused, nothing moves.
                    expect(r.status, JSON.stringify(r.body)).toBe(422);
                    expect(r.body.errors.cancelled_at[0]).toContain(floor);
                    return;
                  }
                  ok(r, 'cancel');
                  // A trial cancelled ends unconverted (no churn); its start stays, even at the same instant.
                  if (live.status === 'trialing') refEndTrial(ref[c], line, cancelledAt, tagsOf(live, reason));
                  else refSetFrom(ref[c], line, cancelledAt, 0, 'c', tagsOf(live, reason));
                  live.status = 'cancelled';
                  live.changed = cancelledAt;
                  live.cancel_at = null;
                  live.failed_at = null;
                }
                return;
              }
              case 'delete': {
                const s = subs[c].filter((x) => !x.deleted).at(-1);
                if (!s) return;
                ok(await api.del(`/subscriptions/${s.id}`, token), 'delete');
                s.deleted = true;
                // A deletion corrects a mistake: every figure as if the subscription had never been.
                ref[c].lines.delete(`S${s.id}`);
                return;
              }
              case 'event': {
                const s = o.withSub ? subs[c].filter((x) => !x.deleted).at(-1) : undefined;
                // `between`: halfway from its start to its latest change (when it has one), to the second.
                const mid = s && o.between && s.changed > s.started_at ? (Date.parse(s.started_at) + Date.parse(s.changed)) / 2 : null;
                const occurred = mid === null ? iso(now - o.back * DAY) : iso(Math.floor(mid / 1000) * 1000);
                if (s?.trial_ends_at && occurred < s.trial_ends_at) {
                  // A trial counts nothing until it ends: no history recorded before then.
                  const r = await api.post('/subscriptions/events', token, {
                    customer_id: ids[c],
                    subscription_id: s.id,
                    event_type: o.amount > 0 ? 'upgrade' : 'cancel',
                    old_amount: o.amount > 0 ? '0' : '1',
                    new_amount: String(o.amount),
                    occurred_at: occurred,
                  });
                  expect(r.status, JSON.stringify(r.body)).toBe(422);
                  expect(r.body.errors.occurred_at[0]).toContain(s.trial_ends_at);
                  return;
                }
                const importedEnd = importedLineEnd(ref[c]);
                if (!s && importedEnd !== null && occurred >= importedEnd) {
                  // Imported history ends where the first subscription starts: later events name theirs.
                  const r = await api.post('/subscriptions/events', token, {
                    customer_id: ids[c],
                    event_type: o.amount > 0 ? 'upgrade' : 'cancel',
                    old_amount: o.amount > 0 ? '0' : '1',
                    new_amount: String(o.amount),
                    occurred_at: occurred,
                  });
                  expect(r.status, JSON.stringify(r.body)).toBe(422);
                  expect(Object.keys(r.body.errors)).toEqual(['subscription_id']);
                  return;
                }
                ok(
                  await api.post('/subscriptions/events', token, {
                    customer_id: ids[c],
                    subscription_id: s?.id,
                    // Only new_amount moves a line; old_amount just agrees with the type.
                    event_type: o.amount > 0 ? 'upgrade' : 'cancel',
                    old_amount: o.amount > 0 ? '0' : '1',
                    new_amount: String(o.amount),
                    occurred_at: occurred,
                  }),
                  'event',
                );
                refSetAt(
                  ref[c],
                  s ? `S${s.id}` : 'I',
                  occurred,
                  o.amount,
                  o.amount > 0 ? 'a' : 'c',
                  s ? tagsOf(s) : { plan: null, cycle: null },
                );
                if (s) recordShows(s, occurred, o.amount);
                return;
              }
              case 'order': {
                let last = await placeOrder(c, String(o.amount), o.usd ? 'USD' : 'TWD', o.cycle, iso(now - o.back * DAY), 'order');
                // Its renewals, in order, each once its time has come.
                for (const gap of o.renewals) {
                  const renewedAt = iso(Date.parse(addMonths(last.paid_at!, CYCLES[last.cycle])) + gap * DAY);
                  if (renewedAt > at) break;
                  last = await placeOrder(c, last.amount, last.currency, last.cycle, renewedAt, 'renewal');
                }
                return;
              }
              case 'renew': {
                const latest = orders[c]
                  .filter((x) => x.status === 'paid' && x.paid_at)
                  .sort((a, b) => (a.paid_at! < b.paid_at! ? -1 : 1))
                  .at(-1);
                if (!latest) return;
                const paidAt = iso(Date.parse(addMonths(latest.paid_at!, CYCLES[latest.cycle])) + o.gap * DAY);
                if (paidAt <= at) await placeOrder(c, String(o.amount), o.usd ? 'USD' : latest.currency, latest.cycle, paidAt, 'renewal');
                return;
              }
              case 'refund': {
                const order = orders[c].find((x) => x.status === 'paid');
                if (!order) return;
                ok(await api.patch(`/orders/${order.no}`, token, { status: 'refunded' }), 'refund');
                order.status = 'refunded';
                order.refunded_at ??= at;
                relineOrder(c, order);
                return;
              }
              case 'batch': {
                const items: Record<string, unknown>[] = [];
                const touched: Order[] = [];
                for (const it of o.items) {
                  const target = it.existing ? orders[c].at(-1 - (items.length % Math.max(1, orders[c].length))) : undefined;
                  if (target && touched.includes(target)) continue;
                  const order: Order = target ?? {
                    no: `O${++orderSeq}`,
                    amount: String(it.amount),
                    currency: 'TWD',
                    cycle: it.cycle,
                    status: 'pending',
                    paid_at: null,
                    refunded_at: null,
                    line: [],
                  };
                  const paidAt = it.back ? iso(now - it.back * DAY) : undefined;
                  const item: Record<string, unknown> = { order_no: order.no, status: it.status, ...(paidAt ? { paid_at: paidAt } : {}) };
                  if (!target) Object.assign(item, { amount: order.amount, customer_email: emails[c], billing_cycle: order.cycle });
                  items.push(item);
                  if (!target) orders[c].push(order);
                  touched.push(order);
                  order.status = it.status;
                  if (paidAt) order.paid_at = paidAt;
                  if (it.status === 'paid') order.paid_at ??= at;
                  if (it.status === 'refunded') order.refunded_at ??= at;
                }
                // A repeated order_no in one batch updates the earlier item: one change (its final state).
                if (o.repeat && touched.length) {
                  const last = touched.at(-1)!;
                  items.push({ order_no: last.no, status: 'cancelled' });
                  last.status = 'cancelled';
                }
                const r = await api.post('/orders/batch', token, { orders: items });
                ok(r, 'batch');
                expect(r.body.data.failed, JSON.stringify(r.body.data.results.failed)).toBe(0);
                for (const order of touched) relineOrder(c, order);
                return;
              }
              case 'import': {
                const started = iso(now - o.back * DAY);
                const cancelled =
                  o.cancelAfter && Date.parse(started) + o.cancelAfter * DAY <= now ? iso(Date.parse(started) + o.cancelAfter * DAY) : null;
                const mrr = positive(o.amount);
                const trialEnd = o.trial ? iso(Date.parse(started) + o.trial * HOUR) : null;
                const item = {
                  external_id: `imp-${++importSeq}`,
                  customer_id: ids[c],
                  plan_name: 'P',
                  mrr: String(mrr),
                  billing_cycle: 'monthly',
                  started_at: started,
                  ...(o.usd ? { currency: 'USD' } : {}),
                  ...(cancelled ? { cancelled_at: cancelled, cancel_reason: 'imported' } : {}),
                  ...(trialEnd ? { trial_ends_at: trialEnd } : {}),
                };
                const r = await api.post('/subscriptions/batch', token, { subscriptions: [item] });
                ok(r, 'import');
                if (!cancelled && live) {
                  expect(
                    r.body.data.results.failed.map((f: { message: string }) => f.message),
                    'a second live subscription',
                  ).toEqual(['The customer already has an active or paused subscription.']);
                  return;
                }
                expect(r.body.data.created, JSON.stringify(r.body.data)).toBe(1);
                const id = r.body.data.results.created[0].id as number;
                // Its history as imported: a trial converts at its end once that has come (unless cancelled by then).
                const converted = trialEnd !== null && trialEnd <= at && (!cancelled || trialEnd < cancelled);
                const sub: Sub = {
                  id,
                  plan: 'P',
                  cycle: 'monthly',
                  status: cancelled ? 'cancelled' : trialEnd && !converted ? 'trialing' : 'active',
                  mrr: String(mrr),
                  started_at: started,
                  changed: cancelled ?? (converted ? trialEnd : started),
                  deleted: false,
                  ...(o.usd ? { currency: 'USD' } : {}),
                  trial_ends_at: trialEnd,
                };
                subs[c].push(sub);
                refSetFrom(ref[c], `S${id}`, started, trialEnd ? 0 : mrr, trialEnd ? 't' : 'a', tagsOf(sub));
                if (converted) refSetFrom(ref[c], `S${id}`, trialEnd, mrr, 'a', tagsOf(sub));
                if (cancelled && trialEnd && !converted) refEndTrial(ref[c], `S${id}`, cancelled, tagsOf(sub, 'imported'));
                else if (cancelled) refSetFrom(ref[c], `S${id}`, cancelled, 0, 'c', tagsOf(sub, 'imported'));
                return;
              }
              case 'events': {
                // In array order: each item sees the history the ones before it left (the imported line's end moves with it).
                const items = o.items.map((it) => {
                  const s = it.withSub ? subs[c].filter((x) => !x.deleted).at(-1) : undefined;
                  return { s, occurred: iso(now - it.back * DAY), amount: it.amount };
                });
                const r = await api.post('/subscriptions/events/batch', token, {
                  events: items.map(({ s, occurred, amount }) => ({
                    customer_id: ids[c],
                    subscription_id: s?.id,
                    event_type: amount > 0 ? 'upgrade' : 'cancel',
                    old_amount: amount > 0 ? '0' : '1',
                    new_amount: String(amount),
                    occurred_at: occurred,
                  })),
                });
                ok(r, 'events');
                const failed = new Set(r.body.data.results.failed.map((f: { index: number }) => f.index));
                for (const [index, { s, occurred, amount }] of items.entries()) {
                  const importedEnd = importedLineEnd(ref[c]);
                  const refused =
                    (!s && importedEnd !== null && occurred >= importedEnd) || Boolean(s?.trial_ends_at && occurred < s.trial_ends_at);
                  expect(failed.has(index), `events item ${index} refused: ${JSON.stringify(r.body.data.results.failed)}`).toBe(refused);
                  if (!refused) {
                    refSetAt(
                      ref[c],
                      s ? `S${s.id}` : 'I',
                      occurred,
                      amount,
                      amount > 0 ? 'a' : 'c',
                      s ? tagsOf(s) : { plan: null, cycle: null },
                    );
                    if (s) recordShows(s, occurred, amount);
                  }
                }
                return;
              }
              case 'trial': {
                if (live) {
                  // While trialing its end moves (to a future time only); any other subscription has no trial to move.
                  const trialing = live.status === 'trialing';
                  const past = o.variant % 3 === 0;
                  const end = iso(past ? now - o.hours * HOUR : now + o.hours * HOUR);
                  const r = await api.put(`/subscriptions/${live.id}`, token, { trial_ends_at: end });
                  if (!trialing || past) {
                    expect(r.status, JSON.stringify(r.body)).toBe(422);
                    expect(Object.keys(r.body.errors)).toEqual(['trial_ends_at']);
                    return;
                  }
                  ok(r, 'trial end');
                  expect(r.body.data).toMatchObject({ status: 'trialing', trial_ends_at: end });
                  live.trial_ends_at = end;
                  live.changed = max(at, live.started_at);
                  return;
                }
                // A trial: back-dated or now (started_at left out), ended already (created converted) or not.
                const started = iso(now - o.back * DAY);
                const end = iso(Date.parse(started) + o.hours * HOUR);
                const mrr = positive(o.amount);
                const plan = o.variant % 2 ? 'Q' : 'P';
                const billing = o.amount % 2 ? 'yearly' : 'monthly';
                const r = await api.post('/subscriptions', token, {
                  customer_id: ids[c],
                  plan_name: plan,
                  mrr: String(mrr),
                  billing_cycle: billing,
                  ...(o.back ? { started_at: started } : {}),
                  trial_ends_at: end,
                });
                ok(r, 'trial');
                const converted = end <= at;
                expect(r.body.data).toMatchObject({ status: converted ? 'active' : 'trialing', trial_ends_at: end, started_at: started });
                const sub: Sub = {
                  id: r.body.data.id,
                  plan,
                  cycle: billing,
                  status: converted ? 'active' : 'trialing',
                  mrr: String(mrr),
                  started_at: started,
                  changed: converted ? end : started,
                  deleted: false,
                  trial_ends_at: end,
                };
                subs[c].push(sub);
                refSetFrom(ref[c], `S${sub.id}`, started, 0, 't', tagsOf(sub));
                if (converted) refSetFrom(ref[c], `S${sub.id}`, end, mrr, 'a', tagsOf(sub));
                if (!o.cancel) return;
                // Cancelled `cancel` % of its length after its start: a future time schedules it (the scheduler applies it).
                const cancelledAt = iso(Date.parse(started) + Math.ceil((o.hours * o.cancel) / 100) * HOUR);
                const reason = REASONS[o.variant % REASONS.length];
                const cancelled = await api.put(`/subscriptions/${sub.id}/cancel`, token, {
                  cancelled_at: cancelledAt,
                  ...(reason ? { reason } : {}),
                });
                if (cancelledAt < sub.changed) {
                  expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(422);
                  expect(cancelled.body.errors.cancelled_at[0]).toContain(sub.changed);
                  return;
                }
                ok(cancelled, 'trial cancel');
                if (cancelledAt > at) {
                  expect(cancelled.body.data).toMatchObject({ status: sub.status, cancel_at: cancelledAt });
                  [sub.cancel_at, sub.cancel_reason] = [cancelledAt, reason];
                  return;
                }
                // During the trial it ends unconverted (no churn); once converted, a cancellation as any other.
                expect(cancelled.body.data).toMatchObject({ status: 'cancelled', cancelled_at: cancelledAt });
                if (sub.status === 'trialing') refEndTrial(ref[c], `S${sub.id}`, cancelledAt, tagsOf(sub, reason));
                else refSetFrom(ref[c], `S${sub.id}`, cancelledAt, 0, 'c', tagsOf(sub, reason));
                sub.status = 'cancelled';
                sub.changed = cancelledAt;
                return;
              }
              case 'due': {
                let sub = live;
                if (!sub) {
                  // None yet: one started `back` + 20 days ago, whose renewal then fails.
                  const started = iso(now - (o.back + 20) * DAY);
                  const [plan, cycle] = [o.variant % 2 ? 'Q' : 'P', o.variant % 3 ? 'monthly' : 'yearly'] as const;
                  const mrr = 40 * (o.variant + 1) + o.variant;
                  const r = await api.post('/subscriptions', token, {
                    customer_id: ids[c],
                    plan_name: plan,
                    mrr: String(mrr),
                    billing_cycle: cycle,
                    started_at: started,
                  });
                  ok(r, 'create');
                  sub = {
                    id: r.body.data.id,
                    plan,
                    cycle,
                    status: 'active',
                    mrr: String(mrr),
                    started_at: started,
                    changed: started,
                    deleted: false,
                  };
                  subs[c].push(sub);
                  refSetFrom(ref[c], `S${sub.id}`, started, mrr, 'a', tagsOf(sub));
                }
                // An active subscription's renewal fails (`back` days ago, or now); a past-due one is recovered.
                const path = sub.status === 'past_due' ? 'recover' : 'past-due';
                const field = sub.status === 'past_due' ? 'recovered_at' : 'failed_at';
                if (sub.status !== 'active' && sub.status !== 'past_due') {
                  // Neither a trial nor a paused subscription can fail a renewal; only a past-due one recovers.
                  const r = await api.put(`/subscriptions/${sub.id}/${o.variant % 2 ? 'recover' : 'past-due'}`, token, {});
                  expect(r.status, JSON.stringify(r.body)).toBe(422);
                  expect(Object.keys(r.body.errors)).toEqual(['status']);
                  return;
                }
                const given = o.back > 0 ? iso(now - o.back * DAY) : null;
                const floor = max(sub.started_at, sub.changed);
                const r = await api.put(`/subscriptions/${sub.id}/${path}`, token, given ? { [field]: given } : {});
                if (given && given < floor) {
                  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(422);
                  expect(r.body.errors[field][0]).toContain(floor);
                  return;
                }
                ok(r, path);
                const effective = given ?? at;
                expect(r.body.data).toMatchObject({
                  status: path === 'recover' ? 'active' : 'past_due',
                  failed_at: path === 'recover' ? null : effective,
                });
                sub.status = path === 'recover' ? 'active' : 'past_due';
                sub.failed_at = path === 'recover' ? null : effective;
                sub.changed = effective;
                // Past due, its MRR still counts (flag `d`); recovered, it is active again.
                refSetFrom(ref[c], `S${sub.id}`, effective, sub.mrr, path === 'recover' ? 'a' : 'd', tagsOf(sub));
                if (path === 'recover' || !o.recover) return;
                // Recovered `recover` % of the way from the failure to now (to the second): once delinquent by now, the change
                // applies that first and is refused.
                const recoveredAt = iso(Date.parse(effective) + Math.floor(((now - Date.parse(effective)) * o.recover) / 100_000) * 1000);
                const recovered = await api.put(`/subscriptions/${sub.id}/recover`, token, { recovered_at: recoveredAt });
                if (settle(c, sub).length) {
                  expect(recovered.status, JSON.stringify(recovered.body)).toBe(422);
                  expect(Object.keys(recovered.body.errors)).toEqual(['status']);
                  return;
                }
                ok(recovered, 'recover');
                sub.status = 'active';
                sub.failed_at = null;
                sub.changed = recoveredAt;
                refSetFrom(ref[c], `S${sub.id}`, recoveredAt, sub.mrr, 'a', tagsOf(sub));
                return;
              }
              case 'schedule': {
                if (!live) return;
                const cancelAt = iso(now + o.ahead * HOUR);
                const r = await api.put(`/subscriptions/${live.id}/cancel`, token, { cancelled_at: cancelAt, reason: 'scheduled' });
                ok(r, 'schedule');
                expect(r.body.data).toMatchObject({ status: live.status, cancel_at: cancelAt, cancelled_at: null });
                live.cancel_at = cancelAt; // counted until then: nothing moves yet
                live.cancel_reason = 'scheduled';
                return;
              }
              case 'meta': {
                ok(await api.put(`/customers/${ids[c]}`, token, { metadata: o.meta }), 'metadata');
                metas[c] = o.meta;
                return;
              }
            }
          };

          for (const [i, s] of steps.entries()) {
            // The zone changes between writes: what came before moves to the new zone's days.
            if (i === zoning.at) await setZone(zoning.next);
            // A rate change between writes: what came before is counted at the new rates.
            if (i === fx.firstAt) await setRates(fx.first);
            if (i === fx.secondAt) await setRates(fx.second);
            now += s.advance;
            clock.set(iso(now));
            await runScheduler();
            await Promise.all(s.ops.map(run));
          }
          // What fell due with the last step (a renewal failed over 30 days back) is applied before the reads.
          await runScheduler();
          // A rate change past the last step: only the pass it runs moves what was written before it.
          if (fx.firstAt >= steps.length) await setRates(fx.first);
          if (fx.secondAt >= steps.length) await setRates(fx.second);

          const today = refLocalDate(iso(now), zone);
          // The whole: the reporting currency's lines and USD's converted (left out of months without a rate).
          const rates: RefRates = { rates: new Map([['USD', usdRates]]), zone };
          // Order renewals as they stand now (every grace that ran out settled by the scheduler's run).
          const settledRef = refRenewals(ref, 30, iso(now));
          const whole = refSegment(settledRef, {}, 'TWD', rates);
          // Whole months, and a random range: its partial first and last months are read from day items.
          const day = (days: number) => iso(START + days * 24 * HOUR).slice(0, 10);
          for (const [from, asked] of [
            ['2024-07-01', '2026-06-30'],
            [day(offset), day(offset + length)],
          ]) {
            // No projections: a range ends today at the latest.
            const to = asked > today ? today : asked;
            if (from > to) continue;
            for (const interval of ['day', 'week', 'month', 'quarter', 'year'] as const) {
              const r = await api.get(`/metrics/mrr?start_date=${from}&end_date=${to}&interval=${interval}`, token);
              expect(r.status, JSON.stringify(r.body)).toBe(200);
              const expected = expectedSeries(whole, from, to, interval, zone);
              expect(r.body.data, `${interval} ${from}..${to}`).toEqual(expected.data);
              expect(r.body.summary, `${interval} ${from}..${to}`).toEqual(expected.summary);
            }
          }
          const summary = await api.get('/metrics/summary', token);
          expect(summary.body.data).toEqual(expectedSummary(whole, today, zone));
          const cohorts = await api.get('/metrics/cohorts?start_month=2024-07&end_month=2026-06', token);
          expect(cohorts.status, JSON.stringify(cohorts.body)).toBe(200);
          expect(cohorts.body.data).toEqual(expectedCohorts(whole, '2024-07', '2026-06', today.slice(0, 7), zone));
          // Segments: the same computation over only the matching lines; churn by cancellation reason.
          const [from, asked] = [day(offset), day(offset + length)];
          const to = asked > today ? today : asked;
          // Metadata and plan-union segments: the reference over only the matching customers' lines.
          const parts: [string, RefCustomer[]][] = [
            ...SEGMENTS.map(([query, seg]): [string, RefCustomer[]] => [query, refSegment(settledRef, seg, 'TWD', rates)]),
            ...CUSTOMER_SEGMENTS.map(([query, seg, pairs]): [string, RefCustomer[]] => [
              query,
              refSegment(
                settledRef.filter((_, i) => pairs.every(([k, v]) => metas[i][k] === v)),
                seg,
                'TWD',
                rates,
              ),
            ]),
          ];
          for (const [query, part] of parts) {
            const monthly = await api.get(`/metrics/mrr?start_date=2024-07-01&end_date=${today}&interval=month&${query}`, token);
            expect(monthly.status, JSON.stringify(monthly.body)).toBe(200);
            expect(monthly.body, query).toEqual(
              (({ data, summary }) => ({ data, summary, unconverted: summary.unconverted }))(
                expectedSeries(part, '2024-07-01', today, 'month', zone),
              ),
            );
            if (from <= to) {
              const daily = await api.get(`/metrics/mrr?start_date=${from}&end_date=${to}&interval=day&${query}`, token);
              expect(daily.body.data, `${query} ${from}..${to}`).toEqual(expectedSeries(part, from, to, 'day', zone).data);
            }
            expect((await api.get(`/metrics/summary?${query}`, token)).body.data, query).toEqual(expectedSummary(part, today, zone));
            const segCohorts = await api.get(`/metrics/cohorts?start_month=2024-07&end_month=2026-06&${query}`, token);
            expect(segCohorts.body.data, query).toEqual(expectedCohorts(part, '2024-07', '2026-06', today.slice(0, 7), zone));
            for (const [path, expected] of TRIAL_READS) {
              const r = await api.get(`/metrics/${path}?start_date=2024-07-01&end_date=${today}&interval=month&${query}`, token);
              expect(r.status, JSON.stringify(r.body)).toBe(200);
              expect(r.body, `${path} ${query}`).toEqual(expected(part, '2024-07-01', today, 'month', zone));
            }
          }
          // The drill-down: every movement of the random range, each customer's, as the reference classifies it.
          if (from <= to) {
            const rows: { customer_id: number; date: string; type: string }[] = [];
            for (let page = 1; ; page++) {
              const r = await api.get(`/metrics/movements?start_date=${from}&end_date=${to}&per_page=100&page=${page}`, token);
              expect(r.status, JSON.stringify(r.body)).toBe(200);
              rows.push(...r.body.data);
              if (page >= r.body.meta.last_page) break;
            }
            const key = (customer: number, at: string, type: string) => `${customer}|${at}|${type}`;
            expect(rows.map((r) => key(r.customer_id, r.date, r.type)).sort(), `movements ${from}..${to}`).toEqual(
              refMovements(whole, from, to, zone, iso(now))
                .map((m) => key(ids[m.customer], m.at, m.type))
                .sort(),
            );
          }
          for (const [start, end] of [
            ['2024-07-01', today],
            [from, to],
          ]) {
            if (start > end) continue;
            const reasons = await api.get(`/metrics/churn-reasons?start_date=${start}&end_date=${end}`, token);
            expect(reasons.status, JSON.stringify(reasons.body)).toBe(200);
            expect(reasons.body.data, `churn reasons ${start}..${end}`).toEqual(expectedChurnReasons(whole, start, end, zone));
          }
          // Trials (by the day they started, what became of them by now) and failed renewals: the reference over the raw lines.
          for (const [start, end, interval] of [
            ['2024-07-01', today, 'month'],
            [from, to, 'day'],
            [from, to, 'week'],
          ] as const) {
            if (start > end) continue;
            for (const [path, expected] of TRIAL_READS) {
              const r = await api.get(`/metrics/${path}?start_date=${start}&end_date=${end}&interval=${interval}`, token);
              expect(r.status, JSON.stringify(r.body)).toBe(200);
              expect(r.body, `${path} ${interval} ${start}..${end}`).toEqual(expected(whole, start, end, interval, zone));
            }
          }
          // Sales (docs/sales.md): the reads equal the sales reference over the orders as the API lists them.
          const listed: RefOrder[] = [];
          for (let page = 1; ; page++) {
            const r = await api.get(`/orders?per_page=100&page=${page}`, token);
            expect(r.status, JSON.stringify(r.body)).toBe(200);
            listed.push(...r.body.data);
            if (page >= r.body.meta.last_page) break;
          }
          const salesRates: RefRateBook = new Map([['USD', usdRates]]);
          const money = { zone, reporting: 'TWD', rates: salesRates };
          for (const [start, end, interval] of [
            ['2024-07-01', today, 'month'],
            [from, to, 'day'],
            [from, to, 'week'],
          ] as const) {
            if (start > end) continue;
            const sales = await api.get(`/metrics/sales?start_date=${start}&end_date=${end}&interval=${interval}`, token);
            expect(sales.status, JSON.stringify(sales.body)).toBe(200);
            expect(sales.body, `sales ${interval} ${start}..${end}`).toEqual(refSales(listed, { start, end, interval, ...money }));
          }
          const tierA = new Set(ids.filter((_, i) => metas[i].tier === 'a'));
          for (const [query, q] of [
            ['currency=USD', { currency: 'USD' }],
            ['billing_cycle=monthly', { billing_cycle: 'monthly' }],
            ['metadata.tier=a', { customers: tierA }],
          ] as const) {
            const seg = await api.get(`/metrics/sales?start_date=2024-07-01&end_date=${today}&interval=month&${query}`, token);
            expect(seg.body, `sales ${query}`).toEqual(
              refSales(listed, { start: '2024-07-01', end: today, interval: 'month', ...money, ...q }),
            );
          }
          const methods = await api.get(`/metrics/payment-methods?start_date=2024-07-01&end_date=${today}`, token);
          expect(methods.body, 'payment methods').toEqual(refPaymentMethods(listed, { start: '2024-07-01', end: today, ...money }));
          const purchase = await api.get('/metrics/purchase-cohorts?start_month=2024-07&end_month=2026-06', token);
          expect(purchase.body, 'purchase cohorts').toEqual(
            refPurchaseCohorts(listed, { start: '2024-07', end: '2026-06', current: today.slice(0, 7), ...money }),
          );
        },
      ),
      RUNS,
      BUDGET_MS,
    );
  });
});
