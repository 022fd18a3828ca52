import { GetCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { now } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { createdRange, indexPartitions, keys } from '#lib/db/keys';
import { countQuery, listPage, type IndexQuery } from '#lib/db/query';
import { customerIdsByEmail, customersByIds } from '#lib/customers/store';
import { listTotal, readDayAndMonth } from '#lib/db/counters';
import { emptyPage } from '#lib/shared/pagination';
import { presentOrder, type OrderItem } from '#lib/orders/model';
import type { OrderListQuery } from '#lib/orders/schemas';
import { revenueAttr } from '#lib/orders/figures';
import { getOrder } from '#lib/orders/store';
import { money } from '#lib/shared/money';
import { utcDay, utcMonth, formatTimestamp } from '#lib/shared/time';

/** GET /orders/{orderNo}: the order and its customer (two GetItems). */
export const findOrder = async (merchantId: string, orderNo: string) => {
  const order = await getOrder(merchantId, orderNo);
  if (!order) return null;
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.customer(merchantId, order.customer_id), ConsistentRead: true }));
  return presentOrder(order, Item as { email: string; name: string | null } | undefined);
};

/** Presents a page of orders with their customers (one BatchGetItem). */
export const presentOrders = async (merchantId: string, orders: OrderItem[]) => {
  const customers = await customersByIds(merchantId, orders.map((o) => o.customer_id));
  return orders.map((o) => presentOrder(o, customers.get(o.customer_id)));
};

/**
 * GET /orders. Index choice: by customer (gsi3, the orders themselves) when a customer filter is
 * given, else by status (gsi2), else all (gsi1), both of list entries whose orders are then read by
 * key; the created_at range narrows the sort key. Totals come from the TOTALS counters, fetched
 * with the page's orders, when no range or customer filter applies, so page 1 stays flat in the
 * order count.
 */
export const listOrders = async (merchantId: string, q: OrderListQuery) => {
  let customerId = q.customer_id;
  if (q.customer_email !== undefined) {
    const byEmail = (await customerIdsByEmail(merchantId, [q.customer_email])).get(q.customer_email);
    if (byEmail === undefined || (customerId !== undefined && customerId !== byEmail)) {
      return emptyPage(q);
    }
    customerId = byEmail;
  }
  const range = createdRange(q.start_date, q.end_date);
  let query: IndexQuery;
  if (customerId !== undefined) {
    query = {
      index: 'gsi3',
      partition: indexPartitions.ordersByCustomer(merchantId, customerId),
      ...(q.status ? { filter: { expression: '#fst = :fst', names: { '#fst': 'status' }, values: { ':fst': q.status } } } : {}),
    };
  } else if (q.status) {
    query = { index: 'gsi2', partition: indexPartitions.ordersByStatus(merchantId, q.status) };
  } else {
    query = { index: 'gsi1', partition: indexPartitions.orders(merchantId) };
  }
  query = { ...query, from: range.from, to: range.to };

  const countedByTotals = customerId === undefined && range.from === undefined && range.to === undefined;
  const total = countedByTotals ? listTotal(merchantId, 'ORDERS', q.status ? `orders_${q.status}` : 'orders') : () => countQuery(query);
  const { items, meta } = await listPage<OrderItem>(query, total, q);
  return { data: await presentOrders(merchantId, items), meta };
};

/**
 * GET /orders/stats from the pre-aggregated day and month items (one BatchGetItem, whatever the
 * number of orders). Revenue by `paid_at`, counts by `created_at`, UTC (docs/orders.md).
 */
export const orderStats = async (merchantId: string, currency: string) => {
  const today = formatTimestamp(now());
  const { day, month } = await readDayAndMonth(merchantId, utcDay(today));
  const created = day.created?.toNumber() ?? 0;
  const createdPaid = day.created_paid?.toNumber() ?? 0;
  return {
    today_revenue: money(day[revenueAttr(currency)]),
    monthly_revenue: money(month[revenueAttr(currency)]),
    today_count: created,
    today_success_rate: created ? new Decimal(createdPaid).times(100).div(created).toDecimalPlaces(1, Decimal.ROUND_HALF_UP).toNumber() : 0,
  };
};

