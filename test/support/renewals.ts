import { lastCustomerId } from '#lib/metrics';
import { checkScheduledCancel } from '#lib/subscriptions/schedule';

/**
 * The scheduler's renewal checks, as it runs them a second after each renewal grace ends
 * (docs/metrics.md, "Renewals"): each customer's timeline is settled now (every customer of the
 * merchant when none are named). Tests reading figures after an order's grace ran out call it where
 * the deployed scheduler would have run by then.
 */
export const runRenewalChecks = async (merchantId: string, customerIds?: Iterable<number>) => {
  const ids = customerIds ?? Array.from({ length: await lastCustomerId(merchantId) }, (_, i) => i + 1);
  for (const customer_id of ids)
    await checkScheduledCancel({ merchant_id: merchantId, customer_id, cancel_at: '2000-01-01T00:00:00Z', kind: 'renewal' });
};
