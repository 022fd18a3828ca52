import { money } from '#lib/shared/money';
import type { SUBSCRIPTION_CYCLES, SUBSCRIPTION_SOURCES, SubscriptionEventType, SubscriptionStatus } from '#lib/subscriptions/schemas';

/** A stored subscription. `version` guards every change (optimistic concurrency). */
export type SubscriptionItem = {
  pk: string;
  sk: string;
  id: number;
  customer_id: number;
  /** The merchant's own id for it (imports), unique per merchant; absent when none. */
  external_id?: string | null;
  status: SubscriptionStatus;
  plan_name: string;
  /** Normalised 2-decimal string; exact. */
  mrr: string;
  /** Absent on items written before subscriptions had a currency: the reporting currency. */
  currency?: string;
  billing_cycle: (typeof SUBSCRIPTION_CYCLES)[number];
  source: (typeof SUBSCRIPTION_SOURCES)[number];
  started_at: string;
  current_period_start: string;
  cancelled_at: string | null;
  paused_at: string | null;
  cancel_reason: string | null;
  /** A scheduled cancellation: the subscription counts until then and reads as cancelled from then. */
  cancel_at?: string | null;
  /** A trial's end: `trialing` until then (no MRR), converted on its own then. Kept after conversion. */
  trial_ends_at?: string | null;
  /** While `past_due`: when the renewal failed (the delinquent cancellation falls `delinquency_days` later). */
  failed_at?: string | null;
  created_at: string;
  updated_at: string;
  deleted_at?: string;
  /** When its latest change took effect (no later change may be dated before it). */
  changed_at?: string;
  /**
   * Event ids held for this subscription's own changes, [next, end): a change takes one in the
   * write that records it, so no change holds the merchant's id sequence in its transaction.
   */
  event_ids_next?: number;
  event_ids_end?: number;
  version: number;
};

/** How many event ids a subscription takes from the merchant's sequence at a time. */
export const EVENT_ID_BLOCK = 8;

/** The id the subscription's next event takes from its held block, or null when the block is used up. */
export const heldEventId = (s: SubscriptionItem): number | null =>
  s.event_ids_next !== undefined && s.event_ids_end !== undefined && s.event_ids_next < s.event_ids_end ? Number(s.event_ids_next) : null;

/** The held block after taking `id` (from the held block, or from a fresh one starting at `id`). */
export const afterTaking = (s: SubscriptionItem, id: number): Pick<SubscriptionItem, 'event_ids_next' | 'event_ids_end'> =>
  heldEventId(s) === id
    ? { event_ids_next: id + 1, event_ids_end: Number(s.event_ids_end) }
    : { event_ids_next: id + 1, event_ids_end: id + EVENT_ID_BLOCK };

export type SubscriptionEventItem = {
  pk: string;
  sk: string;
  id: number;
  customer_id: number;
  subscription_id: number | null;
  event_type: SubscriptionEventType;
  source: (typeof SUBSCRIPTION_SOURCES)[number];
  old_amount: string;
  new_amount: string;
  amount_change: string;
  old_plan: string | null;
  new_plan: string | null;
  occurred_at: string;
  created_at: string;
};

export const presentSubscription = (s: SubscriptionItem, reportingCurrency: string) => ({
  id: Number(s.id),
  customer_id: Number(s.customer_id),
  external_id: s.external_id ?? null,
  status: s.status,
  plan_name: s.plan_name,
  mrr: money(s.mrr),
  currency: s.currency ?? reportingCurrency,
  billing_cycle: s.billing_cycle,
  source: s.source,
  started_at: s.started_at,
  current_period_start: s.current_period_start,
  cancelled_at: s.cancelled_at ?? null,
  cancel_at: s.cancel_at ?? null,
  paused_at: s.paused_at ?? null,
  cancel_reason: s.cancel_reason ?? null,
  trial_ends_at: s.trial_ends_at ?? null,
  failed_at: s.failed_at ?? null,
  created_at: s.created_at,
  updated_at: s.updated_at,
});
export type Subscription = ReturnType<typeof presentSubscription>;

export const presentSubscriptionEvent = (e: SubscriptionEventItem) => ({
  id: Number(e.id),
  customer_id: Number(e.customer_id),
  subscription_id: e.subscription_id === null || e.subscription_id === undefined ? null : Number(e.subscription_id),
  event_type: e.event_type,
  source: e.source,
  old_amount: money(e.old_amount),
  new_amount: money(e.new_amount),
  amount_change: money(e.amount_change),
  old_plan: e.old_plan ?? null,
  new_plan: e.new_plan ?? null,
  occurred_at: e.occurred_at,
  created_at: e.created_at,
});

/** Whether a subscription's mrr counts: active, or past due (a failed renewal still counts until it is delinquent). */
export const counts = (status: SubscriptionStatus) => status === 'active' || status === 'past_due';
