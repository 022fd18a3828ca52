import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { applyPending } from '#lib/db/writes';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { keyShape, ratesAt, recordCapacity, type CapacityRecorder } from '../support/capacity.ts';
import { pendingItemsOf } from '../support/pending-items.ts';
import { checkScheduledCancel, type ScheduledCancel } from '#lib/subscriptions/schedule';

/**
 * One merchant at full speed, priced key by key (docs/scale.md, "Limits of one merchant"): a mixed
 * load of order writes and subscription changes runs through the API, every write it makes is
 * priced (test/support/capacity.ts), and the load is scaled to 500 order writes and 100
 * subscription changes a second. No partition key of the table or of an index may then take more
 * than half of the 1,000 WCU DynamoDB gives one partition key.
 */
// A merchant at this speed makes over 2 million requests an hour: the stage's limit is raised to
// 1,000 a second (its window then spread over four items, lib/auth/rate-limit.ts).
process.env.RATE_LIMIT_PER_HOUR = '3600000';
const api = useApi();
let recorder: CapacityRecorder | undefined;
afterEach(() => {
  recorder?.uninstall();
  resetClock();
});

const TARGET = { orderWritesPerSecond: 500, subscriptionChangesPerSecond: 100 } as const;
const PARTITION_KEY_BUDGET_WCU = 500;
/** An MRR movements shard's key at full load with an import beside it (the measures below, docs/scale.md). */
const MRR_KEY_AT_FULL_LOAD = 360;
/**
 * WCU counting one customer in a recount costs the busiest key the merchant's writes share, at most
 * (measured below: 0.3 for a zone change, 0.4 for a rate change, 18 customers).
 */
const RECOUNT_WCU_PER_CUSTOMER = 2;
/**
 * DynamoDB requests a whole recount (count, switch and retirement) sends per customer of the
 * fixture below, at most (measured: 17.6 to 19.1; with 18 customers the fixed costs weigh most:
 * the retirement Queries each partition of the generation, 96 of them its registry's 48 shards).
 */
const RECOUNT_REQUESTS_PER_CUSTOMER = 20;
/** The pace one customer, order or subscription is written at, at most (a customer's 10 orders a second). */
const ENTITY_WRITES_PER_SECOND = 10;
/**
 * A key of one entity (a customer, order, subscription, event, endpoint, idempotency key…), rather
 * than one every write of the merchant shares (shards of a counter or of the outbox are the latter).
 */
const isEntityKey = (shape: string) =>
  /(?:^| |#)(CUSTOMER|CUSTOMER_EMAIL|CUSTOMER_EXT|ORDER|SUB|SUB_EXT|SUBEVT|WEBHOOK|ACTIVITY|OUTBOX_EVENT|IDEMPOTENCY)#/.test(shape);

/**
 * A load's shared keys by shape, the merchant's id left out, so two merchants' loads add up key by
 * key as one merchant's would on AWS (a counter or metric family's `<each>` is one key of its
 * family, already priced at its share). Entity keys (one order, one customer…) are not shared: two
 * loads' never meet.
 */
const byShape = (rates: Map<string, number>, merchantId: string) => {
  const out = new Map<string, number>();
  for (const [k, wcu] of rates) {
    const shape = keyShape(k, merchantId);
    if (!isEntityKey(shape)) out.set(shape, Math.max(out.get(shape) ?? 0, wcu));
  }
  return out;
};

/** Metadata of the largest size an order may carry (16 KiB as JSON), or a typical small one. */
const metadataOf = (kind: 'small' | 'largest') =>
  kind === 'small'
    ? { channel: 'web', campaign: 'autumn' }
    : Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'x'.repeat(1000)]));

type Load = { orderWrites: number; subscriptionChanges: number };

/**
 * Per 10 order writes: 5 orders of new customers, 2 of returning customers, 3 status changes;
 * per 5 order writes, one subscription change (creates, upgrades, pauses, reactivations, cancels).
 * Three orders in seven are recurring (two monthly, one yearly; each ends up paid), as merchants
 * who sell subscriptions through orders send them: those move the MRR aggregates.
 */
const RECURRING: Record<number, 'monthly' | 'yearly'> = { 0: 'monthly', 3: 'monthly', 5: 'yearly' };
const mixedLoad = async (token: string, rounds: number, metadata: 'small' | 'largest'): Promise<Load> => {
  const load: Load = { orderWrites: 0, subscriptionChanges: 0 };
  const ok = async (p: Promise<{ status: number; body: any }>, status: number) => {
    const r = await p;
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    return r.body;
  };
  for (let round = 0; round < rounds; round++) {
    const pending: string[] = [];
    for (let i = 0; i < 7; i++) {
      // Returning customers are two of the previous round's new ones: no customer is hot.
      const email = i < 5 ? `r${round}-c${i}@example.com` : `r${round - 1}-c${i - 5}@example.com`;
      const orderNo = `R${round}-${i}`;
      await ok(
        api.post('/orders', token, {
          order_no: orderNo,
          amount: '19.90',
          status: i < 3 ? 'pending' : 'paid',
          ...(RECURRING[i] ? { billing_cycle: RECURRING[i] } : {}),
          customer_email: email,
          metadata: metadataOf(metadata),
        }),
        201,
      );
      if (i < 3) pending.push(orderNo);
      load.orderWrites++;
    }
    for (const orderNo of pending) {
      await ok(api.patch(`/orders/${orderNo}`, token, { status: 'paid' }), 200);
      load.orderWrites++;
    }
    // Two subscription changes per ten order writes.
    const customer = (await ok(api.post('/customers', token, { email: `s${round}@example.com` }), 201)).data.id;
    const sub = (
      await ok(api.post('/subscriptions', token, { customer_id: customer, plan_name: 'Pro', mrr: '49.00', billing_cycle: 'monthly' }), 201)
    ).data.id;
    load.subscriptionChanges++;
    const step = round % 3;
    if (step === 0) await ok(api.put(`/subscriptions/${sub}`, token, { mrr: '99.00' }), 200);
    else if (step === 1) await ok(api.put(`/subscriptions/${sub}/pause`, token, {}), 200);
    else await ok(api.put(`/subscriptions/${sub}/cancel`, token, {}), 200);
    load.subscriptionChanges++;
  }
  return load;
};

/** Each load measured once: the import case adds to the small one's. */
const measured = new Map<'small' | 'largest', ReturnType<typeof measureLoad>>();
const measure = (metadata: 'small' | 'largest') => {
  if (!measured.has(metadata)) measured.set(metadata, measureLoad(metadata));
  return measured.get(metadata)!;
};
const measureLoad = async (metadata: 'small' | 'largest') => {
  const { merchantId, token } = await newMerchant();
  // Returning customers exist before the measured load.
  for (let i = 0; i < 2; i++) expect((await api.post('/customers', token, { email: `r-1-c${i}@example.com` })).status).toBe(201);
  recorder = recordCapacity();
  const load = await mixedLoad(token, 10, metadata);
  recorder.uninstall();
  // The load's mix is 5 order writes per subscription change: scaled so orders run at the target.
  expect(load.orderWrites / load.subscriptionChanges).toBe(TARGET.orderWritesPerSecond / TARGET.subscriptionChangesPerSecond);
  const rates = ratesAt(recorder.records, TARGET.orderWritesPerSecond / load.orderWrites);
  const hottest = [...rates].sort((a, b) => b[1] - a[1]);
  console.info(
    `capacity model, ${metadata} metadata, at ${TARGET.orderWritesPerSecond} order writes/s + ${TARGET.subscriptionChangesPerSecond} subscription changes/s (WCU/s per partition key):\n` +
      hottest
        .slice(0, 15)
        .map(([k, wcu]) => `  ${wcu.toFixed(0).padStart(6)}  ${keyShape(k, merchantId)}`)
        .join('\n'),
  );
  return { rates, hottest, merchantId, records: recorder.records };
};

/**
 * Keys this model still finds over the budget, with the WCU/s it measured for each (docs/scale.md,
 * "Still over"): each may only go down. Any other key over the budget fails the test, and so does
 * one of these going up. An entry is removed once its key is sharded or slimmed under the budget.
 */
// Recurring orders move the MRR aggregates: their 8 shards are partition keys, each taking an
// eighth of those writes (docs/scale.md, "The MRR aggregates"). Nothing is over the budget now.
const STILL_OVER: Record<'small' | 'largest', Record<string, number>> = { small: {}, largest: {} };

describe('capacity model: one merchant at 500 order writes/s and 100 subscription changes/s', () => {
  for (const metadata of ['small', 'largest'] as const) {
    it(`no partition key takes more than ${PARTITION_KEY_BUDGET_WCU} WCU, but those still listed as over, which only go down (${metadata} metadata)`, async () => {
      const { hottest, merchantId, records } = await measure(metadata);
      // The load did reach the merchant's shared keys (the check below is not vacuous).
      expect(hottest.length).toBeGreaterThan(50);
      // Keys of one customer, order or subscription are written at that entity's pace, not the
      // merchant's: each write on one may cost at most a tenth of the budget (10 writes/s each).
      const perEntity = hottest.filter(([k]) => isEntityKey(keyShape(k, merchantId)));
      expect(perEntity.length).toBeGreaterThan(20);
      const heaviest = new Map<string, number>();
      for (const r of records!)
        if (isEntityKey(keyShape(r.key, merchantId)))
          heaviest.set(keyShape(r.key, merchantId), Math.max(heaviest.get(keyShape(r.key, merchantId)) ?? 0, r.wcu));
      expect(
        [...heaviest].filter(([, wcu]) => wcu > PARTITION_KEY_BUDGET_WCU / ENTITY_WRITES_PER_SECOND),
        'entity keys: WCU of one write',
      ).toEqual([]);
      const over = hottest
        .filter(([k, wcu]) => wcu > PARTITION_KEY_BUDGET_WCU && !isEntityKey(keyShape(k, merchantId)))
        .map(([k, wcu]) => [keyShape(k, merchantId), Math.round(wcu)] as const);
      const known = STILL_OVER[metadata];
      expect(
        over.filter(([shape]) => !(shape in known)),
        'keys over the budget',
      ).toEqual([]);
      expect(
        over.filter(([shape, wcu]) => wcu > known[shape]),
        'listed keys that went up',
      ).toEqual([]);
      const fixed = Object.keys(known).filter((shape) => !over.some(([s]) => s === shape));
      if (fixed.length) console.info(`now under the budget (remove from STILL_OVER): ${fixed.join(', ')}`);
    }, 300_000);
  }
});

/**
 * An import at the merchant's pace beside the full live load: `ops import` sends one batch of 100
 * at a time, one a second at most (its answers take that long; the default limit, 3,600 an hour, is
 * the same pace). Here an orders batch and a subscriptions batch each second, both back-dated over
 * two years, recurring in every cycle and in two currencies: the batches write their aggregate moves
 * as pending items, and the pending-moves applier applies every one of them (its writes priced with
 * the batches'). Steady state: what the imports add a second is what the applier writes a second.
 */
const IMPORT_CYCLES = ['monthly', 'quarterly', 'semi-annual', 'yearly'] as const;
/** The segments the import moves: its plans, cycles and the other currency. */
const IMPORT_SEGMENTS = [
  ...['Pro', 'Basic'].map((value) => ({ dimension: 'plan', value })),
  ...IMPORT_CYCLES.map((value) => ({ dimension: 'billing_cycle', value })),
  { dimension: 'currency', value: 'USD' },
];
const importBatches = (run: string) => {
  const day = (i: number) => new Date(Date.parse('2024-01-05T10:00:00Z') + i * 7 * 86_400_000).toISOString().replace('.000Z', 'Z');
  const orders = Array.from({ length: 100 }, (_, i) => ({
    order_no: `${run}-O${i}`,
    amount: `${20 + (i % 7)}.00`,
    status: i % 10 === 9 ? 'refunded' : 'paid',
    billing_cycle: IMPORT_CYCLES[i % 4],
    currency: i % 5 === 0 ? 'USD' : 'TWD',
    customer_email: `${run}-c${i % 60}@example.com`,
    created_at: day(i),
  }));
  const subscriptions = Array.from({ length: 100 }, (_, i) => ({
    external_id: `${run}-S${i}`,
    customer_email: `${run}-s${i}@example.com`,
    plan_name: i % 3 ? 'Pro' : 'Basic',
    mrr: `${30 + (i % 5)}.00`,
    billing_cycle: i % 4 ? 'monthly' : 'yearly',
    started_at: day(i),
    ...(i % 6 === 0 ? { cancelled_at: day(i + 8) } : {}),
  }));
  return { orders, subscriptions };
};

/**
 * Keys still over the budget with an import beside the full load (docs/scale.md, "Still over the
 * budget"), each at what was measured: it may only go down. None now: the customer search index,
 * which takes every new customer's entry (the live load's 250 a second and the import's 160), was
 * the last (656 WCU/s on one key) until it was spread over 4 keys by customer id.
 */
const IMPORT_STILL_OVER: Record<string, number> = {};

describe('an import at its pace beside the full load, the pending-moves applier included', () => {
  it(`no partition key takes more than ${PARTITION_KEY_BUDGET_WCU} WCU`, async () => {
    const live = await measure('small');
    const { merchantId, token } = await newMerchant();
    // The recorder reads every written item before and after each write, so a batch sends here
    // three times its requests, one at a time: its time is not its time on AWS, and the capacity
    // it prices does not depend on it. Its deadline is the behaviour tests' margin, not 10 s (a
    // loaded machine otherwise left the last chunk of a batch no time: "changed concurrently").
    const timeout = process.env.LOCAL_FUNCTION_TIMEOUT_MS;
    process.env.LOCAL_FUNCTION_TIMEOUT_MS = '60000';
    onTestFinished(() => {
      if (timeout === undefined) delete process.env.LOCAL_FUNCTION_TIMEOUT_MS;
      else process.env.LOCAL_FUNCTION_TIMEOUT_MS = timeout;
    });
    recorder = recordCapacity();
    const SECONDS = 2;
    let pendingWritten = 0;
    for (let second = 0; second < SECONDS; second++) {
      const { orders, subscriptions } = importBatches(`I${second}`);
      const o = await api.post('/orders/batch', token, { orders }, { 'idempotency-key': `imp-o-${second}` });
      expect(o.status, JSON.stringify(o.body)).toBe(200);
      expect(o.body.data.results.failed, JSON.stringify(o.body.data.results.failed)).toEqual([]);
      const sub = await api.post('/subscriptions/batch', token, { subscriptions }, { 'idempotency-key': `imp-s-${second}` });
      expect(sub.status, JSON.stringify(sub.body)).toBe(200);
      expect(sub.body.data.results.failed, JSON.stringify(sub.body.data.results.failed)).toEqual([]);
    }
    // The applier's work: every pending item the batches left (the local applier may have taken some already).
    for (const { pk, sk } of await pendingItemsOf(merchantId, IMPORT_SEGMENTS)) if (await applyPending({ pk, sk })) pendingWritten++;
    expect(await pendingItemsOf(merchantId, IMPORT_SEGMENTS)).toEqual([]);
    recorder.uninstall();
    // Two merchants here, one on AWS: the live load's keys and the import's are summed by shape.
    const imported = byShape(ratesAt(recorder.records, 1 / SECONDS), merchantId);
    const together = byShape(live.rates, live.merchantId);
    for (const [k, wcu] of imported) together.set(k, (together.get(k) ?? 0) + wcu);
    const hottest = [...together].sort((a, b) => b[1] - a[1]);
    const shape = (k: string) => k;
    const importTop = [...imported].sort((a, b) => b[1] - a[1]).slice(0, 10);
    console.info(
      `capacity model, an orders and a subscriptions batch of 100 a second (${pendingWritten} pending items applied here) beside the full load:\n` +
        `  the import alone (WCU/s): ${importTop.map(([k, w]) => `${shape(k)} ${w.toFixed(0)}`).join(', ')}\n` +
        hottest
          .slice(0, 12)
          .map(([k, wcu]) => `  ${wcu.toFixed(0).padStart(6)}  ${shape(k)}`)
          .join('\n'),
    );
    // The import reached the MRR aggregates (the check is not vacuous).
    expect(importTop.some(([k]) => /#MRR/.test(k))).toBe(true);
    const over = hottest.filter(([, wcu]) => wcu > PARTITION_KEY_BUDGET_WCU).map(([k, wcu]) => [shape(k), Math.round(wcu)] as const);
    expect(
      over.filter(([k]) => !(k in IMPORT_STILL_OVER)),
      'keys over the budget',
    ).toEqual([]);
    expect(
      over.filter(([k, wcu]) => wcu > IMPORT_STILL_OVER[k]),
      'listed keys that went up',
    ).toEqual([]);
  }, 300_000);
});

/**
 * Scheduled changes at 100 a second beside the full load (docs/scale.md, "Scheduled changes"): the
 * scheduler's checks converting trials at their end, cancelling past-due subscriptions as delinquent
 * and settling recurring orders whose renewal grace ran out, in equal parts, each priced as it runs
 * (its reads of when included), and scaled to 100 a second; added key by key to the live load's.
 */
const SCHEDULED_PER_SECOND = 100;
describe('scheduled conversions, delinquent cancellations and renewal settles at 100/s beside the full load', () => {
  it(`no partition key takes more than ${PARTITION_KEY_BUDGET_WCU} WCU`, async () => {
    const live = await measure('small');
    const clock = fixedClock('2026-03-01T00:00:00Z');
    const { merchantId, token } = await newMerchant();
    const N = 12;
    const checks: ScheduledCancel[] = [];
    for (let i = 0; i < N; i++) {
      const trialist = (await api.post('/customers', token, { email: `t${i}@example.com` })).body.data.id;
      const trial = await api.post('/subscriptions', token, {
        customer_id: trialist,
        plan_name: i % 2 ? 'Pro' : 'Basic',
        mrr: '49.00',
        billing_cycle: 'monthly',
        started_at: '2026-03-01T00:00:00Z',
        trial_ends_at: '2026-03-15T00:00:00Z',
      });
      expect(trial.status, JSON.stringify(trial.body)).toBe(201);
      checks.push({ merchant_id: merchantId, subscription_id: trial.body.data.id, cancel_at: '2026-03-15T00:00:00Z', kind: 'convert' });
      const payer = (await api.post('/customers', token, { email: `d${i}@example.com` })).body.data.id;
      const sub = await api.post('/subscriptions', token, {
        customer_id: payer,
        plan_name: 'Pro',
        mrr: '99.00',
        billing_cycle: 'monthly',
        started_at: '2026-01-01T00:00:00Z',
      });
      expect((await api.put(`/subscriptions/${sub.body.data.id}/past-due`, token, { failed_at: '2026-03-01T00:00:00Z' })).status).toBe(200);
      checks.push({ merchant_id: merchantId, subscription_id: sub.body.data.id, cancel_at: '2026-03-01T00:00:00Z', kind: 'delinquent' });
      const buyer = await api.post('/orders', token, {
        order_no: `G${i}`,
        amount: '120.00',
        status: 'paid',
        billing_cycle: i % 3 ? 'monthly' : 'quarterly',
        currency: i % 4 ? 'TWD' : 'USD',
        customer_email: `g${i}@example.com`,
        paid_at: '2026-01-20T00:00:00Z',
      });
      expect(buyer.status, JSON.stringify(buyer.body)).toBe(201);
      checks.push({
        merchant_id: merchantId,
        customer_id: buyer.body.data.customer_id,
        cancel_at: '2026-03-01T00:00:00Z',
        kind: 'renewal',
      });
    }
    // Every change due: past the trials' end, the delinquency (30 days) and the monthly orders' graces.
    clock.set('2026-06-01T00:00:00Z');
    recorder = recordCapacity();
    for (const check of checks)
      expect(await checkScheduledCancel(check), JSON.stringify(check)).toMatchObject({ due: true, applied: true });
    recorder.uninstall();
    const scheduled = byShape(ratesAt(recorder.records, SCHEDULED_PER_SECOND / checks.length), merchantId);
    const together = byShape(live.rates, live.merchantId);
    for (const [k, wcu] of scheduled) together.set(k, (together.get(k) ?? 0) + wcu);
    const hottest = [...together].sort((a, b) => b[1] - a[1]);
    console.info(
      `capacity model, ${SCHEDULED_PER_SECOND} scheduled changes a second (conversions, delinquent cancellations, renewal settles) beside the full load:\n` +
        `  the scheduled changes alone (WCU/s): ${[...scheduled]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 8)
          .map(([k, w]) => `${k} ${w.toFixed(0)}`)
          .join(', ')}\n` +
        hottest
          .slice(0, 12)
          .map(([k, wcu]) => `  ${wcu.toFixed(0).padStart(6)}  ${k}`)
          .join('\n'),
    );
    // The changes reached the MRR aggregates (the check is not vacuous).
    expect([...scheduled.keys()].some((k) => /#MRR/.test(k))).toBe(true);
    expect(hottest.filter(([, wcu]) => wcu > PARTITION_KEY_BUDGET_WCU).map(([k, wcu]) => [k, Math.round(wcu)])).toEqual([]);
  }, 300_000);
});

/**
 * The "limits of one merchant" table (docs/scale.md): each write path alone, its hottest shared key
 * and that key's WCU per call; the ceiling is the budget over it. Each ceiling may only go up.
 */
const CEILINGS: Record<string, { key: string; perSecond: number }> = {
  'POST /orders (small metadata)': { key: 'table M#<m>', perSecond: 500 },
  'POST /orders (16 KiB metadata)': { key: 'table M#<m>', perSecond: 500 },
  'PATCH /orders/{orderNo}': { key: 'gsi2 M#<m>#ORDERS#STATUS#pending', perSecond: 500 },
  'PUT /subscriptions/{id}': { key: 'gsi1 M#<m>#SUBS', perSecond: 500 },
};

describe('limits of one merchant, by write path', () => {
  it('each path alone: its hottest shared key and its ceiling in calls/s', async () => {
    const { merchantId, token } = await newMerchant();
    const CALLS = 10;
    const paths: Record<string, (i: number) => Promise<unknown>> = {
      'POST /orders (small metadata)': (i) =>
        api.post('/orders', token, {
          order_no: `S${i}`,
          amount: '5.00',
          status: 'pending',
          customer_email: `s${i}@limits.test`,
          metadata: metadataOf('small'),
        }),
      'POST /orders (16 KiB metadata)': (i) =>
        api.post('/orders', token, {
          order_no: `L${i}`,
          amount: '5.00',
          status: 'pending',
          customer_email: `l${i}@limits.test`,
          metadata: metadataOf('largest'),
        }),
      'PATCH /orders/{orderNo}': (i) => api.patch(`/orders/S${i}`, token, { status: 'paid' }),
      'PUT /subscriptions/{id}': async (i) => api.put(`/subscriptions/${subs[i]}`, token, { mrr: '20.00' }),
    };
    const subs: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const customer = (await api.post('/customers', token, { email: `u${i}@limits.test` })).body.data.id;
      subs.push(
        (await api.post('/subscriptions', token, { customer_id: customer, plan_name: 'P', mrr: '10.00', billing_cycle: 'monthly' })).body
          .data.id,
      );
    }
    const lines: string[] = [];
    const found: Record<string, number> = {};
    for (const [path, call] of Object.entries(paths)) {
      recorder = recordCapacity();
      for (let i = 0; i < CALLS; i++) await call(i);
      recorder.uninstall();
      const shared = [...ratesAt(recorder.records, 1 / CALLS)]
        .filter(([k]) => !isEntityKey(keyShape(k, merchantId)))
        .sort((a, b) => b[1] - a[1]);
      const [key, perCall] = shared[0];
      const ceiling = Math.floor(PARTITION_KEY_BUDGET_WCU / perCall + 1e-9);
      lines.push(`  ${path}: ${keyShape(key, merchantId)} ${perCall.toFixed(1)} WCU per call → ${ceiling} calls/s`);
      found[path] = ceiling;
    }
    console.info(`limits of one merchant (hottest shared key, WCU per call, ceiling):\n${lines.join('\n')}`);
    for (const [path, { perSecond }] of Object.entries(CEILINGS)) expect(found[path], path).toBeGreaterThanOrEqual(perSecond);
  }, 300_000);
});

/**
 * The recount after a time zone or rate change (lib/metrics/recount.ts): the change is stored at
 * once and the recount worker counts every customer into the next generation of the figures,
 * switches, and retires the generation before. Measured here as the worker runs it (its jobs, in
 * this process): the time and the DynamoDB requests per 1,000 customers, split into the count
 * (to the switch) and the retirement, and what counting one customer costs the busiest key every
 * write of the merchant shares (priced by the capacity recorder, in a run of its own: its reads
 * around each write would slow the timed one).
 */
describe('the recount after a zone or rate change', () => {
  it('counts each customer for a bounded price on its busiest shared key; its time and requests per 1,000 customers', async () => {
    const { merchantId, token } = await newMerchant();
    const CUSTOMERS = 12;
    // Each customer: a subscription from January 2025 and a change every month to July, each late in
    // the UTC day (the next day in Taipei, so the zone change moves every one of them); and half as
    // many customers on USD subscriptions, imported.
    const clock = fixedClock('2025-01-01T20:00:00Z');
    const subs: number[] = [];
    for (let i = 0; i < CUSTOMERS; i++) {
      const customer = (await api.post('/customers', token, { email: `p${i}@recount.test` })).body.data.id;
      subs.push(
        (await api.post('/subscriptions', token, { customer_id: customer, plan_name: 'P', mrr: '10.00', billing_cycle: 'monthly' })).body
          .data.id,
      );
    }
    for (let month = 2; month <= 7; month++) {
      clock.set(`2025-0${month}-0${1 + (month % 5)}T${18 + (month % 5)}:30:00Z`);
      for (const [i, sub] of subs.entries()) await api.put(`/subscriptions/${sub}`, token, { mrr: `${10 + month + i}.00` });
    }
    clock.set('2025-08-01T12:00:00Z');
    const imported = Array.from({ length: CUSTOMERS / 2 }, (_, i) => ({
      external_id: `usd-${i}`,
      customer_email: `usd${i}@recount.test`,
      plan_name: 'U',
      billing_cycle: 'monthly',
      mrr: '10',
      currency: 'USD',
      started_at: `2025-0${1 + i}-15T00:00:00Z`,
    }));
    await api.post('/subscriptions/batch', token, { subscriptions: imported }, { 'idempotency-key': `recount-${Math.random()}` });
    const customers = CUSTOMERS + CUSTOMERS / 2;
    const { changeMerchant } = await import('#lib/settings/service');
    const { getMerchant } = await import('#lib/merchants/store');
    const { runRecountJob, settleRecounts } = await import('#lib/metrics/recount');
    const { requestCounter } = await import('#lib/db/client');
    const { keys } = await import('#lib/db/keys');
    const { queryAll } = await import('#lib/db/query');

    /** The worker's part up to the switch: the merchant's jobs, oldest first, until its recount is done. */
    const countToSwitch = async () => {
      let runs = 0;
      while ((await getMerchant(merchantId))?.recount?.status === 'pending') {
        const jobs = await queryAll<{ pk: string; sk: string }>({ partition: keys.recountJob(merchantId, '').pk, descending: false }, [
          'pk',
          'sk',
        ]);
        expect(jobs.length, 'a pending recount has its job').toBeGreaterThan(0);
        for (const job of jobs) {
          await runRecountJob(job, Date.now() + 600_000);
          runs += 1;
        }
      }
      return runs;
    };
    type Phase = { jobs: number; ms: number; requests: number };
    const phase = async (run: () => Promise<number>): Promise<Phase> => {
      requestCounter.reset();
      const started = performance.now();
      const jobs = await run();
      return { jobs, ms: performance.now() - started, requests: requestCounter.total };
    };
    const per1000 = (n: number) => (n * 1000) / customers;
    /** Starts the change (no settling: the recount is left to the worker), then runs the worker's jobs: the count and switch, then the retirement. */
    const recount = async (label: string, change: () => Promise<unknown>, priced: boolean) => {
      await change();
      expect((await getMerchant(merchantId))?.recount?.status).toBe('pending');
      if (priced) recorder = recordCapacity();
      const count = await phase(countToSwitch);
      const retire = await phase(() => settleRecounts(merchantId));
      recorder?.uninstall();
      expect((await getMerchant(merchantId))?.recount?.status).toBe('done');
      const line = (name: string, p: Phase) =>
        `${name} ${p.jobs} job(s), ${p.ms.toFixed(0)} ms, ${p.requests} requests` +
        ` (per 1,000 customers: ${(per1000(p.ms) / 1000).toFixed(1)} s, ${per1000(p.requests).toFixed(0)} requests)`;
      let priceLine = '';
      let perCustomer = 0;
      if (priced) {
        const shared = [...ratesAt(recorder!.records, 1 / customers)]
          .filter(([k]) => !isEntityKey(keyShape(k, merchantId)))
          .sort((a, b) => b[1] - a[1]);
        const [key, wcu] = shared[0];
        perCustomer = wcu;
        const total = recorder!.records.reduce((sum, r) => sum + r.wcu, 0);
        priceLine =
          `; ${per1000(total).toFixed(0)} WCU per 1,000 customers, busiest shared key ${keyShape(key, merchantId)} ${wcu.toFixed(1)} WCU per customer` +
          ` → ${Math.floor((PARTITION_KEY_BUDGET_WCU - MRR_KEY_AT_FULL_LOAD) / wcu)} customers/s beside the full load`;
        recorder = undefined;
      }
      console.info(`${label}, ${customers} customers: ${line('count and switch', count)}; ${line('retirement', retire)}${priceLine}`);
      return { count, retire, perCustomer, requestsPerCustomer: (count.requests + retire.requests) / customers };
    };

    // A zone change, timed (no recorder); then another, priced.
    const timed = await recount('time zone change (timed)', () => changeMerchant(merchantId, { timezone: 'Asia/Taipei' }), false);
    const zone = await recount('time zone change (priced)', () => changeMerchant(merchantId, { timezone: 'America/New_York' }), true);
    // A rate change recounts every customer too (the whole generation is counted at the new rates).
    const rates = await recount(
      'rate change (priced)',
      async () => {
        const r = await api.request('PUT', '/exchange-rates/USD', {
          token,
          body: { rates: Array.from({ length: 12 }, (_, m) => ({ month: `2025-${String(m + 1).padStart(2, '0')}`, rate: '30' })) },
          settle: false,
        });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.headers.get('recount-pending')).toBe('true');
      },
      true,
    );
    for (const r of [timed, zone, rates]) {
      expect(r.count.jobs).toBeGreaterThan(0);
      expect(r.retire.jobs).toBeGreaterThan(0);
      expect(r.requestsPerCustomer).toBeLessThanOrEqual(RECOUNT_REQUESTS_PER_CUSTOMER);
    }
    // What counting one customer costs the busiest shared key: a recount runs beside the merchant's full load.
    for (const r of [zone, rates]) expect(r.perCustomer).toBeLessThanOrEqual(RECOUNT_WCU_PER_CUSTOMER);
  }, 300_000);
});

/**
 * Stats items late in a busy day (docs/scale.md, "Stats items"): one shard's day written in every
 * quarter-hour in 10 currencies, then an order written at 23:59. Every stats item stays under its
 * bound in bytes, the write's stats WCU are what the docs give, and a shard's key stays within the
 * budget at full speed (its writers' share of 500 order writes a second).
 */
const STATS_ITEM_MAX_BYTES = 6_144;
const STATS_WCU_PER_WRITE = 14;
describe('stats items late in the day, in 10 currencies', () => {
  it('every stats item stays bounded, and an order write costs the same WCU on its shard at any hour', async () => {
    const { addAggregateDeltas } = await import('#lib/orders/store');
    const { WriteSet } = await import('#lib/db/writes');
    const { db: client, tableName } = await import('#lib/db/client');
    const { QueryCommand } = await import('@aws-sdk/lib-dynamodb');
    const { statsPartition } = await import('#lib/db/keys');
    const { COUNTER_SHARDS } = await import('#lib/db/writes-constants');
    const { itemSize } = await import('../support/write-limits.ts');
    const { marshall } = await import('@aws-sdk/util-dynamodb');
    const { merchantId } = await newMerchant();
    const SHARD = 7;
    const CURRENCIES = ['TWD', 'USD', 'EUR', 'JPY', 'GBP', 'AUD', 'CAD', 'SGD', 'HKD', 'CNY'];
    const order = (at: string, currency: string, n: number) => ({
      order_no: `late-${n}`,
      amount: '123456.78',
      currency,
      status: 'paid' as const,
      paid_at: at,
      created_at: at,
      customer_id: 1,
    });
    // Every quarter-hour of 26 November in every currency, one transaction per quarter-hour.
    let n = 0;
    for (let q = 0; q < 96; q++) {
      const at = new Date(Date.parse('2026-11-26T00:00:00Z') + q * 900_000 + 60_000).toISOString().replace('.000Z', 'Z');
      const ws = new WriteSet(SHARD);
      for (const currency of CURRENCIES) addAggregateDeltas(ws, merchantId, null, order(at, currency, n++));
      await ws.commit();
    }
    // The order written late in the day, priced on the shard's key.
    recorder = recordCapacity();
    const ws = new WriteSet(SHARD);
    addAggregateDeltas(ws, merchantId, null, order('2026-11-26T23:59:00Z', 'USD', n++));
    await ws.commit();
    recorder.uninstall();
    const pk = statsPartition(merchantId, '2026-11', SHARD);
    const perWrite = recorder.records.filter((r) => r.key === `table ${pk}`).reduce((s, r) => s + r.wcu, 0);
    const { Items } = await client().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ConsistentRead: true,
      }),
    );
    const sizes = (Items ?? []).map((i) => [String(i.sk), itemSize(marshall(i) as never)] as const);
    console.info(
      `stats items late in the day, 10 currencies: ${perWrite} WCU per order write on its shard; bytes: ${sizes.map(([sk, b]) => `${sk} ${b}`).join(', ')}`,
    );
    expect(sizes.length).toBeGreaterThan(24);
    expect(sizes.filter(([, bytes]) => bytes > STATS_ITEM_MAX_BYTES)).toEqual([]);
    expect(perWrite).toBeLessThanOrEqual(STATS_WCU_PER_WRITE);
    // At full speed a shard takes 1/48 of the merchant's order writes; a status change may move two days.
    const perKey = (TARGET.orderWritesPerSecond / COUNTER_SHARDS) * perWrite * 2;
    expect(perKey).toBeLessThanOrEqual(PARTITION_KEY_BUDGET_WCU);
  }, 300_000);
});

/**
 * Sales items late in a busy day (docs/scale.md, "Sales items"): a day of orders in 10 currencies,
 * none with a rate (so each booking also leaves its currency's `u#` attributes), every payment method
 * and status, then an order written at 23:59 and refunded, each priced on the sales keys it writes.
 * Every sales item stays under its bound in bytes, and at full speed (500 order writes a second over
 * the 8 shards) no sales key of the whole takes more than the budget.
 */
const SALES_ITEM_MAX_BYTES = 4_096;
describe('sales items late in the day, in 10 currencies', () => {
  it('every sales item stays bounded, and a late order write keeps each sales key within the budget', async () => {
    const { db: client, tableName } = await import('#lib/db/client');
    const { QueryCommand } = await import('@aws-sdk/lib-dynamodb');
    const { METRIC_SHARDS, salesPartition, salesPartitions } = await import('#lib/db/keys');
    const { itemSize } = await import('../support/write-limits.ts');
    const { marshall } = await import('@aws-sdk/util-dynamodb');
    const { merchantId, token } = await newMerchant();
    const CURRENCIES = ['TWD', 'USD', 'EUR', 'JPY', 'GBP', 'AUD', 'CAD', 'SGD', 'HKD', 'CNY'];
    const METHODS = ['credit_card', 'atm', 'cvs', 'wallet_a_pay', 'wallet_b_pay', 'wallet_c_pay', null];
    const clock = fixedClock('2026-11-26T23:50:00Z');
    // 480 orders over the day: every half-hour in every currency, methods and statuses in turn.
    const orders = Array.from({ length: 480 }, (_, n) => {
      const at = new Date(Date.parse('2026-11-26T00:00:00Z') + Math.floor(n / 10) * 1_800_000 + 60_000).toISOString().replace('.000Z', 'Z');
      const status = (['paid', 'paid', 'refunded', 'failed', 'pending', 'cancelled'] as const)[n % 6];
      return {
        order_no: `day-${n}`,
        amount: '1234.00',
        currency: CURRENCIES[n % 10],
        customer_email: `d${n % 97}@late.test`,
        status,
        payment_method: METHODS[n % METHODS.length],
        created_at: at,
        ...(status === 'paid' || status === 'refunded' ? { paid_at: at } : {}),
        ...(status === 'refunded' ? { refunded_at: at } : {}),
        ...(status === 'failed' ? { failed_at: at } : {}),
      };
    });
    for (let i = 0; i < orders.length; i += 100) {
      const r = await api.post('/orders/batch', token, { orders: orders.slice(i, i + 100) });
      expect(r.status).toBe(200);
      expect(r.body.data.results.failed).toEqual([]);
    }
    // The day's moves applied (the applier's work), so the late write meets the day's items full.
    const segments = [
      ...METHODS.map((m) => ({ dimension: 'payment_method', value: m ?? 'none' })),
      ...['api', 'import'].map((value) => ({ dimension: 'source', value })),
      { dimension: 'billing_cycle', value: 'one-time' },
      ...CURRENCIES.map((value) => ({ dimension: 'currency', value })),
    ];
    for (const item of await pendingItemsOf(merchantId, segments)) await applyPending({ pk: item.pk, sk: item.sk });
    expect(await pendingItemsOf(merchantId, segments)).toEqual([]);
    // The late order and its refund, priced.
    clock.set('2026-11-26T23:59:00Z');
    recorder = recordCapacity();
    const late = await api.post('/orders', token, {
      order_no: 'late-1',
      amount: '99.00',
      currency: 'EUR',
      customer_email: 'late@late.test',
      status: 'paid',
      payment_method: 'wallet_c_pay',
    });
    expect(late.status).toBe(201);
    const writes = [recorder.records.splice(0)];
    expect((await api.patch('/orders/late-1', token, { status: 'refunded' })).status).toBe(200);
    writes.push(recorder.records.splice(0));
    recorder.uninstall();
    recorder = undefined;
    const prefix = salesPartition(merchantId);
    const perWrite = writes.map((records) => {
      const byKey = new Map<string, number>();
      for (const r of records) if (r.key.startsWith(`table ${prefix}#`)) byKey.set(r.key, (byKey.get(r.key) ?? 0) + r.wcu);
      return byKey;
    });
    const hottest = Math.max(...perWrite.flatMap((m) => [...m.values()]));
    const sizes = (
      await Promise.all(
        salesPartitions(prefix).map(async (pk) => {
          const { Items } = await client().send(
            new QueryCommand({
              TableName: tableName(),
              KeyConditionExpression: 'pk = :pk',
              ExpressionAttributeValues: { ':pk': pk },
              ConsistentRead: true,
            }),
          );
          return (Items ?? []).map((i) => [`${pk.slice(prefix.length)} ${String(i.sk)}`, itemSize(marshall(i) as never)] as const);
        }),
      )
    ).flat();
    console.info(
      `sales items late in the day, 10 currencies: per write WCU on each sales key ${perWrite.map((m) => JSON.stringify(Object.fromEntries([...m].map(([k, v]) => [k.slice(`table ${prefix}`.length), v])))).join(' / ')}; largest items: ${[
        ...sizes,
      ]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 4)
        .map(([sk, b]) => `${sk} ${b}`)
        .join(', ')}`,
    );
    expect(sizes.length).toBeGreaterThan(3);
    expect(sizes.filter(([, bytes]) => bytes > SALES_ITEM_MAX_BYTES)).toEqual([]);
    // At full speed each shard takes 1/8 of the merchant's order writes, each at most the hottest write's WCU on one key.
    const perKey = (TARGET.orderWritesPerSecond / METRIC_SHARDS) * hottest;
    expect(perKey).toBeLessThanOrEqual(PARTITION_KEY_BUDGET_WCU);
    // Here the day's orders spread over the shards; at full speed every shard meets every currency and
    // method. An item holding every shard's attributes at once prices that: the late write's two
    // booking items (day and month) on its key, inside a transaction, must still fit the budget.
    const union = await Promise.all(
      ['D#2026-11-26', 'M#2026-11', 'Y#2026-11-26'].map(async (sk) => {
        const kind = sk.startsWith('Y') ? 'Y' : 'B';
        const attrs: Record<string, unknown> = {};
        for (const pk of salesPartitions(prefix).filter((p) => p.includes(`#${kind}#`))) {
          const { Items } = await client().send(
            new QueryCommand({
              TableName: tableName(),
              // Every lane of the item (`<sk>#<lane>`).
              KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
              ExpressionAttributeValues: { ':pk': pk, ':sk': `${sk}#` },
              ConsistentRead: true,
            }),
          );
          for (const item of Items ?? []) Object.assign(attrs, item);
        }
        return [sk, itemSize(marshall(attrs) as never)] as const;
      }),
    );
    const units = (bytes: number) => Math.ceil(bytes / 1024);
    const bookingKeyWcu = 2 * (units(union[0][1]) + units(union[1][1]));
    console.info(
      `sales items with every shard's attributes: ${union.map(([sk, b]) => `${sk} ${b} B`).join(', ')}; booking key ${bookingKeyWcu} WCU a write, ${(TARGET.orderWritesPerSecond / METRIC_SHARDS) * bookingKeyWcu} WCU/s at full speed`,
    );
    // Each found (the day's orders wrote them), each within the bound.
    for (const [sk, bytes] of union) expect(bytes, sk).toBeGreaterThan(200);
    expect(union.filter(([, bytes]) => bytes > SALES_ITEM_MAX_BYTES)).toEqual([]);
    expect((TARGET.orderWritesPerSecond / METRIC_SHARDS) * bookingKeyWcu).toBeLessThanOrEqual(PARTITION_KEY_BUDGET_WCU);
  }, 300_000);
});
