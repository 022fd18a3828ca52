import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { indexes, keys } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import type { OrderItem } from '#lib/orders/model';
import { paymentTime } from '#lib/orders/figures';
import { indexPartitions } from '#lib/db/keys';

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

/** Payment times of a customer's orders other than `exclude` (those being rewritten), for first/last_payment_at. */
export const otherPaymentTimes = async (merchantId: string, customerId: number, exclude: Set<string>): Promise<string[]> => {
  const orders = await queryAll<Pick<OrderItem, 'order_no' | 'status' | 'paid_at'>>(
    { index: 'gsi3', partition: indexPartitions.ordersByCustomer(merchantId, customerId) },
    ['order_no', 'status', 'paid_at'],
  );
  return orders.filter((o) => !exclude.has(o.order_no)).flatMap((o) => paymentTime(o) ?? []);
};
