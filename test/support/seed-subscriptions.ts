import { batchWriteAll } from './seed.ts';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys, subscriptionEventIndexes } from '#lib/db/keys';
import { formatTimestamp } from '#lib/shared/time';
import type { SubscriptionEventItem } from '#lib/subscriptions/model';
import { EVENT_TYPES, type SubscriptionEventType } from '#lib/subscriptions/schemas';

/** Seeded event ids start here, far above what the merchant's sequence hands out in a test. */
export const SEED_EVENT_ID_BASE = 1_000_000;
/** Seeded events occur from here on, one a minute (before any event a test creates "now"). */
export const SEED_EVENT_BASE = Date.parse('2025-01-01T00:00:00Z');

/** The type of the i-th seeded event: the event types in turn. */
export const seededEventType = (i: number): SubscriptionEventType => EVENT_TYPES[i % EVENT_TYPES.length];

/** How many of `count` seeded events have each type. */
export const seededTypeCounts = (count: number): Record<SubscriptionEventType, number> => {
  const out = Object.fromEntries(EVENT_TYPES.map((t) => [t, 0])) as Record<SubscriptionEventType, number>;
  for (let i = 0; i < count; i++) out[seededEventType(i)]++;
  return out;
};

/**
 * Writes `count` subscription events of one customer (and optionally one subscription) straight to
 * the table (BatchWriteItem, 25 a call), with the keys and index attributes the API writes
 * (`keys.subscriptionEvent`, `subscriptionEventIndexes.all/byType/byCustomer`), then adds them to
 * one shard of the SUBSCRIPTION_EVENTS totals (`events`, `events_<type>`) with one UpdateItem, as
 * `test/support/seed.ts` does for orders. For request-budget tests that need a large merchant
 * fast; behaviour tests go through the API.
 */
export const seedSubscriptionEvents = async (
  merchantId: string,
  customerId: number,
  count: number,
  subscriptionId: number | null = null,
) => {
  const items: SubscriptionEventItem[] = Array.from({ length: count }, (_, i) => {
    const id = SEED_EVENT_ID_BASE + i;
    const type = seededEventType(i);
    const occurredAt = formatTimestamp(new Date(SEED_EVENT_BASE + i * 60_000));
    return {
      ...keys.subscriptionEvent(merchantId, id),
      ...subscriptionEventIndexes.all(merchantId, occurredAt, id),
      ...subscriptionEventIndexes.byType(merchantId, type, occurredAt, id),
      ...subscriptionEventIndexes.byCustomer(merchantId, customerId, occurredAt, id),
      id,
      customer_id: customerId,
      subscription_id: subscriptionId,
      event_type: type,
      source: 'import',
      old_amount: '10.00',
      new_amount: '20.00',
      amount_change: '10.00',
      old_plan: 'Seed',
      new_plan: 'Seed',
      occurred_at: occurredAt,
      created_at: occurredAt,
    };
  });
  await batchWriteAll(items);

  const perType = Object.entries(seededTypeCounts(count)).filter(([, n]) => n > 0);
  const names: Record<string, string> = {};
  const values: Record<string, number> = { ':n': count };
  const adds = ['events :n'];
  perType.forEach(([type, n], i) => {
    names[`#t${i}`] = `events_${type}`;
    values[`:t${i}`] = n;
    adds.push(`#t${i} :t${i}`);
  });
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.totals(merchantId, 'SUBSCRIPTION_EVENTS', 0),
      UpdateExpression: `ADD ${adds.join(', ')}`,
      ...(perType.length ? { ExpressionAttributeNames: names } : {}),
      ExpressionAttributeValues: values,
    }),
  );
};
