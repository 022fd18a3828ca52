import Decimal from 'decimal.js';
import { now } from '#lib/clock';
import { addTotal, readTotals } from '#lib/db/counters';
import { keys, subscriptionIndexes } from '#lib/db/keys';
import { countQuery, listPage, type IndexQuery } from '#lib/db/query';
import { retrying } from '#lib/db/retry';
import { allocateIds, claimIds } from '#lib/db/sequences';
import { batchGet, keyId } from '#lib/db/batch-get';
import { addTimelineChange, readTimeline } from '#lib/metrics/store';
import { subscriptionTimeline } from '#lib/metrics/lines';
import { itemAbsent, versionIs, WriteConflict, WriteSet } from '#lib/db/writes';
import { InvalidError, NotFoundError } from '#lib/errors';
import { liveCondition } from '#lib/customers/store';
import { addOutboxEvent, type EventType } from '#lib/outbox';
import { paginated } from '#lib/shared/pagination';
import { formatTimestamp } from '#lib/shared/time';
import { addSubscriptionEvent, CUSTOMER_INVALID, type NewEvent } from '#lib/subscriptions/events';
import { mrrContribution, presentSubscription, type SubscriptionItem } from '#lib/subscriptions/model';
import type {
  SubscriptionCancel,
  SubscriptionCreate,
  SubscriptionListQuery,
  SubscriptionPause,
  SubscriptionReactivate,
  SubscriptionStatus,
  SubscriptionUpdate,
} from '#lib/subscriptions/schemas';
import { effectiveTime } from '#lib/subscriptions/effective';
import { getSubscriptionItem, subscriptionIndexAttributes } from '#lib/subscriptions/store';
import { idFromPath } from '#lib/shared/ids';

/**
 * Subscriptions (decisions §7). Every change is one transaction: the subscription (guarded by its
 * version), the live-subscription marker under the customer, the customer's current MRR (ADD of
 * the difference), the subscription event, list totals and the webhook outbox item — so there is
 * never a change without its event, nor the reverse. Each attempt reads by key and runs under the
 * one retry policy; a lost race is judged again from a fresh read.
 */

export const LIVE_TAKEN = 'The customer already has an active or paused subscription.';
const ONE = new Decimal(1);

/** The customer's current MRR moves by the change in this subscription's contribution. */
const moveCustomerMrr = (ws: WriteSet, merchantId: string, customerId: number, before: SubscriptionItem | null, after: SubscriptionItem | null) => {
  const delta = new Decimal(mrrContribution(after)).minus(mrrContribution(before));
  if (delta.isZero()) return;
  ws.update('customer-mrr', keys.customerMrr(merchantId, customerId)).add('mrr', delta).add('version', ONE);
};

/** List totals follow the status (deleted subscriptions leave the lists). */
const moveTotals = (ws: WriteSet, merchantId: string, before: SubscriptionItem | null, after: SubscriptionItem | null) => {
  const live = (s: SubscriptionItem | null) => (s && !s.deleted_at ? s : null);
  const b = live(before);
  const a = live(after);
  if (b?.status === a?.status) return;
  if (b) addTotal(ws, merchantId, 'SUBSCRIPTIONS', `subscriptions_${b.status}`, ONE.negated());
  if (a) addTotal(ws, merchantId, 'SUBSCRIPTIONS', `subscriptions_${a.status}`, ONE);
  if (!b !== !a) addTotal(ws, merchantId, 'SUBSCRIPTIONS', 'subscriptions', a ? ONE : ONE.negated());
};

/**
 * The customer's MRR timeline and the metrics aggregates follow the subscription's line (decisions
 * §9); the timeline is read only when the line moves. `field` is what a 422 blames when the
 * reclassification does not fit the transaction.
 */
const moveTimeline = async (ws: WriteSet, merchantId: string, before: SubscriptionItem, after: SubscriptionItem, effective: string, field: string) => {
  const customerId = Number(before.customer_id);
  const unchanged = {};
  if (subscriptionTimeline(unchanged, before, after, effective) === unchanged) return;
  const timeline = await readTimeline(merchantId, customerId);
  addTimelineChange(ws, merchantId, customerId, timeline, subscriptionTimeline(timeline.timeline, before, after, effective), field);
};

const holdsLive = (id: number) => ({ expression: 'subscription_id = :sid', values: { ':sid': id } });

/** POST /subscriptions: customer live and without a live subscription, both decided inside the transaction. */
export const createSubscription = async (merchantId: string, input: SubscriptionCreate) => {
  const ids = await retrying(() => allocateIds(merchantId, { subscription: 1, subscription_event: 1 }));
  return retrying(async () => {
    const at = formatTimestamp(now());
    const startedAt = input.started_at ?? at;
    const sub: SubscriptionItem = {
      ...keys.subscription(merchantId, ids.subscription!),
      id: ids.subscription!,
      customer_id: input.customer_id,
      status: 'active',
      plan_name: input.plan_name,
      mrr: input.mrr,
      billing_cycle: input.billing_cycle,
      source: 'api',
      started_at: startedAt,
      current_period_start: input.current_period_start ?? startedAt,
      cancelled_at: null,
      paused_at: null,
      cancel_reason: null,
      created_at: at,
      updated_at: at,
      changed_at: startedAt,
      version: 1,
    };
    const timeline = await readTimeline(merchantId, input.customer_id);
    const ws = new WriteSet();
    ws.check('customer', keys.customer(merchantId, input.customer_id), liveCondition);
    ws.put('live', { ...keys.liveSubscription(merchantId, input.customer_id), subscription_id: sub.id, customer_id: sub.customer_id }, itemAbsent);
    ws.put('subscription', { ...sub, ...subscriptionIndexAttributes(merchantId, sub) }, itemAbsent);
    moveCustomerMrr(ws, merchantId, sub.customer_id, null, sub);
    moveTotals(ws, merchantId, null, sub);
    event(ws, merchantId, ids.subscription_event!, sub, 'created', '0', sub.mrr, null, sub.plan_name, startedAt, at);
    const presented = presentSubscription(sub);
    addOutboxEvent(ws, merchantId, 'subscription.created', presented, at);
    addTimelineChange(ws, merchantId, sub.customer_id, timeline, subscriptionTimeline(timeline.timeline, null, sub, at), 'started_at');
    try {
      await ws.commit();
    } catch (err) {
      if (err instanceof WriteConflict && err.tags.includes('customer')) throw InvalidError.field('customer_id', CUSTOMER_INVALID);
      if (err instanceof WriteConflict && err.tags.includes('live')) throw InvalidError.field('customer_id', LIVE_TAKEN);
      throw err;
    }
    return presented;
  });
};

const event = (
  ws: WriteSet,
  merchantId: string,
  id: number,
  sub: SubscriptionItem,
  type: NewEvent['event_type'],
  oldAmount: string,
  newAmount: string,
  oldPlan: string | null,
  newPlan: string | null,
  occurredAt: string,
  at: string,
) =>
  addSubscriptionEvent(
    ws,
    merchantId,
    {
      id,
      customer_id: sub.customer_id,
      subscription_id: sub.id,
      event_type: type,
      source: 'api',
      old_amount: oldAmount,
      new_amount: newAmount,
      old_plan: oldPlan,
      new_plan: newPlan,
      occurred_at: occurredAt,
    },
    at,
  );

/** A planned change: the next state, when it takes effect, its event (if any) and its webhook type. */
type Plan = {
  next: SubscriptionItem;
  effective: string;
  event?: { type: NewEvent['event_type']; old_amount: string; new_amount: string; old_plan: string | null; new_plan: string | null; occurred_at: string };
  webhook: EventType;
  /** Nothing changes: answer with the stored subscription and write nothing (no webhook). */
  unchanged?: boolean;
};

const refuse = (message: string) => InvalidError.field('status', message);

/**
 * Runs one state change: read the subscription by key, plan the move (or refuse it with a 422 on
 * status), then one transaction guarded by the version read.
 */
const change = async (merchantId: string, segment: string, plan: (sub: SubscriptionItem, at: string) => Plan, field = 'status') => {
  const id = idFromPath(segment);
  const subKey = keys.subscription(merchantId, id);
  const seqKey = keys.sequences(merchantId);
  return retrying(async () => {
    // The subscription and the id sequence in one request: the event id is claimed in the transaction.
    const found = Number.isSafeInteger(id) && id >= 1 ? await batchGet([subKey, seqKey]) : new Map();
    const sub = found.get(keyId(subKey)) as SubscriptionItem | undefined;
    if (!sub || sub.deleted_at) throw new NotFoundError();
    const at = formatTimestamp(now());
    const { next: planned, effective, event: e, webhook, unchanged } = plan(sub, at);
    if (unchanged) return presentSubscription(sub);
    const next: SubscriptionItem = { ...planned, updated_at: at, changed_at: effective, version: sub.version + 1 };
    const ws = new WriteSet();
    const eventId = e ? claimIds(ws, merchantId, found.get(keyId(seqKey)), 'subscription_event') : 0;
    ws.put('subscription', { ...next, ...subscriptionIndexAttributes(merchantId, next) }, versionIs(sub.version));
    const wasLive = sub.status !== 'cancelled';
    const isLive = next.status !== 'cancelled';
    const liveKey = keys.liveSubscription(merchantId, sub.customer_id);
    if (wasLive && !isLive) ws.delete('live', liveKey, holdsLive(sub.id));
    if (!wasLive && isLive) ws.put('live', { ...liveKey, subscription_id: sub.id, customer_id: sub.customer_id }, itemAbsent);
    moveCustomerMrr(ws, merchantId, sub.customer_id, sub, next);
    moveTotals(ws, merchantId, sub, next);
    if (e) event(ws, merchantId, eventId, next, e.type, e.old_amount, e.new_amount, e.old_plan, e.new_plan, e.occurred_at, at);
    const presented = presentSubscription(next);
    addOutboxEvent(ws, merchantId, webhook, presented, at);
    await moveTimeline(ws, merchantId, sub, next, effective, field);
    try {
      await ws.commit();
    } catch (err) {
      if (err instanceof WriteConflict && err.tags.includes('live') && !err.tags.includes('subscription')) {
        throw refuse('The subscription cannot be reactivated: the customer has another active or paused subscription.');
      }
      throw err; // the version moved (or a race on the marker): read again
    }
    return presented;
  });
};

const same = (a: string, b: string) => new Decimal(a).eq(b);

/** PUT /subscriptions/{id}: active or paused only; mrr up → upgrade, down → downgrade, equal → no event. */
export const updateSubscription = (merchantId: string, segment: string, input: SubscriptionUpdate) =>
  change(merchantId, segment, (sub, at) => {
    if (sub.status === 'cancelled') throw refuse('A cancelled subscription cannot be updated.');
    const effective = effectiveTime(sub, input.effective_at, 'effective_at', at);
    const next: SubscriptionItem = {
      ...sub,
      plan_name: input.plan_name ?? sub.plan_name,
      mrr: input.mrr ?? sub.mrr,
      current_period_start: input.current_period_start ?? sub.current_period_start,
    };
    const moved = !same(next.mrr, sub.mrr);
    const unchanged = !moved && next.plan_name === sub.plan_name && next.current_period_start === sub.current_period_start;
    return {
      next,
      effective,
      unchanged,
      webhook: 'subscription.updated',
      ...(moved
        ? {
            event: {
              type: new Decimal(next.mrr).gt(sub.mrr) ? 'upgrade' : 'downgrade',
              old_amount: sub.mrr,
              new_amount: next.mrr,
              old_plan: sub.plan_name,
              new_plan: next.plan_name,
              occurred_at: effective,
            },
          }
        : {}),
    } as Plan;
  }, 'effective_at');

/** PUT /subscriptions/{id}/cancel: from active or paused; a `cancel` event at cancelled_at. */
export const cancelSubscription = (merchantId: string, segment: string, input: SubscriptionCancel) =>
  change(merchantId, segment, (sub, at) => {
    if (sub.status === 'cancelled') throw refuse('The subscription is already cancelled.');
    const cancelledAt = effectiveTime(sub, input.cancelled_at, 'cancelled_at', at);
    return {
      next: { ...sub, status: 'cancelled', cancelled_at: cancelledAt, paused_at: null, cancel_reason: input.reason ?? null },
      effective: cancelledAt,
      event: { type: 'cancel', old_amount: sub.mrr, new_amount: '0', old_plan: sub.plan_name, new_plan: sub.plan_name, occurred_at: cancelledAt },
      webhook: 'subscription.cancelled',
    };
  }, 'cancelled_at');

/** PUT /subscriptions/{id}/pause: from active only; its mrr stops counting; no subscription event. */
export const pauseSubscription = (merchantId: string, segment: string, input: SubscriptionPause) =>
  change(merchantId, segment, (sub, at) => {
    if (sub.status === 'paused') throw refuse('The subscription is already paused.');
    if (sub.status === 'cancelled') throw refuse('A cancelled subscription cannot be paused.');
    const pausedAt = effectiveTime(sub, input.paused_at, 'paused_at', at);
    return { next: { ...sub, status: 'paused' as SubscriptionStatus, paused_at: pausedAt }, effective: pausedAt, webhook: 'subscription.paused' };
  }, 'paused_at');

/**
 * PUT /subscriptions/{id}/reactivate: from paused, or from cancelled when the customer has no
 * other live subscription (the marker put decides, in the transaction); a `reactivated` event.
 */
export const reactivateSubscription = (merchantId: string, segment: string, input: SubscriptionReactivate) =>
  change(merchantId, segment, (sub, at) => {
    if (sub.status === 'active') throw refuse('The subscription is already active.');
    const reactivatedAt = effectiveTime(sub, input.reactivated_at, 'reactivated_at', at);
    return {
      next: { ...sub, status: 'active', cancelled_at: null, paused_at: null, cancel_reason: null },
      effective: reactivatedAt,
      event: { type: 'reactivated', old_amount: '0', new_amount: sub.mrr, old_plan: sub.plan_name, new_plan: sub.plan_name, occurred_at: reactivatedAt },
      webhook: 'subscription.reactivated',
    };
  }, 'reactivated_at');

/**
 * DELETE /subscriptions/{id}: soft. It leaves the lists, releases the customer's live slot and
 * stops counting towards the customer's MRR; its events stay. No subscription event, no webhook.
 */
export const deleteSubscription = async (merchantId: string, segment: string): Promise<void> => {
  const id = idFromPath(segment);
  await retrying(async () => {
    const sub = await getSubscriptionItem(merchantId, id);
    if (!sub || sub.deleted_at) throw new NotFoundError();
    const at = formatTimestamp(now());
    // Without its index attributes: a deleted subscription leaves every list.
    const { gsi1pk: _1, gsi1sk: _2, gsi2pk: _3, gsi2sk: _4, gsi3pk: _5, gsi3sk: _6, ...rest } = sub as SubscriptionItem & Record<string, unknown>;
    const deleted: SubscriptionItem = { ...(rest as SubscriptionItem), deleted_at: at, updated_at: at, version: sub.version + 1 };
    const ws = new WriteSet();
    ws.put('subscription', deleted, versionIs(sub.version));
    if (sub.status !== 'cancelled') ws.delete('live', keys.liveSubscription(merchantId, sub.customer_id), holdsLive(sub.id));
    moveCustomerMrr(ws, merchantId, sub.customer_id, sub, null);
    moveTotals(ws, merchantId, sub, deleted);
    await moveTimeline(ws, merchantId, sub, deleted, at, 'id');
    await ws.commit();
  });
};

/** GET /subscriptions/{id}: live (not deleted) subscriptions. */
export const getSubscription = async (merchantId: string, segment: string) => {
  const sub = await getSubscriptionItem(merchantId, idFromPath(segment));
  if (!sub || sub.deleted_at) throw new NotFoundError();
  return presentSubscription(sub);
};

/**
 * GET /subscriptions, newest first. By customer (gsi3), else by status (gsi2), else all (gsi1);
 * plan_name (and status with a customer) filter within. Unfiltered or by status only, the total
 * comes from the sharded counters, so page 1 stays flat.
 */
export const listSubscriptions = async (merchantId: string, q: SubscriptionListQuery) => {
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
  const byTotals = q.customer_id === undefined && !q.plan_name;
  const count = async () =>
    byTotals ? ((await readTotals(merchantId, 'SUBSCRIPTIONS'))[q.status ? `subscriptions_${q.status}` : 'subscriptions']?.toNumber() ?? 0) : countQuery(query);
  const { items, total } = await listPage<SubscriptionItem>(query, count, q.page, q.per_page);
  return paginated(items.map(presentSubscription), q.page, q.per_page, total);
};
