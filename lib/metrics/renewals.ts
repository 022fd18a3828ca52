import { retrying } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { delinquencyDaysOf } from '#lib/merchants/rules';
import { type FiguresScope, addTimelineChange, noteRenewalWait, readTimeline } from '#lib/metrics/store';
import { renewalGraceEnd } from '#lib/metrics/timeline';
import { now } from '#lib/clock';
import { formatTimestamp } from '#lib/shared/time';

/**
 * Settles a customer's order renewals now (the scheduler's call once a grace ran out,
 * docs/metrics.md "Renewals"): its timeline written again, so a renewal that never came ends its
 * line at the end of the last paid period and the figures from then on are restated. One
 * transaction; nothing written when nothing moved (the renewal came, the order was refunded, or a
 * write settled it already). Says whether it wrote, and when the grace still running (if any) ends:
 * the scheduler looks again then.
 */
export const settleRenewals = async (
  scope: FiguresScope & { merchantId: string },
  customerId: number,
): Promise<{ applied: boolean; next: string | null }> =>
  retrying(async () => {
    const stored = await readTimeline(scope.merchantId, customerId);
    if (stored.version === null) return { applied: false, next: null };
    const ws = new WriteSet();
    const after = await addTimelineChange(ws, scope.merchantId, scope, customerId, stored, stored.timeline);
    if (after !== stored) await ws.commit();
    const grace = delinquencyDaysOf({ delinquency_days: scope.delinquencyDays });
    const next = renewalGraceEnd(after.timeline, grace, formatTimestamp(now()));
    // The check waits on to a grace still running: later writes need not arm a wait of their own.
    if (next !== null && (after.renewalArmed === undefined || after.renewalArmed < next))
      await noteRenewalWait(scope.merchantId, customerId, next);
    return { applied: after !== stored, next };
  });
