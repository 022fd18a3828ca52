import Decimal from 'decimal.js';
import { addTotal, readTotals } from '#lib/db/counters';
import { keys, subscriptionEventIndexes } from '#lib/db/keys';
import { countQuery, listPage, type IndexQuery } from '#lib/db/query';
import { itemAbsent, type WriteSet } from '#lib/db/writes';
import { emptyPage } from '#lib/shared/pagination';
import { presentSubscriptionEvent, type SubscriptionEventItem } from '#lib/subscriptions/model';
import type { SubscriptionEventListQuery, SubscriptionEventType } from '#lib/subscriptions/schemas';
import { getSubscriptionItem } from '#lib/subscriptions/store';

export const CUSTOMER_INVALID = 'The selected customer id is invalid.';
export const SUBSCRIPTION_INVALID = 'The selected subscription id is invalid.';
export const importedAfterSubscription = (since: string) =>
  `The subscription id field is required for an event at or after ${since}, when the customer's first subscription started: name the subscription this event belongs to.`;

const ONE = new Decimal(1);

export type NewEvent = {
  id: number;
  customer_id: number;
  subscription_id: number | null;
  event_type: SubscriptionEventType;
  source: 'api' | 'import';
  old_amount: string;
  new_amount: string;
  old_plan: string | null;
  new_plan: string | null;
  occurred_at: string;
};

/** Adds a subscription event (and its list totals) to a transaction; amount_change = new − old. */
export const addSubscriptionEvent = (ws: WriteSet, merchantId: string, e: NewEvent, at: string): SubscriptionEventItem => {
  const item: SubscriptionEventItem = {
    ...keys.subscriptionEvent(merchantId, e.id),
    ...subscriptionEventIndexes.all(merchantId, e.occurred_at, e.id),
    ...subscriptionEventIndexes.byType(merchantId, e.event_type, e.occurred_at, e.id),
    ...subscriptionEventIndexes.byCustomer(merchantId, e.customer_id, e.occurred_at, e.id),
    ...e,
    old_amount: new Decimal(e.old_amount).toFixed(2),
    new_amount: new Decimal(e.new_amount).toFixed(2),
    amount_change: new Decimal(e.new_amount).minus(e.old_amount).toFixed(2),
    created_at: at,
  };
  ws.put('event', item, itemAbsent);
  addTotal(ws, merchantId, 'SUBSCRIPTION_EVENTS', 'events', ONE);
  addTotal(ws, merchantId, 'SUBSCRIPTION_EVENTS', `events_${e.event_type}`, ONE);
  return item;
};

/**
 * GET /subscriptions/events, newest first by occurred_at then id. Index: by customer (gsi3) when a
 * customer or subscription is named (a subscription belongs to one customer), else by type (gsi2),
 * else all (gsi1); the occurred_at range narrows the sort key. Unfiltered or by type the total
 * comes from the sharded counters, so page 1 stays flat.
 */
export const listSubscriptionEvents = async (merchantId: string, q: SubscriptionEventListQuery) => {
  let customerId = q.customer_id;
  if (q.subscription_id !== undefined) {
    const sub = await getSubscriptionItem(merchantId, q.subscription_id);
    if (!sub || (customerId !== undefined && Number(sub.customer_id) !== customerId)) return emptyPage(q);
    customerId = Number(sub.customer_id);
  }
  const filters: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  let query: IndexQuery;
  if (customerId !== undefined) {
    query = { index: 'gsi3', partition: subscriptionEventIndexes.partitions.byCustomer(merchantId, customerId) };
    if (q.event_type) {
      filters.push('#et = :et');
      names['#et'] = 'event_type';
      values[':et'] = q.event_type;
    }
    if (q.subscription_id !== undefined) {
      filters.push('#sid = :sid');
      names['#sid'] = 'subscription_id';
      values[':sid'] = q.subscription_id;
    }
  } else if (q.event_type) {
    query = { index: 'gsi2', partition: subscriptionEventIndexes.partitions.byType(merchantId, q.event_type) };
  } else {
    query = { index: 'gsi1', partition: subscriptionEventIndexes.partitions.all(merchantId) };
  }
  query = {
    ...query,
    ...(filters.length ? { filter: { expression: filters.join(' AND '), names, values } } : {}),
    from: q.start_date ? `${q.start_date}#` : undefined,
    to: q.end_date ? `${q.end_date}#~` : undefined,
  };
  const byTotals = customerId === undefined && !q.start_date && !q.end_date;
  const count = async () =>
    byTotals
      ? ((await readTotals(merchantId, 'SUBSCRIPTION_EVENTS'))[q.event_type ? `events_${q.event_type}` : 'events']?.toNumber() ?? 0)
      : countQuery(query);
  const { items, meta } = await listPage<SubscriptionEventItem>(merchantId, query, count, q);
  return { data: items.map(presentSubscriptionEvent), meta };
};
