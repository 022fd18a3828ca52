import { indexPartitions } from '#lib/db/keys';
import { listedItemsOf } from '#lib/db/query';
import type { OrderItem } from '#lib/orders/model';
import type { SaleOrder } from '#lib/sales/rules';

/** The fields of an order the sales figures read. */
const SALE_FIELDS = [
  'order_no',
  'customer_id',
  'amount',
  'currency',
  'status',
  'payment_method',
  'source',
  'billing_cycle',
  'created_at',
  'paid_at',
  'refunded_at',
  'failed_at',
] as const satisfies readonly (keyof SaleOrder)[];

const saleOf = (o: OrderItem): SaleOrder => Object.fromEntries(SALE_FIELDS.map((f) => [f, o[f] ?? null])) as unknown as SaleOrder;

/**
 * Every order of the merchant, as the sales figures read it: the list of all orders (its entries,
 * 100 a Query page) and the orders they name (one BatchGetItem a page, strongly consistent).
 * The cost grows with the merchant's orders (docs/sales.md, "What a read costs").
 */
export const readSaleOrders = async (merchantId: string): Promise<SaleOrder[]> => {
  const out: SaleOrder[] = [];
  for await (const page of listedItemsOf<OrderItem>({ index: 'gsi1', partition: indexPartitions.orders(merchantId) }, 1000))
    for (const o of page) out.push(saleOf(o));
  return out;
};
