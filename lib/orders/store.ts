import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { indexes, keys } from '#lib/db/keys';
import type { OrderItem } from '#lib/orders/model';

export const getOrder = async (merchantId: string, orderNo: string): Promise<OrderItem | null> => {
  // No stored order_no is longer than 100 characters (a longer key would not even be a valid DynamoDB key).
  if (orderNo.length > 100) return null;
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.order(merchantId, orderNo), ConsistentRead: true }));
  return (Item as OrderItem | undefined) ?? null;
};

/** The index attributes an order carries (all orders; by status; by customer). */
export const orderIndexAttributes = (merchantId: string, o: Pick<OrderItem, 'id' | 'status' | 'created_at' | 'customer_id'>) => ({
  ...indexes.ordersByCreated(merchantId, o.created_at, o.id),
  ...indexes.ordersByStatus(merchantId, o.status, o.created_at, o.id),
  ...indexes.ordersByCustomer(merchantId, o.customer_id, o.created_at, o.id),
});
