import Decimal from 'decimal.js';
import { InvalidError } from '#lib/errors';
import type { EventType } from '#lib/outbox/store';
import { effectiveTime, isDue, latestChangeAt } from '#lib/subscriptions/effective';
import type { SubscriptionItem } from '#lib/subscriptions/model';
import type {
  SubscriptionCancel,
  SubscriptionPause,
  SubscriptionReactivate,
  SubscriptionStatus,
  SubscriptionUpdate,
} from '#lib/subscriptions/schemas';
import type { NewEvent } from '#lib/subscriptions/events';

/**
 * The subscription lifecycle's rules (docs/subscriptions.md), pure: `decide(sub, command, at)`
 * plans a change (the next state, when it takes effect, its event and webhook) or refuses it with
 * a 422. No database, no HTTP: the service reads, decides and persists.
 */

export type ChangeEvent = {
  type: NewEvent['event_type'];
  old_amount: string;
  new_amount: string;
  old_plan: string | null;
  new_plan: string | null;
  occurred_at: string;
};

/** A planned change: the next state, when it takes effect, its event (if any) and its webhook type. */
export type Plan = {
  next: SubscriptionItem;
  effective: string;
  event?: ChangeEvent;
  webhook: EventType;
  /** Nothing changes: answer with the stored subscription and write nothing (no webhook). */
  unchanged?: boolean;
};

export type Command =
  | { kind: 'update'; input: SubscriptionUpdate }
  | { kind: 'cancel'; input: SubscriptionCancel }
  | { kind: 'pause'; input: SubscriptionPause }
  | { kind: 'reactivate'; input: SubscriptionReactivate }
  /** A scheduled cancellation that has fallen due (the scheduler's call, or before any other change). */
  | { kind: 'settleDue' };

/** The field a refusal of the command's time names, and what a reclassification that cannot fit blames. */
export const TIME_FIELD: Record<Command['kind'], string> = {
  update: 'effective_at',
  cancel: 'cancelled_at',
  pause: 'paused_at',
  reactivate: 'reactivated_at',
  settleDue: 'status',
};

/** A subscription's `created` event, at its start. */
export const createdEvent = (sub: SubscriptionItem): ChangeEvent => ({
  type: 'created',
  old_amount: '0',
  new_amount: sub.mrr,
  old_plan: null,
  new_plan: sub.plan_name,
  occurred_at: sub.started_at,
});
/** Its `cancel` event, at cancelled_at. */
export const cancelEvent = (sub: SubscriptionItem, cancelledAt: string): ChangeEvent => ({
  type: 'cancel',
  old_amount: sub.mrr,
  new_amount: '0',
  old_plan: sub.plan_name,
  new_plan: sub.plan_name,
  occurred_at: cancelledAt,
});

const refuse = (message: string) => InvalidError.field('status', message);
/** The refusal when the transaction finds the customer's live slot taken by another subscription. */
export const reactivationRefused = () =>
  refuse('The subscription cannot be reactivated: the customer has another active or paused subscription.');
const same = (a: string, b: string) => new Decimal(a).eq(b);

/** A schedule (a future cancelled_at, or cancel_at) must be later than now. */
const scheduleAfterNow = (field: string, value: string, at: string) => {
  if (value <= at) throw InvalidError.field(field, `The ${field.replace(/_/g, ' ')} field must be a date after now.`);
};

/**
 * A scheduled cancellation once it is due: cancelled at `cancel_at` (its `cancel` event there, the
 * line at 0 from then), `subscription.cancelled` delivered. Nothing when it is not due.
 */
const settleDue = (sub: SubscriptionItem, at: string): Plan => {
  if (!isDue(sub, at)) return { next: sub, effective: latestChangeAt(sub), webhook: 'subscription.cancelled', unchanged: true };
  const cancelledAt = sub.cancel_at!;
  return {
    next: { ...sub, status: 'cancelled', cancelled_at: cancelledAt, cancel_at: null, paused_at: null },
    effective: cancelledAt,
    event: cancelEvent(sub, cancelledAt),
    webhook: 'subscription.cancelled',
  };
};

/** PUT /subscriptions/{id}: active or paused only; mrr up → upgrade, down → downgrade, equal → no event. */
const update = (sub: SubscriptionItem, input: SubscriptionUpdate, at: string): Plan => {
  if (sub.status === 'cancelled') throw refuse('A cancelled subscription cannot be updated.');
  const effective = effectiveTime(sub, input.effective_at, 'effective_at', at);
  const next: SubscriptionItem = {
    ...sub,
    plan_name: input.plan_name ?? sub.plan_name,
    mrr: input.mrr ?? sub.mrr,
    current_period_start: input.current_period_start ?? sub.current_period_start,
  };
  if (input.cancel_at !== undefined) {
    if (input.cancel_at !== null) scheduleAfterNow('cancel_at', input.cancel_at, at);
    next.cancel_at = input.cancel_at;
  }
  const moved = !same(next.mrr, sub.mrr);
  const unchanged =
    !moved &&
    next.plan_name === sub.plan_name &&
    next.current_period_start === sub.current_period_start &&
    (next.cancel_at ?? null) === (sub.cancel_at ?? null);
  const event: ChangeEvent | undefined = moved
    ? {
        type: new Decimal(next.mrr).gt(sub.mrr) ? 'upgrade' : 'downgrade',
        old_amount: sub.mrr,
        new_amount: next.mrr,
        old_plan: sub.plan_name,
        new_plan: next.plan_name,
        occurred_at: effective,
      }
    : undefined;
  return { next, effective, unchanged, webhook: 'subscription.updated', ...(event ? { event } : {}) };
};

/** PUT /subscriptions/{id}/cancel: from active or paused; a `cancel` event at cancelled_at, or a schedule for a future one. */
const cancel = (sub: SubscriptionItem, input: SubscriptionCancel, at: string): Plan => {
  if (sub.status === 'cancelled') throw refuse('The subscription is already cancelled.');
  const cancelledAt = effectiveTime(sub, input.cancelled_at, 'cancelled_at', at);
  if (input.cancelled_at && cancelledAt > at) {
    // A future date given: scheduled (without one, a subscription not started yet is cancelled at its start, now). It counts until then and reads as cancelled from then; a later cancel replaces the schedule.
    return {
      next: { ...sub, cancel_at: cancelledAt, cancel_reason: input.reason ?? null },
      effective: latestChangeAt(sub),
      webhook: 'subscription.updated',
    };
  }
  return {
    next: { ...sub, status: 'cancelled', cancelled_at: cancelledAt, cancel_at: null, paused_at: null, cancel_reason: input.reason ?? null },
    effective: cancelledAt,
    event: cancelEvent(sub, cancelledAt),
    webhook: 'subscription.cancelled',
  };
};

/** PUT /subscriptions/{id}/pause: from active only; its mrr stops counting; no subscription event. */
const pause = (sub: SubscriptionItem, input: SubscriptionPause, at: string): Plan => {
  if (sub.status === 'paused') throw refuse('The subscription is already paused.');
  if (sub.status === 'cancelled') throw refuse('A cancelled subscription cannot be paused.');
  const pausedAt = effectiveTime(sub, input.paused_at, 'paused_at', at);
  return {
    next: { ...sub, status: 'paused' as SubscriptionStatus, paused_at: pausedAt },
    effective: pausedAt,
    webhook: 'subscription.paused',
  };
};

/**
 * PUT /subscriptions/{id}/reactivate: from paused, or from cancelled (whether the customer's live
 * slot is free is decided by the transaction); a `reactivated` event. An active subscription with
 * a scheduled cancellation keeps going: the schedule is cleared, nothing else moves.
 */
const reactivate = (sub: SubscriptionItem, input: SubscriptionReactivate, at: string): Plan => {
  if (sub.status === 'active' && sub.cancel_at) {
    return { next: { ...sub, cancel_at: null, cancel_reason: null }, effective: latestChangeAt(sub), webhook: 'subscription.reactivated' };
  }
  if (sub.status === 'active') throw refuse('The subscription is already active.');
  const reactivatedAt = effectiveTime(sub, input.reactivated_at, 'reactivated_at', at);
  return {
    next: { ...sub, status: 'active', cancelled_at: null, cancel_at: null, paused_at: null, cancel_reason: null },
    effective: reactivatedAt,
    event: {
      type: 'reactivated',
      old_amount: '0',
      new_amount: sub.mrr,
      old_plan: sub.plan_name,
      new_plan: sub.plan_name,
      occurred_at: reactivatedAt,
    },
    webhook: 'subscription.reactivated',
  };
};

/** Plans `command` on `sub` at `at` (now), or throws the 422 that refuses it. */
export const decide = (sub: SubscriptionItem, command: Command, at: string): Plan => {
  switch (command.kind) {
    case 'update':
      return update(sub, command.input, at);
    case 'cancel':
      return cancel(sub, command.input, at);
    case 'pause':
      return pause(sub, command.input, at);
    case 'reactivate':
      return reactivate(sub, command.input, at);
    case 'settleDue':
      return settleDue(sub, at);
  }
};
