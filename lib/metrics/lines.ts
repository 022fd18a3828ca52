import Decimal from 'decimal.js';
import { lineOf, orderLine, replaceLine, setFrom, type OrderFacts, type Timeline } from '#lib/metrics/timeline';

/** What a subscription's line needs to know of it. */
export type SubscriptionFacts = {
  id: number;
  status: 'active' | 'paused' | 'cancelled';
  mrr: string;
  started_at: string;
  cancelled_at: string | null;
  deleted_at?: string;
  /** Absent: the reporting currency (items written before subscriptions had one). */
  currency?: string;
};

const latest = (a: string, b: string) => (a > b ? a : b);

/**
 * A subscription's line after an API change (docs/metrics.md): the subscription's state holds from
 * the moment the change takes effect on (later points of the line are superseded):
 * created → its mrr from started_at; cancelled → 0 from cancelled_at (back-dating reclassifies);
 * paused → 0, reactivated or mrr changed → its mrr, each from the change's effective time (or from
 * started_at when that is still ahead); deleted → no line at all, as if it had never existed.
 * Returns the timeline unchanged when nothing that counts moved (a plan change,
 * current_period_start).
 */
export const subscriptionTimeline = (
  tl: Timeline,
  before: SubscriptionFacts | null,
  after: SubscriptionFacts,
  at: string,
  reportingCurrency: string,
): Timeline => {
  const line = lineOf.subscription(after.id);
  const effective = latest(at, after.started_at);
  // Like orders, a subscription in another currency is left out of the figures (no line at all).
  if ((after.currency ?? reportingCurrency) !== reportingCurrency) return tl;
  // Deleting corrects a mistake: the line goes whole (recorded events naming it included), no churn is booked.
  if (after.deleted_at) return before?.deleted_at ? tl : replaceLine(tl, line, []);
  if (before && before.status === after.status && new Decimal(before.mrr).eq(after.mrr) && before.cancelled_at === after.cancelled_at)
    return tl;
  switch (after.status) {
    case 'active':
      return setFrom(tl, line, before ? effective : after.started_at, after.mrr, 'a');
    case 'paused':
      return setFrom(tl, line, effective, 0, 'p');
    case 'cancelled':
      return setFrom(tl, line, after.cancelled_at ?? at, 0, 'c');
  }
};

/** A recorded event's point: its line (the named subscription, or the imported line) is new_amount from occurred_at. */
export const recordedLine = (subscriptionId: number | null | undefined) =>
  subscriptionId ? lineOf.subscription(subscriptionId) : lineOf.imported;

/**
 * An order's line in its customer's timeline after a write: the line follows the order as it now
 * is (`orderLine`); `after` null removes the line (the order moved to another customer: its
 * history goes with it).
 */
export const orderTimeline = (tl: Timeline, orderNo: string, after: OrderFacts | null, reportingCurrency: string): Timeline =>
  replaceLine(tl, lineOf.order(orderNo), orderLine(after, reportingCurrency));
