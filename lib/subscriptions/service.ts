import Decimal from 'decimal.js';
import { now } from '#lib/clock';
import { addTotal, listTotal, readTotals } from '#lib/db/counters';
import { keys, subscriptionIndexes } from '#lib/db/keys';
import { countQuery, listPage, type IndexQuery } from '#lib/db/query';
import { RetryableError, retrying } from '#lib/db/retry';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { allocateIds } from '#lib/db/sequences';
import { batchGet, keyId } from '#lib/db/batch-get';
import { addTimelineChange, readTimeline, scheduleTimeline, subscriptionTimeline, type Timeline } from '#lib/metrics';
import { itemAbsent, versionIs, WriteConflict, WriteSet } from '#lib/db/writes';
import { InvalidError, NotFoundError } from '#lib/errors';
import { liveCondition } from '#lib/customers/store';
import { addOutboxEvent } from '#lib/outbox/store';
import { formatTimestamp } from '#lib/shared/time';
import { addSubscriptionEvent, CUSTOMER_INVALID, type NewEvent } from '#lib/subscriptions/events';
import {
  afterTaking,
  EVENT_ID_BLOCK,
  heldEventId,
  presentSubscription,
  type Subscription,
  type SubscriptionItem,
} from '#lib/subscriptions/model';
import type {
  SubscriptionCancel,
  SubscriptionCreate,
  SubscriptionListQuery,
  SubscriptionPastDue,
  SubscriptionPause,
  SubscriptionReactivate,
  SubscriptionRecover,
  SubscriptionUpdate,
} from '#lib/subscriptions/schemas';
import { asOf, DEFAULT_DELINQUENCY_DAYS, isDue, scheduledMoves, type ScheduledKind } from '#lib/subscriptions/effective';
import {
  creationSteps,
  decide,
  newSubscription,
  reactivationRefused,
  type ChangeEvent,
  type Command,
  type Step,
} from '#lib/subscriptions/rules';
import { getSubscriptionItem, subscriptionIndexAttributes } from '#lib/subscriptions/store';
import type { AuthContext } from '#lib/auth/tokens';

/**
 * Subscriptions (docs/subscriptions.md). Every change is one transaction: the subscription (guarded by its
 * version), the live-subscription marker under the customer, the customer's current MRR (ADD of
 * the difference), the subscription event, list totals and the webhook outbox item — so there is
 * never a change without its event, nor the reverse. Each attempt reads by key and runs under the
 * one retry policy; a lost race is judged again from a fresh read.
 */

export const LIVE_TAKEN = 'The customer already has an active or paused subscription.';
/** Who changes a subscription: the merchant, and its reporting currency (what the figures count). */
export type Scope = Pick<AuthContext, 'merchantId' | 'reportingCurrency' | 'timezone' | 'generation' | 'delinquencyDays'>;
/** The merchant's `delinquency_days`. */
export const delinquencyOf = (scope: Scope) => scope.delinquencyDays ?? DEFAULT_DELINQUENCY_DAYS;
const ONE = new Decimal(1);

/** List totals follow the status (deleted subscriptions leave the lists). */
export const moveTotals = (ws: WriteSet, merchantId: string, before: SubscriptionItem | null, after: SubscriptionItem | null) => {
  const live = (s: SubscriptionItem | null) => (s && !s.deleted_at ? s : null);
  const b = live(before);
  const a = live(after);
  if (b?.status === a?.status) return;
  if (b) addTotal(ws, merchantId, 'SUBSCRIPTIONS', `subscriptions_${b.status}`, ONE.negated());
  if (a) addTotal(ws, merchantId, 'SUBSCRIPTIONS', `subscriptions_${a.status}`, ONE);
  if (!b !== !a) addTotal(ws, merchantId, 'SUBSCRIPTIONS', 'subscriptions', a ? ONE : ONE.negated());
};

/**
 * The customer's MRR timeline and the metrics aggregates follow the subscription's line
 * (docs/metrics.md); the timeline is read only when the line moves.
 */
const moveTimeline = async (ws: WriteSet, scope: Scope, before: SubscriptionItem, after: SubscriptionItem, effective: string) => {
  const customerId = Number(before.customer_id);
  const unchanged = {};
  const schedule = (s: SubscriptionItem) => JSON.stringify([s.currency, s.plan_name, s.billing_cycle, s.deleted_at, movesOf(scope, s)]);
  if (
    subscriptionTimeline(unchanged, before, after, effective, scope.reportingCurrency) === unchanged &&
    schedule(before) === schedule(after)
  )
    return;
  const timeline = await readTimeline(scope.merchantId, customerId);
  const lines = subscriptionTimeline(timeline.timeline, before, after, effective, scope.reportingCurrency);
  await addTimelineChange(ws, scope.merchantId, scope, customerId, timeline, withSchedule(lines, after, scope));
};

/** What the subscription's schedules will move (the forecast's), with the merchant's delinquency days. */
const movesOf = (scope: Scope, sub: SubscriptionItem) => scheduledMoves(sub, delinquencyOf(scope));
/** The customer's lines with the subscription's schedule line as it now is. */
export const withSchedule = (tl: Timeline, sub: SubscriptionItem, scope: Scope): Timeline =>
  scheduleTimeline(tl, sub, movesOf(scope, sub), scope.reportingCurrency);

/** The customer's timeline after a new subscription's steps (each from the state before it). */
export const stepsTimeline = (tl: Timeline, steps: Step[], reportingCurrency: string): Timeline => {
  let out = tl;
  steps.forEach((step, i) => {
    out = subscriptionTimeline(out, i ? steps[i - 1].state : null, step.state, step.effective, reportingCurrency);
  });
  return out;
};

/**
 * When the customer's live slot is held by a subscription whose scheduled cancellation is due,
 * applies it (the slot is free from then, as every read already shows) and says so.
 */
const settleLiveHolder = async (scope: Scope, customerId: number): Promise<boolean> => {
  const { Item } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.liveSubscription(scope.merchantId, customerId), ConsistentRead: true }),
  );
  const holder = Item ? await getSubscriptionItem(scope.merchantId, Number(Item.subscription_id)) : null;
  if (!holder || !isDue(holder, formatTimestamp(now()), delinquencyOf(scope))) return false;
  await settleDueChanges(scope, holder.id);
  return true;
};

const holdsLive = (id: number) => ({ expression: 'subscription_id = :sid', values: { ':sid': id } });

/** POST /subscriptions: customer live and without a live subscription, both decided inside the transaction. */
export const createSubscription = async (scope: Scope, input: SubscriptionCreate) => {
  const { merchantId } = scope;
  // Its created event's id (and a trial's conversion's, when it has ended already), and a block held for its later changes.
  const ids = await retrying(() => allocateIds(merchantId, { subscription: 1, subscription_event: 2 + EVENT_ID_BLOCK }));
  return retrying(async () => {
    const at = formatTimestamp(now());
    const created: SubscriptionItem = {
      ...newSubscription(
        {
          ...keys.subscription(merchantId, ids.subscription!),
          id: ids.subscription!,
          customer_id: input.customer_id,
          plan_name: input.plan_name,
          mrr: input.mrr,
          billing_cycle: input.billing_cycle,
          started_at: input.started_at,
          current_period_start: input.current_period_start,
          trial_ends_at: input.trial_ends_at,
          currency: scope.reportingCurrency,
          source: 'api',
        },
        at,
      ),
      event_ids_next: ids.subscription_event! + 2,
      event_ids_end: ids.subscription_event! + 2 + EVENT_ID_BLOCK,
    };
    // Created, and converted already when a back-dated trial has ended.
    const steps = creationSteps(created, at);
    const sub = steps[steps.length - 1].state;
    const timeline = await readTimeline(merchantId, input.customer_id);
    const ws = new WriteSet();
    ws.check('customer', keys.customer(merchantId, input.customer_id), liveCondition);
    ws.put(
      'live',
      { ...keys.liveSubscription(merchantId, input.customer_id), subscription_id: sub.id, customer_id: sub.customer_id },
      itemAbsent,
    );
    ws.put('subscription', { ...sub, ...subscriptionIndexAttributes(merchantId, sub) }, itemAbsent);
    moveTotals(ws, merchantId, null, sub);
    steps.forEach((step, i) => addChangeEvent(ws, merchantId, ids.subscription_event! + i, sub, step.event, at));
    const presented = presentSubscription(sub, scope.reportingCurrency);
    addOutboxEvent(ws, merchantId, 'subscription.created', presented, at);
    await addTimelineChange(
      ws,
      merchantId,
      scope,
      sub.customer_id,
      timeline,
      withSchedule(stepsTimeline(timeline.timeline, steps, scope.reportingCurrency), sub, scope),
    );
    try {
      await ws.commit();
    } catch (err) {
      if (err instanceof WriteConflict && err.tags.includes('customer')) throw InvalidError.field('customer_id', CUSTOMER_INVALID);
      if (err instanceof WriteConflict && err.tags.includes('live')) {
        if (await settleLiveHolder(scope, input.customer_id)) throw new RetryableError('contention', 'a due cancellation was applied');
        throw InvalidError.field('customer_id', LIVE_TAKEN);
      }
      throw err;
    }
    return presented;
  });
};

/** What a change records of itself: a subscription event's type, amounts, plans and time. */

/** Adds the subscription's event of a change (source api, or import for imported subscriptions). */
export const addChangeEvent = (
  ws: WriteSet,
  merchantId: string,
  id: number,
  sub: SubscriptionItem,
  e: ChangeEvent,
  at: string,
  source: NewEvent['source'] = 'api',
) =>
  addSubscriptionEvent(
    ws,
    merchantId,
    {
      id,
      customer_id: sub.customer_id,
      subscription_id: sub.id,
      event_type: e.type,
      source,
      old_amount: e.old_amount,
      new_amount: e.new_amount,
      old_plan: e.old_plan,
      new_plan: e.new_plan,
      occurred_at: e.occurred_at,
    },
    at,
  );

/**
 * Runs one state change: read the subscription by key, decide (lib/subscriptions/rules.ts: the
 * plan, or the 422 that refuses it), then one transaction guarded by the version read.
 */
const change = async (scope: Scope, id: number, command: Command): Promise<Subscription> => {
  const { merchantId } = scope;
  const subKey = keys.subscription(merchantId, id);
  // A fresh block of event ids, taken when the subscription's held block is used up; kept across
  // attempts (a lost race does not use it), so a retry does not take another.
  let fresh: number | undefined;
  return retrying(async () => {
    const found = Number.isSafeInteger(id) && id >= 1 ? await batchGet([subKey]) : new Map();
    const sub = found.get(keyId(subKey)) as SubscriptionItem | undefined;
    if (!sub || sub.deleted_at) throw new NotFoundError();
    const at = formatTimestamp(now());
    // A cancellation that has fallen due is applied first (if its scheduler has not run yet), so
    // every change starts from what every read already shows: a cancelled subscription.
    if (command.kind !== 'settleDue' && isDue(sub, at, delinquencyOf(scope))) {
      await change(scope, id, { kind: 'settleDue' });
      return change(scope, id, command);
    }
    const { next: planned, effective, event: e, webhook, unchanged } = decide(sub, command, at, delinquencyOf(scope));
    if (unchanged) return presentSubscription(sub, scope.reportingCurrency);
    // The event's id: from the subscription's held block, else from a fresh block (a standalone
    // ADD before the transaction, so the merchant's sequence is never held by it).
    const eventId = !e
      ? 0
      : (heldEventId(sub) ?? (fresh ??= (await allocateIds(merchantId, { subscription_event: EVENT_ID_BLOCK })).subscription_event!));
    const held = e ? afterTaking(sub, eventId) : {};
    const next: SubscriptionItem = { ...planned, ...held, updated_at: at, changed_at: effective, version: sub.version + 1 };
    const ws = new WriteSet();
    ws.put('subscription', { ...next, ...subscriptionIndexAttributes(merchantId, next) }, versionIs(sub.version));
    const wasLive = sub.status !== 'cancelled';
    const isLive = next.status !== 'cancelled';
    const liveKey = keys.liveSubscription(merchantId, sub.customer_id);
    if (wasLive && !isLive) ws.delete('live', liveKey, holdsLive(sub.id));
    if (!wasLive && isLive) ws.put('live', { ...liveKey, subscription_id: sub.id, customer_id: sub.customer_id }, itemAbsent);
    moveTotals(ws, merchantId, sub, next);
    if (e) addChangeEvent(ws, merchantId, eventId, next, e, at);
    const presented = presentSubscription(next, scope.reportingCurrency);
    addOutboxEvent(ws, merchantId, webhook, presented, at);
    await moveTimeline(ws, scope, sub, next, effective);
    try {
      await ws.commit();
    } catch (err) {
      if (err instanceof WriteConflict && err.tags.includes('live') && !err.tags.includes('subscription')) {
        if (await settleLiveHolder(scope, sub.customer_id)) throw new RetryableError('contention', 'a due cancellation was applied');
        throw reactivationRefused();
      }
      throw err; // the version moved (or a race on the marker): read again
    }
    return presented;
  });
};

/**
 * The scheduler's call at a scheduled change's time (AWS: the state machine; locally: `npm
 * start`'s timer): a trial's conversion, a cancellation, a delinquent cancellation. `dueAt` is the
 * time it was armed for: a schedule replaced or cleared since then does nothing, and a second call
 * for one schedule finds it applied and does nothing. Every change due by now is applied, in order.
 */
export const applyScheduledChange = async (
  scope: Scope,
  subscriptionId: number,
  armed: { kind: ScheduledKind; armedAt: string },
): Promise<boolean> => {
  const sub = await getSubscriptionItem(scope.merchantId, subscriptionId);
  if (!sub || !isArmedFor(sub, armed.kind, armed.armedAt) || !isDue(sub, formatTimestamp(now()), delinquencyOf(scope))) return false;
  await settleDueChanges(scope, subscriptionId);
  return true;
};

/** Whether the subscription still has the schedule a timer was armed for. */
const isArmedFor = (sub: SubscriptionItem, kind: ScheduledKind, armedAt: string) => {
  if (sub.deleted_at || sub.status === 'cancelled') return false;
  if (kind === 'cancel') return sub.cancel_at === armedAt;
  if (kind === 'convert') return sub.status === 'trialing' && sub.trial_ends_at === armedAt;
  return sub.status === 'past_due' && sub.failed_at === armedAt;
};

/** Applies the subscription's scheduled changes due by now, earliest first; the subscription after them. */
export const settleDueChanges = async (scope: Scope, subscriptionId: number): Promise<Subscription> => {
  let out = await change(scope, subscriptionId, { kind: 'settleDue' });
  // Each change applies one (a conversion, then a cancellation due as well): at most three are scheduled.
  for (let i = 0; i < 2 && isDue(out, formatTimestamp(now()), delinquencyOf(scope)); i++)
    out = await change(scope, subscriptionId, { kind: 'settleDue' });
  return out;
};

/** PUT /subscriptions/{id}: plan, mrr, period, or a scheduled cancellation (rules: `decide`). */
export const updateSubscription = (scope: Scope, id: number, input: SubscriptionUpdate) => change(scope, id, { kind: 'update', input });
/** PUT /subscriptions/{id}/cancel. */
export const cancelSubscription = (scope: Scope, id: number, input: SubscriptionCancel) => change(scope, id, { kind: 'cancel', input });
/** PUT /subscriptions/{id}/pause. */
export const pauseSubscription = (scope: Scope, id: number, input: SubscriptionPause) => change(scope, id, { kind: 'pause', input });
/** PUT /subscriptions/{id}/reactivate (the customer's live slot is decided by the transaction's marker put). */
export const reactivateSubscription = (scope: Scope, id: number, input: SubscriptionReactivate) =>
  change(scope, id, { kind: 'reactivate', input });
/** PUT /subscriptions/{id}/past-due: a failed renewal (its mrr counts until recovered or delinquent). */
export const pastDueSubscription = (scope: Scope, id: number, input: SubscriptionPastDue) => change(scope, id, { kind: 'pastDue', input });
/** PUT /subscriptions/{id}/recover: the failed renewal was paid. */
export const recoverSubscription = (scope: Scope, id: number, input: SubscriptionRecover) => change(scope, id, { kind: 'recover', input });

/**
 * DELETE /subscriptions/{id}: soft. It leaves the lists, releases the customer's live slot and
 * stops counting towards the customer's MRR; its events stay. No subscription event, no webhook.
 */
export const deleteSubscription = async (scope: Scope, id: number): Promise<void> => {
  const { merchantId } = scope;
  await retrying(async () => {
    const sub = await getSubscriptionItem(merchantId, id);
    if (!sub || sub.deleted_at) throw new NotFoundError();
    const at = formatTimestamp(now());
    // Without its index attributes: a deleted subscription leaves every list.
    const {
      gsi1pk: _1,
      gsi1sk: _2,
      gsi2pk: _3,
      gsi2sk: _4,
      gsi3pk: _5,
      gsi3sk: _6,
      ...rest
    } = sub as SubscriptionItem & Record<string, unknown>;
    const deleted: SubscriptionItem = { ...(rest as SubscriptionItem), deleted_at: at, updated_at: at, version: sub.version + 1 };
    const ws = new WriteSet();
    ws.put('subscription', deleted, versionIs(sub.version));
    if (sub.status !== 'cancelled') ws.delete('live', keys.liveSubscription(merchantId, sub.customer_id), holdsLive(sub.id));
    // Its external id is free again: the corrected subscription may be imported under it.
    if (sub.external_id) ws.delete('external_id', keys.subscriptionExternalId(merchantId, sub.external_id), holdsLive(sub.id));
    moveTotals(ws, merchantId, sub, deleted);
    await moveTimeline(ws, scope, sub, deleted, at);
    await ws.commit();
  });
};

/** GET /subscriptions/{id}: live (not deleted) subscriptions. */
export const getSubscription = async (scope: Scope, id: number) => {
  const sub = await getSubscriptionItem(scope.merchantId, id);
  if (!sub || sub.deleted_at) throw new NotFoundError();
  return presentSubscription(asOf(sub, formatTimestamp(now()), delinquencyOf(scope)), scope.reportingCurrency);
};

/**
 * GET /subscriptions, newest first. By customer (gsi3), else by status (gsi2), else all (gsi1);
 * plan_name (and status with a customer) filter within. Unfiltered or by status only, the total
 * comes from the sharded counters, so page 1 stays flat.
 */
export const listSubscriptions = async (scope: Scope, q: SubscriptionListQuery) => {
  const { merchantId } = scope;
  const filters: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const filterOn = (attr: string, value: unknown) => {
    filters.push(`#f${filters.length} = :f${filters.length}`);
    names[`#f${filters.length - 1}`] = attr;
    values[`:f${filters.length - 1}`] = value;
  };
  let query: IndexQuery;
  if (q.customer_id !== undefined) {
    query = { index: 'gsi3', partition: subscriptionIndexes.partitions.byCustomer(merchantId, q.customer_id) };
    if (q.status) filterOn('status', q.status);
  } else if (q.status) {
    query = { index: 'gsi2', partition: subscriptionIndexes.partitions.byStatus(merchantId, q.status) };
  } else {
    query = { index: 'gsi1', partition: subscriptionIndexes.partitions.all(merchantId) };
  }
  if (q.plan_name) filterOn('plan_name', q.plan_name);
  if (filters.length) query = { ...query, filter: { expression: filters.join(' AND '), names, values } };
  // Each row's customer is read with the page (the same BatchGetItem), so the list names it.
  query = { ...query, companion: (row) => keys.customer(merchantId, Number(row.customer_id)) };
  const byTotals = q.customer_id === undefined && !q.plan_name;
  // The totals shards come in the BatchGetItem that reads the page's customers.
  const count = byTotals
    ? listTotal(merchantId, 'SUBSCRIPTIONS', q.status ? `subscriptions_${q.status}` : 'subscriptions')
    : () => countQuery(query);
  const { items, meta, companions } = await listPage<SubscriptionItem>(merchantId, query, count, q);
  const at = formatTimestamp(now());
  return {
    data: items.map((s) => {
      const customer = companions?.get(keyId(keys.customer(merchantId, Number(s.customer_id)))) as
        | { email?: string; name?: string | null }
        | undefined;
      return {
        ...presentSubscription(asOf(s, at, delinquencyOf(scope)), scope.reportingCurrency),
        customer_email: customer?.email ?? null,
        customer_name: customer?.name ?? null,
      };
    }),
    meta,
  };
};
