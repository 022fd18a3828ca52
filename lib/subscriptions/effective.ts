import { InvalidError } from '#lib/errors';
import Decimal from 'decimal.js';
import type { SubscriptionItem } from '#lib/subscriptions/model';
import { timestampPlusDays } from '#lib/shared/time';
import { DEFAULT_DELINQUENCY_DAYS } from '#lib/merchants/rules';
export { DEFAULT_DELINQUENCY_DAYS };

/**
 * When a subscription change takes effect (pure). A change is dated at or after the subscription's
 * start and its latest change, so history is only ever extended, never rewritten from under a
 * later change.
 */

/** When the subscription's latest change took effect (items written before `changed_at` existed: their last write). */
export const latestChangeAt = (sub: Pick<SubscriptionItem, 'changed_at' | 'version' | 'updated_at' | 'started_at'>): string =>
  sub.changed_at ?? (sub.version > 1 ? sub.updated_at : sub.started_at);

/**
 * The effective time of a change: `given` when it is not before the floor (else a 422 on `field`
 * naming the floor), or by default `at` (now), moved to the start when the subscription has not
 * started yet.
 */
export const effectiveTime = (sub: SubscriptionItem, given: string | null | undefined, field: string, at: string): string => {
  const latest = latestChangeAt(sub);
  const [floor, what] =
    latest > sub.started_at ? [latest, "the subscription's latest change"] : [sub.started_at, 'when the subscription started'];
  if (given) {
    if (given < floor)
      throw InvalidError.field(field, `The ${field.replace(/_/g, ' ')} field must be a date after or equal to ${floor}, ${what}.`);
    return given;
  }
  return at < sub.started_at ? sub.started_at : at;
};

/**
 * A change the subscription has scheduled: a trial's conversion at `trial_ends_at`, a cancellation
 * at `cancel_at`, a past-due subscription's delinquent cancellation `delinquencyDays` after
 * `failed_at`. Each is applied by the scheduler within a minute, or by the next change first.
 */
export type ScheduledKind = 'convert' | 'cancel' | 'delinquent';
export type Scheduled = { kind: ScheduledKind; at: string };

/** When a past-due subscription becomes delinquent (its cancellation), `delinquencyDays` after the failure. */
export const delinquentAt = (failedAt: string, delinquencyDays: number) => timestampPlusDays(failedAt, delinquencyDays);

/** The subscription's scheduled changes not yet applied, earliest first. */
export const scheduledChanges = (
  sub: Pick<SubscriptionItem, 'cancel_at' | 'status' | 'deleted_at' | 'trial_ends_at' | 'failed_at'>,
  delinquencyDays: number,
): Scheduled[] => {
  if (sub.deleted_at || sub.status === 'cancelled') return [];
  const out: Scheduled[] = [];
  if (sub.status === 'trialing' && sub.trial_ends_at) out.push({ kind: 'convert', at: sub.trial_ends_at });
  if (sub.status === 'past_due' && sub.failed_at) out.push({ kind: 'delinquent', at: delinquentAt(sub.failed_at, delinquencyDays) });
  if (sub.cancel_at) out.push({ kind: 'cancel', at: sub.cancel_at });
  // At one instant a cancellation comes first: a trial cancelled as it ends never converts.
  const order: Record<ScheduledKind, number> = { cancel: 0, delinquent: 1, convert: 2 };
  return out.sort((a, b) => (a.at !== b.at ? (a.at < b.at ? -1 : 1) : order[a.kind] - order[b.kind]));
};

/** The earliest scheduled change whose time has come by `at`, or null. */
export const dueChange = (
  sub: Pick<SubscriptionItem, 'cancel_at' | 'status' | 'deleted_at' | 'trial_ends_at' | 'failed_at'>,
  at: string,
  delinquencyDays: number,
): Scheduled | null => {
  const [first] = scheduledChanges(sub, delinquencyDays);
  return first && first.at <= at ? first : null;
};

/** Whether some scheduled change has come by `at`. */
export const isDue = (
  sub: Pick<SubscriptionItem, 'cancel_at' | 'status' | 'deleted_at' | 'trial_ends_at' | 'failed_at'>,
  at: string,
  delinquencyDays: number,
): boolean => dueChange(sub, at, delinquencyDays) !== null;

/** The state a due scheduled change leads to (its time `due.at`). */
export const applyScheduled = (sub: SubscriptionItem, due: Scheduled): SubscriptionItem => {
  switch (due.kind) {
    case 'convert':
      return { ...sub, status: 'active' };
    case 'cancel':
      return { ...sub, status: 'cancelled', cancelled_at: due.at, cancel_at: null, paused_at: null, failed_at: null };
    case 'delinquent':
      return {
        ...sub,
        status: 'cancelled',
        cancelled_at: due.at,
        cancel_at: null,
        paused_at: null,
        failed_at: null,
        cancel_reason: DELINQUENT_REASON,
      };
  }
};

/** The cancellation reason of a past-due subscription cancelled on its own. */
export const DELINQUENT_REASON = 'delinquent';

/** A scheduled move of the subscription's MRR: its time, the signed change, and what it is (`a` conversion, `c` cancellation, `d` delinquent cancellation). */
export type ScheduledMove = { at: string; amount: string; kind: 'a' | 'c' | 'd' };
const FLAG_OF: Record<ScheduledKind, ScheduledMove['kind']> = { convert: 'a', cancel: 'c', delinquent: 'd' };
const countedMrr = (sub: Pick<SubscriptionItem, 'status' | 'mrr'>) =>
  sub.status === 'active' || sub.status === 'past_due' ? sub.mrr : '0';

/**
 * What the subscription's schedules will move, in order (GET /metrics/forecast): each scheduled
 * change applied in turn, and the change of the MRR it counts (a trial cancelled at its end moves
 * nothing; a paused subscription's cancellation neither). Deleted or cancelled: none.
 */
export const scheduledMoves = (sub: SubscriptionItem, delinquencyDays: number): ScheduledMove[] => {
  const out: ScheduledMove[] = [];
  let state = sub;
  for (let due = scheduledChanges(state, delinquencyDays)[0]; due; due = scheduledChanges(state, delinquencyDays)[0]) {
    const next = applyScheduled(state, due);
    const moved = new Decimal(countedMrr(next)).minus(countedMrr(state));
    if (!moved.isZero()) out.push({ at: due.at, amount: moved.toFixed(), kind: FLAG_OF[due.kind] });
    state = next;
  }
  return out;
};

/** The subscription as every read shows it at `at`: every scheduled change whose time has come applied. */
export const asOf = (sub: SubscriptionItem, at: string, delinquencyDays: number): SubscriptionItem => {
  let out = sub;
  for (let due = dueChange(out, at, delinquencyDays); due; due = dueChange(out, at, delinquencyDays)) out = applyScheduled(out, due);
  return out;
};
