import { INVALID_DATA } from '#lib/errors';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { LIVE_TAKEN } from '#lib/subscriptions/service';
import { newMerchant, useApi, type ApiResponse } from '../support/api.ts';
import { factoriesFor, unnamed } from '../support/factories.ts';
import { transactionConflictModel, type TransactionConflictModel } from '../support/faults.ts';
import { outboxEvents } from '../orders/helpers.ts';

/**
 * Concurrency guarantees of subscriptions (docs/subscriptions.md, "Concurrency"): every change is
 * one transaction guarded by the subscription's version, the customer's one live subscription is
 * the `LIVE_SUB` marker, and the customer's current MRR (`GET /customers/{id}`) follows. Concurrent requests go
 * out together through the in-process local server; afterwards what is stored (subscriptions,
 * events, the marker, the customer's MRR, list totals, outbox) must be what SOME serial order of the
 * successful requests would have produced, with nothing from the refused ones.
 *
 * Each scenario runs on DynamoDB Local as is (it serialises transactions) and again with
 * `transactionConflictModel()` installed, so overlapping transactions are cancelled as on AWS and
 * the retry layer has to redo them.
 */
const api = useApi();
const { newCustomerId, createSubscription } = factoriesFor(api);

const show = (r: ApiResponse) => `${r.status} ${JSON.stringify(r.body)}`;
const money = (v: Decimal.Value) => new Decimal(v).toFixed(2);
const statusesOf = (rs: ApiResponse[]) =>
  rs.reduce<Record<number, number>>((acc, r) => {
    acc[r.status] = (acc[r.status] ?? 0) + 1;
    return acc;
  }, {});

/** The customer's current MRR as the API shows it (`GET /customers/{id}`). */
const customerMrr = async (token: string, customerId: number) => {
  const r = await api.get(`/customers/${customerId}`, token);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data.mrr as string;
};

/** The customer's live-subscription marker, read by key. */
const liveMarker = async (merchantId: string, customerId: number) => {
  const { Item } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.liveSubscription(merchantId, customerId), ConsistentRead: true }),
  );
  return Item;
};

/** Every page of a list endpoint. */
const listAll = async (token: string, path: string): Promise<{ data: any[]; total: number }> => {
  const data: any[] = [];
  let total = 0;
  for (let page = 1; ; page++) {
    const sep = path.includes('?') ? '&' : '?';
    const r = await api.get(`${path}${sep}per_page=100&page=${page}`, token);
    expect(r.status, show(r)).toBe(200);
    data.push(...r.body.data);
    total = r.body.meta.total;
    if (page >= r.body.meta.last_page) break;
  }
  return { data, total };
};

/** meta.total of a list (the unfiltered / by-status / by-type totals come from the sharded counters). */
const totalOf = async (token: string, path: string) => {
  const sep = path.includes('?') ? '&' : '?';
  const r = await api.get(`${path}${sep}per_page=1`, token);
  expect(r.status, show(r)).toBe(200);
  return r.body.meta.total as number;
};

/** Runs `fn` with the conflict model installed (uninstalled in finally), or without when `conflicts` is false. */
const withModel = async <T>(conflicts: boolean, fn: (model: TransactionConflictModel | null) => Promise<T>): Promise<T> => {
  const model = conflicts ? transactionConflictModel({ holdMs: 50 }) : null;
  try {
    return await fn(model);
  } finally {
    model?.uninstall();
  }
};

/* ------------------------------------------------------------------------------------------ */
/* (a) concurrent creates for one customer                                                      */
/* ------------------------------------------------------------------------------------------ */

const raceCreates = async (n: number, conflicts: boolean) => {
  const { merchantId, token } = await newMerchant();
  const customerId = await newCustomerId(token);
  // Each request is recognisable by its mrr and plan.
  const bodies = Array.from({ length: n }, (_, i) => ({
    customer_id: customerId,
    plan_name: `Plan ${i}`,
    mrr: money(100 + i * 7.25),
    billing_cycle: 'monthly',
  }));
  const { responses, stats } = await withModel(conflicts, async (model) => ({
    responses: await Promise.all(bodies.map((b) => api.post('/subscriptions', token, b))),
    stats: model ? { ...model.stats } : null,
  }));
  const summary = `${n} creates${conflicts ? ' (conflict model)' : ''}: ${JSON.stringify(statusesOf(responses))}${stats ? ` model ${JSON.stringify(stats)}` : ''}`;

  const winners = responses.flatMap((r, i) => (r.status === 201 ? [i] : []));
  expect(winners.length, summary).toBe(1);
  const w = winners[0];
  const sub = responses[w].body.data;
  expect(sub, summary).toMatchObject({
    customer_id: customerId,
    status: 'active',
    plan_name: bodies[w].plan_name,
    mrr: bodies[w].mrr,
    source: 'api',
  });
  responses.forEach((r, i) => {
    if (i === w) return;
    expect(r.status, `request ${i}: ${show(r)}`).toBe(422);
    expect(r.body, `request ${i}`).toEqual({ message: INVALID_DATA, errors: { customer_id: [LIVE_TAKEN] } });
  });

  // Exactly one subscription for the customer, and it is the winner's.
  const listed = await listAll(token, `/subscriptions?customer_id=${customerId}`);
  expect(listed.total, summary).toBe(1);
  expect(listed.data.map(unnamed), summary).toEqual([sub]);
  expect(await totalOf(token, '/subscriptions'), 'subscriptions total (counters)').toBe(1);
  expect(await totalOf(token, '/subscriptions?status=active'), 'active total (counters)').toBe(1);

  // One `created` event, the winner's.
  const events = await listAll(token, `/subscriptions/events?customer_id=${customerId}`);
  expect(
    events.data.map((e) => [e.event_type, e.subscription_id, e.old_amount, e.new_amount, e.new_plan]),
    summary,
  ).toEqual([['created', sub.id, '0.00', bodies[w].mrr, bodies[w].plan_name]]);
  expect(await totalOf(token, '/subscriptions/events'), 'events total (counters)').toBe(1);
  expect(await totalOf(token, '/subscriptions/events?event_type=created'), 'created events total (counters)').toBe(1);

  // The customer's MRR and live marker name the winner; one webhook.
  expect(await customerMrr(token, customerId), summary).toBe(bodies[w].mrr);
  expect(await liveMarker(merchantId, customerId), summary).toMatchObject({ subscription_id: sub.id });
  const hooks = (await outboxEvents(merchantId)).filter((e) => e.type.startsWith('subscription.'));
  expect(
    hooks.map((h) => [h.type, h.data.object.id]),
    summary,
  ).toEqual([['subscription.created', sub.id]]);
  return stats;
};

/* ------------------------------------------------------------------------------------------ */
/* (b) concurrent mrr updates of one subscription                                               */
/* ------------------------------------------------------------------------------------------ */

const INITIAL_MRR = '100.00';
/** Ten values, all different from each other and from the initial mrr; some sent as JSON numbers. */
const UPDATE_VALUES: (string | number)[] = ['150.00', '90.00', 200.5, '75.25', '300', '120.10', 99.99, '180.00', '60.00', '250.75'];

const raceUpdates = async (conflicts: boolean) => {
  const { merchantId, token } = await newMerchant();
  const customerId = await newCustomerId(token);
  const sub = await createSubscription(token, customerId, { mrr: INITIAL_MRR, plan_name: 'Basic' });
  const { responses, stats } = await withModel(conflicts, async (model) => ({
    responses: await Promise.all(UPDATE_VALUES.map((mrr) => api.put(`/subscriptions/${sub.id}`, token, { mrr }))),
    stats: model ? { ...model.stats } : null,
  }));
  const counts = statusesOf(responses);
  const summary = `10 updates${conflicts ? ' (conflict model)' : ''}: ${JSON.stringify(counts)}${stats ? ` model ${JSON.stringify(stats)}` : ''}`;

  // 200, or at worst 409 (contention past the deadline): never a 5xx or anything else.
  const serverErrors = responses.filter((r) => r.status >= 500);
  expect(serverErrors.map(show), `5xx answers — ${summary}`).toEqual([]);
  for (const r of responses) expect([200, 409], `${show(r)} — ${summary}`).toContain(r.status);
  for (const r of responses.filter((x) => x.status === 409)) {
    expect(r.body, summary).toEqual({ message: 'The resource was changed by concurrent requests. Try again.' });
  }
  const ok = UPDATE_VALUES.flatMap((v, i) => (responses[i].status === 200 ? [money(v)] : []));
  // Each 200 shows the state it wrote.
  UPDATE_VALUES.forEach((v, i) => {
    if (responses[i].status === 200)
      expect(responses[i].body.data, summary).toMatchObject({ id: sub.id, mrr: money(v), status: 'active', plan_name: 'Basic' });
  });

  const final = await api.get(`/subscriptions/${sub.id}`, token);
  expect(final.status, show(final)).toBe(200);
  const finalMrr = final.body.data.mrr as string;

  // The non-`created` events of the subscription, by id, are ONE unbroken chain from the initial mrr to the final one.
  const all = (await listAll(token, `/subscriptions/events?subscription_id=${sub.id}`)).data;
  expect(all.filter((e) => e.event_type === 'created').length, summary).toBe(1);
  const chain = all.filter((e) => e.event_type !== 'created').sort((a, b) => a.id - b.id);
  const rows = chain.map((e) => `#${e.id} ${e.event_type} ${e.old_amount}→${e.new_amount} (${e.amount_change})`);
  const label = `${summary}\nchain:\n${rows.join('\n')}\nfinal mrr ${finalMrr}`;
  expect(chain.length, label).toBeLessThanOrEqual(10);
  // Every successful PUT moved the mrr to a value different from the one before it: one event each.
  expect(chain.length, label).toBe(ok.length);
  expect(chain.map((e) => e.new_amount).sort(), label).toEqual([...ok].sort());
  if (ok.length === 0) {
    expect(finalMrr, label).toBe(INITIAL_MRR);
  } else {
    expect(chain[0].old_amount, label).toBe(INITIAL_MRR);
    for (let i = 1; i < chain.length; i++) expect(chain[i].old_amount, `event ${i}: ${label}`).toBe(chain[i - 1].new_amount);
    expect(chain.at(-1).new_amount, label).toBe(finalMrr);
  }
  for (const e of chain) {
    const up = new Decimal(e.new_amount).gt(e.old_amount);
    expect(e.event_type, label).toBe(up ? 'upgrade' : 'downgrade');
    expect(e.amount_change, label).toBe(money(new Decimal(e.new_amount).minus(e.old_amount)));
    expect([e.customer_id, e.source, e.old_plan, e.new_plan], label).toEqual([customerId, 'api', 'Basic', 'Basic']);
  }

  expect(await customerMrr(token, customerId), label).toBe(finalMrr);
  expect(await totalOf(token, '/subscriptions/events'), 'events total (counters)').toBe(1 + ok.length);
  const hooks = (await outboxEvents(merchantId)).filter((e) => e.type === 'subscription.updated');
  expect(hooks.map((h) => h.data.object.mrr).sort(), `one subscription.updated per 200 — ${label}`).toEqual([...ok].sort());
  return { stats, counts };
};

/* ------------------------------------------------------------------------------------------ */
/* (c) cancel / reactivate / pause racing on one subscription                                   */
/* ------------------------------------------------------------------------------------------ */

type Status = 'active' | 'paused' | 'cancelled';
type Op = 'cancel' | 'reactivate' | 'pause';
type Step = { ok: true; next: Status; event?: 'cancel' | 'reactivated' } | { ok: false };

/** docs/subscriptions.md for one subscription whose customer has no other live subscription. */
const step = (s: Status, op: Op): Step => {
  if (op === 'cancel') return s === 'cancelled' ? { ok: false } : { ok: true, next: 'cancelled', event: 'cancel' };
  if (op === 'pause') return s === 'active' ? { ok: true, next: 'paused' } : { ok: false };
  return s === 'active' ? { ok: false } : { ok: true, next: 'active', event: 'reactivated' };
};

const permutations = <T>(xs: T[]): T[][] =>
  xs.length <= 1 ? [xs] : xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));

const send = (token: string, id: number, op: Op, i: number) =>
  op === 'cancel'
    ? api.put(`/subscriptions/${id}/cancel`, token, { reason: `race ${i}` })
    : api.put(`/subscriptions/${id}/${op}`, token, {});

/**
 * Rounds of [cancel, reactivate, pause] × 2 sent together, each round starting from the state the
 * previous one left. Per round, some serial order of the requests must explain every answer (200 iff
 * allowed at its turn, showing the state it produced; 422 on status iff forbidden at its turn), the
 * final stored status, and the new events in id order; the marker, the customer's MRR and the totals must
 * follow the final status.
 */
const raceLifecycle = async (start: Status, rounds: number, conflicts: boolean) => {
  const { merchantId, token } = await newMerchant();
  const customerId = await newCustomerId(token);
  const mrr = '123.45';
  const sub = await createSubscription(token, customerId, { mrr });
  if (start === 'paused') expect((await api.put(`/subscriptions/${sub.id}/pause`, token, {})).status).toBe(200);
  if (start === 'cancelled') expect((await api.put(`/subscriptions/${sub.id}/cancel`, token, {})).status).toBe(200);
  let state: Status = start;
  let seenEvents = (await listAll(token, `/subscriptions/events?subscription_id=${sub.id}`)).data.map((e) => e.id as number);
  const ops: Op[] = ['cancel', 'reactivate', 'pause', 'cancel', 'reactivate', 'pause'];
  let conflictsSeen = 0;
  const history: string[] = [];

  for (let round = 0; round < rounds; round++) {
    const { responses, stats } = await withModel(conflicts, async (model) => ({
      responses: await Promise.all(ops.map((op, i) => send(token, sub.id, op, i))),
      stats: model ? { ...model.stats } : null,
    }));
    conflictsSeen += stats?.conflicts ?? 0;
    const answers = ops.map(
      (op, i) => `${op}→${responses[i].status}${responses[i].status === 200 ? `(${responses[i].body.data.status})` : ''}`,
    );
    const label = `start ${start}, round ${round} from ${state}${conflicts ? ' (conflict model)' : ''}: ${answers.join(', ')}`;
    history.push(label);

    for (const [i, r] of responses.entries()) {
      expect([200, 409, 422], `${ops[i]}: ${show(r)} — ${label}`).toContain(r.status);
      if (r.status === 422) expect(Object.keys(r.body.errors), `${ops[i]}: ${show(r)}`).toEqual(['status']);
    }
    const got = await api.get(`/subscriptions/${sub.id}`, token);
    expect(got.status, show(got)).toBe(200);
    const stored = got.body.data;
    const allEvents = (await listAll(token, `/subscriptions/events?subscription_id=${sub.id}`)).data;
    const fresh = allEvents.filter((e) => !seenEvents.includes(e.id)).sort((a, b) => a.id - b.id);
    const freshRows = fresh.map((e) => `${e.event_type} ${e.old_amount}→${e.new_amount}`);

    // Some serial order of the requests that reached a decision (409s changed nothing) explains everything.
    const decided = ops.map((op, i) => ({ op, i })).filter(({ i }) => responses[i].status !== 409);
    const explains = permutations(decided).find((order) => {
      let s: Status = state;
      const events: string[] = [];
      for (const { op, i } of order) {
        const res = step(s, op);
        const r = responses[i];
        if (res.ok !== (r.status === 200)) return false;
        if (res.ok) {
          s = res.next;
          if (r.body.data.status !== s) return false;
          if (res.event === 'cancel') events.push(`cancel ${mrr}→0.00`);
          if (res.event === 'reactivated') events.push(`reactivated 0.00→${mrr}`);
        }
      }
      return s === stored.status && JSON.stringify(events) === JSON.stringify(freshRows);
    });
    expect(
      explains,
      `no serial order explains the answers, stored status ${stored.status} and new events ${JSON.stringify(freshRows)} — ${label}`,
    ).toBeDefined();

    // A cancel event exists iff it was cancelled in this round; the stored fields follow the status.
    const cancelledNow = responses.some((r, i) => ops[i] === 'cancel' && r.status === 200);
    expect(
      fresh.some((e) => e.event_type === 'cancel'),
      label,
    ).toBe(cancelledNow);
    for (const e of fresh) {
      expect(e.amount_change, label).toBe(money(new Decimal(e.new_amount).minus(e.old_amount)));
      expect([e.source, e.customer_id, e.subscription_id], label).toEqual(['api', customerId, sub.id]);
    }
    if (stored.status === 'active')
      expect([stored.cancelled_at, stored.paused_at, stored.cancel_reason], label).toEqual([null, null, null]);
    if (stored.status === 'paused') expect([stored.cancelled_at, typeof stored.paused_at], label).toEqual([null, 'string']);
    if (stored.status === 'cancelled') expect(typeof stored.cancelled_at, label).toBe('string');

    // The marker exists iff the subscription is live; the customer's MRR is its mrr iff active.
    const marker = await liveMarker(merchantId, customerId);
    if (stored.status === 'cancelled') expect(marker, `marker — ${label}`).toBeUndefined();
    else expect(marker, `marker — ${label}`).toMatchObject({ subscription_id: sub.id });
    expect(await customerMrr(token, customerId), `customer MRR — ${label}`).toBe(stored.status === 'active' ? mrr : '0.00');
    for (const s of ['active', 'paused', 'cancelled'] as const) {
      expect(await totalOf(token, `/subscriptions?status=${s}`), `${s} total (counters) — ${label}`).toBe(stored.status === s ? 1 : 0);
    }

    state = stored.status;
    seenEvents = allEvents.map((e) => e.id);
  }

  // The events total (sharded counters) counts exactly the events stored.
  const all = (await listAll(token, `/subscriptions/events?subscription_id=${sub.id}`)).data;
  expect(await totalOf(token, '/subscriptions/events'), 'events total (counters)').toBe(all.length);
  return { conflictsSeen, history };
};

/**
 * Customer with a cancelled subscription A: reactivating A and creating B race for the one live
 * slot. Exactly one wins; the loser gets its 422 (status for the reactivation, customer_id for the
 * create); the marker, the customer's MRR and the events name the winner only.
 */
const raceSlot = async (rounds: number, conflicts: boolean) => {
  const { merchantId, token } = await newMerchant();
  const customerId = await newCustomerId(token);
  const a = await createSubscription(token, customerId, { mrr: '10.00', plan_name: 'A' });
  expect((await api.put(`/subscriptions/${a.id}/cancel`, token, {})).status).toBe(200);
  const wins = { reactivate: 0, create: 0 };
  for (let round = 0; round < rounds; round++) {
    const before = (await listAll(token, `/subscriptions/events?customer_id=${customerId}`)).data.map((e) => e.id);
    const mrrB = money(20 + round);
    const [re, cr] = await withModel(conflicts, () =>
      Promise.all([
        api.put(`/subscriptions/${a.id}/reactivate`, token, {}),
        api.post('/subscriptions', token, { customer_id: customerId, plan_name: `B${round}`, mrr: mrrB, billing_cycle: 'yearly' }),
      ]),
    );
    const label = `round ${round}${conflicts ? ' (conflict model)' : ''}: reactivate ${show(re)}; create ${show(cr)}`;
    expect([re.status === 200, cr.status === 201].filter(Boolean).length, `exactly one wins — ${label}`).toBe(1);
    const after = (await listAll(token, `/subscriptions/events?customer_id=${customerId}`)).data.filter((e) => !before.includes(e.id));
    const marker = await liveMarker(merchantId, customerId);
    const live = (await listAll(token, `/subscriptions?customer_id=${customerId}`)).data.filter((s) => s.status !== 'cancelled');
    let winner: number;
    if (re.status === 200) {
      wins.reactivate++;
      expect(cr.status, label).toBe(422);
      expect(cr.body.errors, label).toEqual({ customer_id: [LIVE_TAKEN] });
      winner = a.id;
      expect(
        after.map((e) => [e.event_type, e.subscription_id, e.new_amount]),
        label,
      ).toEqual([['reactivated', a.id, '10.00']]);
      expect(await customerMrr(token, customerId), label).toBe('10.00');
    } else {
      wins.create++;
      expect(re.status, label).toBe(422);
      expect(Object.keys(re.body.errors), label).toEqual(['status']);
      winner = cr.body.data.id;
      expect(
        after.map((e) => [e.event_type, e.subscription_id, e.new_amount]),
        label,
      ).toEqual([['created', winner, mrrB]]);
      expect(await customerMrr(token, customerId), label).toBe(mrrB);
    }
    expect(marker, label).toMatchObject({ subscription_id: winner });
    expect(
      live.map((s) => s.id),
      label,
    ).toEqual([winner]);
    // Free the slot again for the next round (A stays the cancelled one to reactivate).
    expect((await api.put(`/subscriptions/${winner}/cancel`, token, {})).status, label).toBe(200);
    expect(await customerMrr(token, customerId), label).toBe('0.00');
    expect(await liveMarker(merchantId, customerId), label).toBeUndefined();
  }
  return wins;
};

/* ------------------------------------------------------------------------------------------ */

describe('subscriptions under concurrent requests', () => {
  describe.each([
    { conflicts: false, mode: 'DynamoDB Local' },
    { conflicts: true, mode: 'with the transaction conflict model' },
  ])('$mode', ({ conflicts }) => {
    it.each([8, 20])(
      '(a) %i concurrent POST /subscriptions for one customer: one 201, the rest 422 customer_id; one subscription, one created event, MRR = its mrr',
      async (n) => {
        const stats = await raceCreates(n, conflicts);
        if (stats) {
          console.info(`(a) ${n} creates under the conflict model: ${JSON.stringify(stats)}`);
          expect(stats.transactions, 'the transactions went through the conflict model').toBeGreaterThanOrEqual(n);
        }
      },
      60_000,
    );

    it('(b) 10 concurrent PUT /subscriptions/{id} with different mrr: 200s (409 at worst, never 5xx); the events form one unbroken chain; MRR = final mrr', async () => {
      const { stats, counts } = await raceUpdates(conflicts);
      console.info(
        `(b) 10 updates${conflicts ? ' under the conflict model' : ''}: answers ${JSON.stringify(counts)}${stats ? `, model ${JSON.stringify(stats)}` : ''}`,
      );
      if (stats) expect(stats.transactions, 'the transactions went through the conflict model').toBeGreaterThanOrEqual(10);
    }, 60_000);

    it.each(['active', 'paused', 'cancelled'] as const)(
      '(c) cancel + reactivate + pause racing on one %s subscription: a serial order explains answers, status and events; marker, MRR and totals follow the status',
      async (start) => {
        const { conflictsSeen } = await raceLifecycle(start, 4, conflicts);
        if (conflicts) console.info(`(c) from ${start}: ${conflictsSeen} transactions cancelled by the conflict model`);
      },
      60_000,
    );

    it('(c) reactivating a cancelled subscription races a new subscription for the same customer: exactly one takes the live slot', async () => {
      const wins = await raceSlot(4, conflicts);
      console.info(`(c) slot race${conflicts ? ' under the conflict model' : ''}: ${JSON.stringify(wins)}`);
    }, 60_000);
  });
});
