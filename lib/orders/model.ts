import type { CustomerItem } from '#lib/customers/model';
import { decodeMetadata } from '#lib/shared/metadata';
import type { BILLING_CYCLES, ORDER_SOURCES, OrderStatus, PAYMENT_METHODS } from '#lib/orders/schemas';

/** A stored order. `version` guards every change (optimistic concurrency). */
export type OrderItem = {
  pk: string;
  sk: string;
  id: number;
  order_no: string;
  /** Normalised 2-decimal string; exact. */
  amount: string;
  currency: string;
  status: OrderStatus;
  payment_method: (typeof PAYMENT_METHODS)[number] | null;
  source: (typeof ORDER_SOURCES)[number];
  billing_cycle: (typeof BILLING_CYCLES)[number];
  paid_at: string | null;
  refunded_at: string | null;
  failed_at: string | null;
  /** JSON text of the metadata object. */
  metadata: string | null;
  customer_id: number;
  created_at: string;
  updated_at: string;
  version: number;
  [index: `gsi${number}${'pk' | 'sk'}`]: string;
};

/** The API shape of an order, with its customer's email and name (deleted customers still show). */
export const presentOrder = (order: OrderItem, customer: Pick<CustomerItem, 'email' | 'name'> | null | undefined) => ({
  id: order.id,
  order_no: order.order_no,
  amount: order.amount,
  currency: order.currency,
  status: order.status,
  payment_method: order.payment_method ?? null,
  source: order.source,
  billing_cycle: order.billing_cycle,
  paid_at: order.paid_at ?? null,
  refunded_at: order.refunded_at ?? null,
  failed_at: order.failed_at ?? null,
  metadata: decodeMetadata(order.metadata),
  customer_id: order.customer_id,
  customer_email: customer?.email ?? null,
  customer_name: customer?.name ?? null,
  created_at: order.created_at,
  updated_at: order.updated_at,
});
export type Order = ReturnType<typeof presentOrder>;
