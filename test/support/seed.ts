import { BatchWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { newOrderItem, orderListEntries } from '#lib/orders/store';
import type { OrderStatus } from '#lib/orders/schemas';
import { formatTimestamp } from '#lib/shared/time';

/**
 * Writes `count` orders for one customer straight to the table (BatchWriteItem, 25 a call), with
 * the same item and list-entry builders the API uses and the TOTALS counters the lists read. For request-budget
 * tests that need a large merchant fast; behaviour tests go through the API. Several statuses are
 * given to the orders in turn.
 */
export const seedOrders = async (
  merchantId: string,
  customerId: number,
  count: number,
  status: OrderStatus | OrderStatus[] = 'pending',
) => {
  const statuses = Array.isArray(status) ? status : [status];
  const base = Date.parse('2025-01-01T00:00:00Z');
  const orders = Array.from({ length: count }, (_, i) =>
    newOrderItem(
      merchantId,
      1_000_000 + i,
      customerId,
      { order_no: `SEED-${i}`, amount: '10.00', customer_email: 'seed@example.com', status: statuses[i % statuses.length] },
      'import',
      formatTimestamp(new Date(base + i * 60_000)),
    ),
  );
  // Each order with its list entries, as the API's transaction writes them.
  await batchWriteAll(orders.flatMap((o) => [o, ...orderListEntries(merchantId, o)]));
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.totals(merchantId, 'ORDERS', 0),
      UpdateExpression: `ADD orders :n, ${statuses.map((_, j) => `#s${j} :s${j}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(statuses.map((st, j) => [`#s${j}`, `orders_${st}`])),
      ExpressionAttributeValues: {
        ':n': count,
        ...Object.fromEntries(
          statuses.map((_, j) => [`:s${j}`, Math.floor(count / statuses.length) + (j < count % statuses.length ? 1 : 0)]),
        ),
      },
    }),
  );
};

/**
 * Puts `items` straight into the table: BatchWriteItem, 25 a call, 4 in flight, unprocessed ones again.
 * DynamoDB Local gains little from more requests in flight: more would not seed faster, only make the
 * other test files' requests wait behind more of them.
 */
export const batchWriteAll = async (items: Record<string, unknown>[]) => {
  const batches: Record<string, unknown>[][] = [];
  for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25));
  const worker = async () => {
    for (let batch = batches.shift(); batch; batch = batches.shift()) {
      let pending: Record<string, unknown>[] = batch.map((Item) => ({ PutRequest: { Item } }));
      while (pending.length) {
        const res = await db().send(new BatchWriteCommand({ RequestItems: { [tableName()]: pending as never } }));
        pending = (res.UnprocessedItems?.[tableName()] ?? []) as Record<string, unknown>[];
      }
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
};
