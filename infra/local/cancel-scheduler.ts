import { paginateScan } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { checkScheduledCancel, scheduleOf, type ScheduledCancel } from '#lib/subscriptions/schedule';
import type { LocalBus } from './local-bus.ts';

/**
 * `npm start`'s scheduler of scheduled changes (cancellations, trial conversions, delinquent
 * cancellations): the local stand-in for the deployed state machine
 * (infra/constructs/cancel-scheduler.ts). It arms an in-process timer for every schedule a
 * subscription event on the local bus carries (`scheduleOf`), and at start for every schedule
 * already stored (a Scan: the local table is small, and timers do not survive a restart). At the
 * time it calls the same check as AWS does, which applies it or says when to look again; a
 * schedule replaced or cleared since finds nothing to apply.
 */
const MAX_TIMER_MS = 2 ** 31 - 1; // setTimeout's limit (about 24.8 days): longer waits re-arm

export const startLocalCancelScheduler = (
  bus: Pick<LocalBus, 'subscribe'>,
  opts: {
    log?: (line: string) => void;
    onError?: (err: unknown) => void;
    /** The check the state machine invokes (`npm start -- --bundles`: the cancelCheck function's bundle). */
    check?: (s: ScheduledCancel) => Promise<{ due: boolean; applied?: boolean; wake_at?: string }>;
  } = {},
) => {
  const check = opts.check ?? checkScheduledCancel;
  const timers = new Map<string, NodeJS.Timeout>();
  const onError = opts.onError ?? ((err: unknown) => console.error('cancel scheduler:', err instanceof Error ? err.message : err));

  const arm = (s: ScheduledCancel, wakeAt = s.cancel_at) => {
    const id = `${s.merchant_id}#${s.subscription_id ?? `C${s.customer_id}`}#${s.kind ?? 'cancel'}#${s.cancel_at}`;
    if (timers.has(id)) return;
    const fire = async () => {
      timers.delete(id);
      try {
        const checked = await check(s);
        if (!checked.due) return arm(s, checked.wake_at ?? wakeAt); // not yet (timer limit, clock, a delinquency still running): wait again
        if (checked.applied)
          opts.log?.(
            s.kind === 'renewal'
              ? `customer ${s.customer_id} (${s.merchant_id}): renewal grace of ${s.cancel_at} ran out, figures restated`
              : `subscription ${s.subscription_id} (${s.merchant_id}): scheduled ${s.kind ?? 'cancel'} of ${s.cancel_at} applied`,
          );
      } catch (err) {
        onError(err);
        timers.set(
          id,
          setTimeout(() => void fire(), 5_000),
        ); // throttled or busy: try again shortly
      }
    };
    // A few milliseconds late rather than early: the check refuses a schedule before its time.
    const wait = Math.min(Math.max(0, Date.parse(wakeAt) - Date.now() + 5), MAX_TIMER_MS);
    timers.set(
      id,
      setTimeout(() => void fire(), wait),
    );
  };

  const unsubscribe = bus.subscribe((event) => {
    for (const s of scheduleOf(event.detail ?? {})) arm(s);
  });

  /** Schedules stored before this start (what `scheduleOf` finds on each subscription); `merchantId` limits it to one merchant's. */
  const rearm = async (merchantId?: string) => {
    const pages = paginateScan(
      { client: db() },
      {
        TableName: tableName(),
        FilterExpression: 'sk = :sub AND (attribute_type(cancel_at, :s) OR #status IN (:trialing, :pastDue))',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':sub': 'SUB', ':s': 'S', ':trialing': 'trialing', ':pastDue': 'past_due' },
      },
    );
    let armed = 0;
    for await (const page of pages) {
      for (const item of page.Items ?? []) {
        const merchant = String(item.pk).split('#')[1];
        if (item.deleted_at || item.status === 'cancelled' || (merchantId && merchant !== merchantId)) continue;
        for (const s of scheduleOf({ merchant_id: merchant, type: 'subscription.stored', data: { object: item } })) {
          arm(s);
          armed++;
        }
      }
    }
    // Customers' renewal waits (the time each timeline head says its check is armed for): armed again
    // for that time; one already past is checked at once.
    const heads = paginateScan(
      { client: db() },
      { TableName: tableName(), FilterExpression: 'attribute_type(renewal_armed, :s)', ExpressionAttributeValues: { ':s': 'S' } },
    );
    for await (const page of heads) {
      for (const item of page.Items ?? []) {
        const merchant = String(item.pk).split('#')[1];
        if (merchantId && merchant !== merchantId) continue;
        arm({ merchant_id: merchant, customer_id: Number(item.customer_id), cancel_at: String(item.renewal_armed), kind: 'renewal' });
        armed++;
      }
    }
    return armed;
  };

  return {
    rearm,
    /** Schedules armed now (for tests and the start banner). */
    get pending() {
      return timers.size;
    },
    stop: () => {
      unsubscribe();
      for (const t of timers.values()) clearTimeout(t);
      timers.clear();
    },
  };
};
