import { InvalidError } from '#lib/errors';
import type { SubscriptionItem } from '#lib/subscriptions/model';

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

/** A scheduled cancellation whose time has come (applied by its scheduler within a minute, or by the next change). */
export const isDue = (sub: Pick<SubscriptionItem, 'cancel_at' | 'status' | 'deleted_at'>, at: string): boolean =>
  Boolean(sub.cancel_at && sub.cancel_at <= at && sub.status !== 'cancelled' && !sub.deleted_at);

/** The subscription as every read shows it at `at`: cancelled at `cancel_at` once that has come. */
export const asOf = (sub: SubscriptionItem, at: string): SubscriptionItem =>
  isDue(sub, at) ? { ...sub, status: 'cancelled', cancelled_at: sub.cancel_at!, cancel_at: null, paused_at: null } : sub;
