import { paginateScan } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { checkScheduledCancel, scheduleOf, type ScheduledCancel } from '#lib/subscriptions/schedule';
import type { LocalBus } from './local-bus.ts';

/**
 * `npm start`'s cancellation scheduler: the local stand-in for the deployed state machine
 * (infra/constructs/cancel-scheduler.ts). It arms an in-process timer for every subscription
 * event on the local bus that carries a `cancel_at`, and at start for every schedule already
 * stored (a Scan: the local table is small, and timers do not survive a restart). At the time it
 * calls the same check as AWS does; a schedule replaced or cleared since finds nothing to apply.
 */
const MAX_TIMER_MS = 2 ** 31 - 1; // setTimeout's limit (about 24.8 days): longer waits re-arm

export const startLocalCancelScheduler = (
  bus: Pick<LocalBus, 'subscribe'>,
  opts: {
    log?: (line: string) => void;
    onError?: (err: unknown) => void;
    /** The check the state machine invokes (`npm start -- --bundles`: the cancelCheck function's bundle). */
    check?: (s: ScheduledCancel) => Promise<{ due: boolean; applied?: boolean }>;
  } = {},
) => {
  const check = opts.check ?? checkScheduledCancel;
  const timers = new Map<string, NodeJS.Timeout>();
  const onError = opts.onError ?? ((err: unknown) => console.error('cancel scheduler:', err instanceof Error ? err.message : err));

  const arm = (s: ScheduledCancel) => {
    const id = `${s.merchant_id}#${s.subscription_id}#${s.cancel_at}`;
    if (timers.has(id)) return;
    const fire = async () => {
      timers.delete(id);
      try {
        const checked = await check(s);
        if (!checked.due) return arm(s); // early (timer limit or clock): wait again
        if (checked.applied) opts.log?.(`subscription ${s.subscription_id} (${s.merchant_id}) cancelled as scheduled at ${s.cancel_at}`);
      } catch (err) {
        onError(err);
        timers.set(
          id,
          setTimeout(() => void fire(), 5_000),
        ); // throttled or busy: try again shortly
      }
    };
    // A few milliseconds late rather than early: the check refuses a schedule before its time.
    const wait = Math.min(Math.max(0, Date.parse(s.cancel_at) - Date.now() + 5), MAX_TIMER_MS);
    timers.set(
      id,
      setTimeout(() => void fire(), wait),
    );
  };

  const unsubscribe = bus.subscribe((event) => {
    const s = scheduleOf(event.detail ?? {});
    if (s) arm(s);
  });

  /** Schedules stored before this start (subscriptions with a `cancel_at`); `merchantId` limits it to one merchant's. */
  const rearm = async (merchantId?: string) => {
    const pages = paginateScan(
      { client: db() },
      {
        TableName: tableName(),
        FilterExpression: 'sk = :sub AND attribute_type(cancel_at, :s)',
        ExpressionAttributeValues: { ':sub': 'SUB', ':s': 'S' },
      },
    );
    let armed = 0;
    for await (const page of pages) {
      for (const item of page.Items ?? []) {
        const merchant = String(item.pk).split('#')[1];
        if (item.deleted_at || item.status === 'cancelled' || (merchantId && merchant !== merchantId)) continue;
        arm({ merchant_id: merchant, subscription_id: Number(item.id), cancel_at: String(item.cancel_at) });
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
