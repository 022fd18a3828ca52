import Decimal from 'decimal.js';
import { InvalidError } from '#lib/errors';
import type { EventType } from '#lib/outbox/store';
import { applyScheduled, DEFAULT_DELINQUENCY_DAYS, dueChange, effectiveTime, latestChangeAt } from '#lib/subscriptions/effective';
import type { SubscriptionItem } from '#lib/subscriptions/model';
import type {
  SubscriptionCancel,
  SubscriptionPastDue,
  SubscriptionPause,
  SubscriptionReactivate,
  SubscriptionRecover,
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
  | { kind: 'pastDue'; input: SubscriptionPastDue }
  | { kind: 'recover'; input: SubscriptionRecover }
  /** A scheduled change that has fallen due (the scheduler's call, or before any other change). */
  | { kind: 'settleDue' };

/** The field a refusal of the command's time names, and what a reclassification that cannot fit blames. */
export const TIME_FIELD: Record<Command['kind'], string> = {
  update: 'effective_at',
  cancel: 'cancelled_at',
  pause: 'paused_at',
  reactivate: 'reactivated_at',
  pastDue: 'failed_at',
  recover: 'recovered_at',
  settleDue: 'status',
};

/** A subscription's `created` event, at its start (a trial's: at 0, its mrr counts from its conversion). */
export const createdEvent = (sub: SubscriptionItem): ChangeEvent => ({
  type: 'created',
  old_amount: '0',
  new_amount: sub.trial_ends_at ? '0' : sub.mrr,
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
 * The earliest scheduled change once it is due (docs/subscriptions.md): a trial converts at
 * `trial_ends_at` (`trial_converted`, its mrr counting from then); a scheduled cancellation is
 * applied at `cancel_at` (a trial's ends it unconverted, `trial_cancelled`); a past-due subscription
 * is cancelled `delinquencyDays` after `failed_at`, reason `delinquent`. Nothing when none is due.
 */
const settleDue = (sub: SubscriptionItem, at: string, delinquencyDays: number): Plan => {
  const due = dueChange(sub, at, delinquencyDays);
  if (!due) return { next: sub, effective: latestChangeAt(sub), webhook: 'subscription.cancelled', unchanged: true };
  const next = applyScheduled(sub, due);
  if (due.kind === 'convert')
    return { next, effective: due.at, event: convertedEvent(sub, due.at), webhook: 'subscription.trial_converted' };
  if (sub.status === 'trialing')
    return { next, effective: due.at, event: trialCancelledEvent(sub, due.at), webhook: 'subscription.trial_cancelled' };
  return { next, effective: due.at, event: cancelEvent(sub, due.at), webhook: 'subscription.cancelled' };
};

/** A trial's conversion: its mrr counts from `at`. */
const convertedEvent = (sub: SubscriptionItem, at: string): ChangeEvent => ({
  type: 'trial_converted',
  old_amount: '0',
  new_amount: sub.mrr,
  old_plan: sub.plan_name,
  new_plan: sub.plan_name,
  occurred_at: at,
});
/** A trial ended unconverted: nothing counted, nothing churned. */
const trialCancelledEvent = (sub: SubscriptionItem, at: string): ChangeEvent => ({
  type: 'trial_cancelled',
  old_amount: '0',
  new_amount: '0',
  old_plan: sub.plan_name,
  new_plan: sub.plan_name,
  occurred_at: at,
});

/**
 * PUT /subscriptions/{id}: not cancelled; mrr up → upgrade, down → downgrade, equal → no event.
 * While trialing nothing counts yet: no event, and `trial_ends_at` may move (to a future time).
 */
const update = (sub: SubscriptionItem, input: SubscriptionUpdate, at: string): Plan => {
  if (sub.status === 'cancelled') throw refuse('A cancelled subscription cannot be updated.');
  if (input.trial_ends_at && sub.status !== 'trialing')
    throw InvalidError.field(
      'trial_ends_at',
      `The trial ends at field can be changed only while the subscription is trialing; it is ${sub.status}.`,
    );
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
  if (input.trial_ends_at) {
    scheduleAfterNow('trial_ends_at', input.trial_ends_at, at);
    next.trial_ends_at = input.trial_ends_at;
  }
  const moved = sub.status !== 'trialing' && !same(next.mrr, sub.mrr);
  const unchanged =
    same(next.mrr, sub.mrr) &&
    next.plan_name === sub.plan_name &&
    next.current_period_start === sub.current_period_start &&
    (next.cancel_at ?? null) === (sub.cancel_at ?? null) &&
    (next.trial_ends_at ?? null) === (sub.trial_ends_at ?? null);
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
  const next: SubscriptionItem = {
    ...sub,
    status: 'cancelled',
    cancelled_at: cancelledAt,
    cancel_at: null,
    paused_at: null,
    failed_at: null,
    cancel_reason: input.reason ?? null,
  };
  // Cancelled during its trial: the trial ends unconverted, no churn.
  if (sub.status === 'trialing')
    return { next, effective: cancelledAt, event: trialCancelledEvent(sub, cancelledAt), webhook: 'subscription.trial_cancelled' };
  return { next, effective: cancelledAt, event: cancelEvent(sub, cancelledAt), webhook: 'subscription.cancelled' };
};

/** PUT /subscriptions/{id}/pause: from active only; its mrr stops counting; no subscription event. */
const pause = (sub: SubscriptionItem, input: SubscriptionPause, at: string): Plan => {
  if (sub.status === 'paused') throw refuse('The subscription is already paused.');
  if (sub.status === 'cancelled') throw refuse('A cancelled subscription cannot be paused.');
  if (sub.status !== 'active') throw refuse(`Only an active subscription can be paused; it is ${sub.status.replace('_', ' ')}.`);
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
  if (sub.status === 'trialing') throw refuse('A trialing subscription cannot be reactivated: it becomes active when its trial ends.');
  if (sub.status === 'past_due') throw refuse('A past-due subscription cannot be reactivated: recover it.');
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

/**
 * PUT /subscriptions/{id}/past-due: from active only; its renewal failed at `failed_at`. Its mrr
 * still counts; the delinquent cancellation is scheduled `delinquency_days` after `failed_at`.
 */
const pastDue = (sub: SubscriptionItem, input: SubscriptionPastDue, at: string): Plan => {
  if (sub.status !== 'active')
    throw refuse(
      `Only an active subscription can be marked past due; it is ${sub.status === 'past_due' ? 'already past due' : sub.status}.`,
    );
  const failedAt = effectiveTime(sub, input.failed_at, 'failed_at', at);
  return {
    next: { ...sub, status: 'past_due', failed_at: failedAt },
    effective: failedAt,
    event: {
      type: 'past_due',
      old_amount: sub.mrr,
      new_amount: sub.mrr,
      old_plan: sub.plan_name,
      new_plan: sub.plan_name,
      occurred_at: failedAt,
    },
    webhook: 'subscription.past_due',
  };
};

/** PUT /subscriptions/{id}/recover: from past_due only; active again from `recovered_at`. */
const recover = (sub: SubscriptionItem, input: SubscriptionRecover, at: string): Plan => {
  if (sub.status !== 'past_due') throw refuse(`Only a past-due subscription can be recovered; it is ${sub.status}.`);
  const recoveredAt = effectiveTime(sub, input.recovered_at, 'recovered_at', at);
  return {
    next: { ...sub, status: 'active', failed_at: null },
    effective: recoveredAt,
    event: {
      type: 'recovered',
      old_amount: sub.mrr,
      new_amount: sub.mrr,
      old_plan: sub.plan_name,
      new_plan: sub.plan_name,
      occurred_at: recoveredAt,
    },
    webhook: 'subscription.recovered',
  };
};

/** What a new subscription is made of (POST /subscriptions or a batch item). */
export type NewSubscription = Pick<
  SubscriptionItem,
  'pk' | 'sk' | 'id' | 'customer_id' | 'plan_name' | 'mrr' | 'billing_cycle' | 'source'
> & {
  currency?: string;
  external_id?: string | null;
  started_at?: string | null;
  current_period_start?: string | null;
  trial_ends_at?: string | null;
};

/** A subscription as created at `at` (its start, by default then), before `creationSteps` take it through its history. */
export const newSubscription = (n: NewSubscription, at: string): SubscriptionItem => {
  const startedAt = n.started_at ?? at;
  return {
    ...n,
    external_id: n.external_id ?? null,
    status: 'active',
    started_at: startedAt,
    current_period_start: n.current_period_start ?? startedAt,
    cancelled_at: null,
    paused_at: null,
    cancel_reason: null,
    trial_ends_at: n.trial_ends_at ?? null,
    created_at: at,
    updated_at: at,
    changed_at: startedAt,
    version: 1,
  };
};

/** One step of a new subscription's history: the state from `effective` on, and its event. */
export type Step = { state: SubscriptionItem; effective: string; event: ChangeEvent };

/**
 * A new subscription's history up to `at` (POST /subscriptions and the batch): `created` at its
 * start (`trialing` while a trial runs), `trial_converted` at `trial_ends_at` once that has come
 * (before `cancelledAt`), and when `cancelledAt` is given its cancellation (a trial's:
 * `trial_cancelled`). `sub` is the subscription as created; the last step's state is the one stored.
 */
export const creationSteps = (sub: SubscriptionItem, at: string, cancelled?: { at: string; reason: string | null }): Step[] => {
  const trial = sub.trial_ends_at ?? null;
  if (trial !== null && trial <= sub.started_at)
    throw InvalidError.field('trial_ends_at', 'The trial ends at field must be a date after started at.');
  const created: SubscriptionItem = { ...sub, status: trial ? 'trialing' : 'active', cancelled_at: null, cancel_reason: null };
  const steps: Step[] = [{ state: created, effective: sub.started_at, event: createdEvent(created) }];
  if (trial && trial <= at && (!cancelled || trial < cancelled.at))
    steps.push({ state: { ...created, status: 'active' }, effective: trial, event: convertedEvent(created, trial) });
  if (cancelled) {
    const last = steps[steps.length - 1].state;
    steps.push({
      state: { ...last, status: 'cancelled', cancelled_at: cancelled.at, cancel_reason: cancelled.reason },
      effective: cancelled.at,
      event: last.status === 'trialing' ? trialCancelledEvent(last, cancelled.at) : cancelEvent(last, cancelled.at),
    });
  }
  const final = steps[steps.length - 1];
  final.state = { ...final.state, changed_at: final.effective };
  return steps;
};

/** Plans `command` on `sub` at `at` (now), or throws the 422 that refuses it. */
export const decide = (sub: SubscriptionItem, command: Command, at: string, delinquencyDays = DEFAULT_DELINQUENCY_DAYS): Plan => {
  switch (command.kind) {
    case 'update':
      return update(sub, command.input, at);
    case 'cancel':
      return cancel(sub, command.input, at);
    case 'pause':
      return pause(sub, command.input, at);
    case 'reactivate':
      return reactivate(sub, command.input, at);
    case 'pastDue':
      return pastDue(sub, command.input, at);
    case 'recover':
      return recover(sub, command.input, at);
    case 'settleDue':
      return settleDue(sub, at, delinquencyDays);
  }
};
