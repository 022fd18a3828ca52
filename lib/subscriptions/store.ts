import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys, subscriptionIndexes } from '#lib/db/keys';
import type { SubscriptionItem } from '#lib/subscriptions/model';

/** A subscription by id, read by key (strongly consistent); deleted ones included. */
export const getSubscriptionItem = async (merchantId: string, id: number): Promise<SubscriptionItem | null> => {
  if (!Number.isSafeInteger(id) || id < 1) return null;
  const { Item } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.subscription(merchantId, id), ConsistentRead: true }),
  );
  return (Item as SubscriptionItem | undefined) ?? null;
};

/** The index attributes a live subscription carries (all; by status; by customer). */
export const subscriptionIndexAttributes = (
  merchantId: string,
  s: Pick<SubscriptionItem, 'id' | 'status' | 'created_at' | 'customer_id'>,
) => ({
  ...subscriptionIndexes.all(merchantId, s.created_at, s.id),
  ...subscriptionIndexes.byStatus(merchantId, s.status, s.created_at, s.id),
  ...subscriptionIndexes.byCustomer(merchantId, s.customer_id, s.created_at, s.id),
});
