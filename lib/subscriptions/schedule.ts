import { now } from '#lib/clock';
import { getMerchant } from '#lib/merchants/store';
import { delinquencyDaysOf, figuresZoneOf, generationOf, recountingOf } from '#lib/merchants/rules';
import { settleRenewals } from '#lib/metrics';
import { RENEWAL_EVENT } from '#lib/outbox/store';
import { UTCDateMini } from '@date-fns/utc';
import { addDays } from 'date-fns/addDays';
import { formatTimestamp } from '#lib/shared/time';
import { applyScheduledChange } from '#lib/subscriptions/service';
import { delinquentAt, type ScheduledKind } from '#lib/subscriptions/effective';
import { asFunction, WORKER_FUNCTIONS } from '#lib/shared/invocation';

/**
 * Scheduled changes: a trial's conversion at `trial_ends_at`, a cancellation at `cancel_at`, a
 * past-due subscription's delinquent cancellation `delinquency_days` after `failed_at`. The change
 * that sets one publishes its subscription event (through the outbox, so the schedule is never lost
 * with a failed function); the scheduler arms a timer for every subscription event that carries
 * one and, at that time, calls `checkScheduledCancel` with what it was armed for. On AWS the timer
 * is a Step Functions wait (infra/constructs/cancel-scheduler.ts); under `npm start` an in-process
 * timer (infra/local/cancel-scheduler.ts). Reads show the change from its time on even before the
 * scheduler has run, and any change applies a due one first.
 */
export type ScheduledCancel = {
  merchant_id: string;
  /** The subscription (a renewal: none). */
  subscription_id?: number;
  /** The time it was armed with: `cancel_at`, `trial_ends_at`, (delinquent) `failed_at`, or (renewal) when the grace runs out. */
  cancel_at: string;
  /** What was scheduled (absent: a cancellation, as armed before trials and failed renewals). */
  kind?: ScheduledKind | 'renewal';
  /** A renewal's customer. */
  customer_id?: number;
};

/** Where each kind of schedule is on a subscription as presented. */
export const SCHEDULE_FIELDS: Record<ScheduledKind, { field: 'cancel_at' | 'trial_ends_at' | 'failed_at'; status?: string }> = {
  cancel: { field: 'cancel_at' },
  convert: { field: 'trial_ends_at', status: 'trialing' },
  delinquent: { field: 'failed_at', status: 'past_due' },
};

/** What a bus event arms (none, one or more schedules): a subscription's scheduled changes, a paid recurring order's renewal. */
export const scheduleOf = (detail: {
  merchant_id?: string;
  type?: string;
  data?: { object?: Record<string, unknown> };
}): ScheduledCancel[] => {
  const object = detail.data?.object;
  // A customer's renewal grace (lib/metrics/renewals.ts): armed with the time it runs out.
  if (detail.merchant_id && detail.type === RENEWAL_EVENT && object && typeof object.grace_ends_at === 'string')
    return [{ merchant_id: detail.merchant_id, customer_id: Number(object.customer_id), cancel_at: object.grace_ends_at, kind: 'renewal' }];
  if (!detail.merchant_id || !detail.type?.startsWith('subscription.') || !object) return [];
  const out: ScheduledCancel[] = [];
  for (const [kind, { field, status }] of Object.entries(SCHEDULE_FIELDS) as [ScheduledKind, (typeof SCHEDULE_FIELDS)['cancel']][]) {
    const at = object[field];
    if (typeof at !== 'string' || (status && object.status !== status)) continue;
    out.push({
      merchant_id: detail.merchant_id,
      subscription_id: Number(object.id),
      cancel_at: at,
      ...(kind === 'cancel' ? {} : { kind }),
    });
  }
  return out;
};

/** A second after `at`: a grace runs out once its end has passed. */
const afterSecond = (at: string) => formatTimestamp(new Date(Date.parse(at) + 1000));

/**
 * Longest single wait of a scheduler (a Step Functions execution lasts at most a year): a
 * change further ahead is waited for in steps.
 */
export const MAX_WAIT_DAYS = 300;

export type CancelCheck = { due: true; applied: boolean } | { due: false; wake_at: string; far: boolean };

/** When to look again for a change due at `dueAt` (not within one wait: `far`, a fresh wait). */
const wake = (at: Date, dueAt: string): CancelCheck => {
  const limit = formatTimestamp(addDays(new UTCDateMini(at), MAX_WAIT_DAYS));
  return dueAt <= limit ? { due: false, wake_at: dueAt, far: false } : { due: false, wake_at: limit, far: true };
};

/**
 * The scheduler's call: once its time has come, applies the scheduled change `s` was armed for
 * (`applied` false: replaced, cleared, deleted or applied already); before then, says when to look
 * again (`far`: not within one wait, so the scheduler starts a fresh wait). A delinquent
 * cancellation's time follows the merchant's `delinquency_days` as it is when checked.
 */
export const checkScheduledCancel = asFunction(WORKER_FUNCTIONS.cancelCheck, async (s: ScheduledCancel): Promise<CancelCheck> => {
  const at = now();
  const kind = s.kind ?? 'cancel';
  if (kind !== 'delinquent' && kind !== 'renewal' && formatTimestamp(at) < s.cancel_at) return wake(at, s.cancel_at);
  const merchant = await getMerchant(s.merchant_id);
  if (!merchant) return { due: true, applied: false };
  const days = delinquencyDaysOf(merchant);
  const scope = {
    merchantId: s.merchant_id,
    reportingCurrency: merchant.reporting_currency,
    timezone: figuresZoneOf(merchant),
    generation: generationOf(merchant),
    ...(recountingOf(merchant) === undefined ? {} : { recount: recountingOf(merchant) }),
    delinquencyDays: days,
  };
  if (kind === 'renewal') {
    // A customer's renewal grace ran out: its timeline is settled (nothing moves if the renewal came);
    // a grace still running (a later order's, or a longer delinquency) is waited for again.
    if (s.customer_id === undefined) return { due: true, applied: false };
    if (formatTimestamp(at) <= s.cancel_at) return wake(at, afterSecond(s.cancel_at));
    const { applied, next } = await settleRenewals(scope, s.customer_id);
    return next ? wake(at, afterSecond(next)) : { due: true, applied };
  }
  if (kind === 'delinquent') {
    const dueAt = delinquentAt(s.cancel_at, days);
    if (formatTimestamp(at) < dueAt) return wake(at, dueAt);
  }
  const applied = await applyScheduledChange(scope, s.subscription_id!, { kind, armedAt: s.cancel_at });
  return { due: true, applied };
});
