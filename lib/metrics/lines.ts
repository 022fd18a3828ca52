import Decimal from 'decimal.js';
import { lineOf, orderLine, replaceLine, setFrom, type OrderFacts, type Point, type Tag, type Timeline } from '#lib/metrics/timeline';

/** What a subscription's line needs to know of it. */
export type SubscriptionFacts = {
  id: number;
  status: 'trialing' | 'active' | 'past_due' | 'paused' | 'cancelled';
  mrr: string;
  started_at: string;
  cancelled_at: string | null;
  deleted_at?: string;
  /** Absent: the reporting currency (items written before subscriptions had one). */
  currency?: string;
  plan_name?: string;
  billing_cycle?: string;
  cancel_reason?: string | null;
};

/** What a subscription's points count under in segments (and, once cancelled, why). */
export const subscriptionTag = (s: SubscriptionFacts, reportingCurrency: string): Tag =>
  s.status === 'cancelled' && s.cancel_reason
    ? [s.plan_name ?? null, s.billing_cycle ?? null, s.currency ?? reportingCurrency, s.cancel_reason]
    : [s.plan_name ?? null, s.billing_cycle ?? null, s.currency ?? reportingCurrency];

const latest = (a: string, b: string) => (a > b ? a : b);

/**
 * A subscription's line after an API change (docs/metrics.md): the subscription's state holds from
 * the moment the change takes effect on (later points of the line are superseded):
 * created → its mrr from started_at; cancelled → 0 from cancelled_at (back-dating reclassifies);
 * paused → 0, reactivated or mrr changed → its mrr, each from the change's effective time (or from
 * started_at when that is still ahead); deleted → no line at all, as if it had never existed.
 * A trial is 0 from started_at (`t`) and its mrr from its conversion (`trial_ends_at`); past due
 * keeps the mrr, flagged `d`, from `failed_at` until recovered or cancelled.
 * Each point carries the subscription's plan, cycle and currency (a plan change alone is a point:
 * the segments by plan follow it; it keeps the line's amount, `Tag`'s `stated`). Returns the timeline unchanged when nothing that counts moved
 * (current_period_start, a description). A subscription in another currency than the reporting
 * one has a line too; the figures in the reporting currency leave it out (`viewOf`).
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
  // Deleting corrects a mistake: the line goes whole (recorded events naming it included), no churn is booked.
  if (after.deleted_at) return before?.deleted_at ? tl : replaceLine(tl, line, []);
  const tag = subscriptionTag(after, reportingCurrency);
  if (
    before &&
    before.status === after.status &&
    new Decimal(before.mrr).eq(after.mrr) &&
    before.cancelled_at === after.cancelled_at &&
    JSON.stringify(subscriptionTag(before, reportingCurrency)) === JSON.stringify(tag)
  )
    return tl;
  // A plan or cycle change alone keeps the line's amount (`Tag`'s `stated`).
  const kept = (): Tag => [tag[0], tag[1], tag[2], null, new Decimal(after.mrr).toFixed()];
  switch (after.status) {
    case 'trialing':
      // A trial is the line's start: one point at 0 (`t`), its tag following the subscription until it converts.
      return replaceLine(tl, line, [[after.started_at, '0', 't', tag]]);
    case 'past_due':
      // A failed renewal: the mrr still counts (`d`), from the failure on.
      if (before?.status === 'past_due' && new Decimal(before.mrr).eq(after.mrr))
        return setFrom(tl, line, effective, after.mrr, 'd', kept());
      return setFrom(tl, line, effective, after.mrr, 'd', tag);
    case 'active':
      // A change of plan or cycle alone sets no amount: the line keeps the one it has then (history
      // recorded before it later moves it too), the record's mrr counting only when there is none.
      if (before?.status === 'active' && new Decimal(before.mrr).eq(after.mrr)) return setFrom(tl, line, effective, after.mrr, 'a', kept());
      return setFrom(tl, line, before ? effective : after.started_at, after.mrr, 'a', tag);
    case 'paused':
      return setFrom(tl, line, effective, 0, 'p', tag);
    case 'cancelled':
      // A trial cancelled, even at its first instant, keeps its start: it counts as a trial that ended unconverted.
      if (before?.status === 'trialing') {
        const [start] = tl[line] ?? [[before.started_at, '0', 't', subscriptionTag(before, reportingCurrency)] as Point];
        return replaceLine(tl, line, [start, [after.cancelled_at ?? at, '0', 'c', tag]]);
      }
      return setFrom(tl, line, after.cancelled_at ?? at, 0, 'c', tag);
  }
};

/**
 * A subscription's schedule line after a write: one point per scheduled move of its MRR (`moves`,
 * in its currency, tagged as its line), none once deleted. Only the forecast counts it.
 */
export const scheduleTimeline = (
  tl: Timeline,
  sub: SubscriptionFacts,
  moves: { at: string; amount: string; kind: 'a' | 'c' | 'd' }[],
  reportingCurrency: string,
): Timeline => {
  const tag = subscriptionTag({ ...sub, status: 'active' }, reportingCurrency);
  return replaceLine(tl, lineOf.schedule(sub.id), sub.deleted_at ? [] : moves.map((m): Point => [m.at, m.amount, m.kind, tag]));
};

/** A recorded event's point: its line (the named subscription, or the imported line) is new_amount from occurred_at. */
export const recordedLine = (subscriptionId: number | null | undefined) =>
  subscriptionId ? lineOf.subscription(subscriptionId) : lineOf.imported;

/**
 * An order's line in its customer's timeline after a write: the line follows the order as it now
 * is (`orderLine`); `after` null removes the line (the order moved to another customer: its
 * history goes with it).
 */
export const orderTimeline = (tl: Timeline, orderNo: string, after: OrderFacts | null): Timeline =>
  replaceLine(tl, lineOf.order(orderNo), orderLine(after));
