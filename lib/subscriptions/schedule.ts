import { now } from '#lib/clock';
import { getMerchant } from '#lib/merchants/store';
import { generationOf, zoneOf } from '#lib/merchants/rules';
import { UTCDateMini } from '@date-fns/utc';
import { addDays } from 'date-fns/addDays';
import { formatTimestamp } from '#lib/shared/time';
import { applyScheduledCancel } from '#lib/subscriptions/service';
import { asFunction, WORKER_FUNCTIONS } from '#lib/shared/invocation';

/**
 * Scheduled cancellations. A future `cancelled_at` sets `cancel_at` and publishes
 * `subscription.updated` (through the outbox, so the schedule is never lost with a failed
 * function); the scheduler arms a timer for every subscription event that carries a `cancel_at`
 * and, at that time, calls `applyDueCancellation` with what it was armed for. On AWS the timer is
 * a Step Functions wait (infra/constructs/cancel-scheduler.ts); under `npm start` an in-process
 * timer (infra/local/cancel-scheduler.ts). Reads show the subscription cancelled from `cancel_at`
 * on even before the scheduler has run, and any change applies a due cancellation first.
 */
export type ScheduledCancel = { merchant_id: string; subscription_id: number; cancel_at: string };

/** What a subscription bus event arms, or null (no schedule on it). */
export const scheduleOf = (detail: {
  merchant_id?: string;
  type?: string;
  data?: { object?: Record<string, unknown> };
}): ScheduledCancel | null => {
  const object = detail.data?.object;
  if (!detail.merchant_id || !detail.type?.startsWith('subscription.') || typeof object?.cancel_at !== 'string') return null;
  return { merchant_id: detail.merchant_id, subscription_id: Number(object.id), cancel_at: object.cancel_at };
};

/**
 * Longest single wait of a scheduler (a Step Functions execution lasts at most a year): a
 * cancellation further ahead is waited for in steps.
 */
export const MAX_WAIT_DAYS = 300;

export type CancelCheck = { due: true; applied: boolean } | { due: false; wake_at: string; far: boolean };

/**
 * The scheduler's call: once `cancel_at` has come, applies the scheduled cancellation `s` was armed
 * for (`applied` false: replaced, cleared, deleted or applied already); before then, says when to
 * look again (`far`: not within one wait, so the scheduler starts a fresh wait).
 */
export const checkScheduledCancel = asFunction(WORKER_FUNCTIONS.cancelCheck, async (s: ScheduledCancel): Promise<CancelCheck> => {
  const at = now();
  if (formatTimestamp(at) < s.cancel_at) {
    const limit = formatTimestamp(addDays(new UTCDateMini(at), MAX_WAIT_DAYS));
    return s.cancel_at <= limit ? { due: false, wake_at: s.cancel_at, far: false } : { due: false, wake_at: limit, far: true };
  }
  const merchant = await getMerchant(s.merchant_id);
  if (!merchant) return { due: true, applied: false };
  const applied = await applyScheduledCancel(
    {
      merchantId: s.merchant_id,
      reportingCurrency: merchant.reporting_currency,
      timezone: zoneOf(merchant),
      generation: generationOf(merchant),
    },
    s.subscription_id,
    s.cancel_at,
  );
  return { due: true, applied: applied !== null && applied.status === 'cancelled' };
});
