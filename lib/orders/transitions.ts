import type { OrderStatus } from '#lib/orders/schemas';

/** Status changes allowed through the API (docs/orders.md); imports may move freely. */
const ALLOWED: Record<OrderStatus, OrderStatus[]> = {
  pending: ['paid', 'failed', 'cancelled'],
  failed: ['paid', 'cancelled'],
  paid: ['refunded'],
  refunded: [],
  cancelled: [],
};

export const canTransition = (from: OrderStatus, to: OrderStatus): boolean => ALLOWED[from].includes(to);

/** The timestamp a status fills when it is reached without one (docs/orders.md: status times). */
export const STATUS_TIMESTAMP: Partial<Record<OrderStatus, 'paid_at' | 'refunded_at' | 'failed_at'>> = {
  paid: 'paid_at',
  refunded: 'refunded_at',
  failed: 'failed_at',
};

/** Fills the reached status's timestamp with `at` unless one is already set: supplied times are never overwritten. */
export const fillStatusTimestamp = <T extends { status: OrderStatus; paid_at: string | null; refunded_at: string | null; failed_at: string | null }>(
  order: T,
  at: string,
): T => {
  const field = STATUS_TIMESTAMP[order.status];
  return field && !order[field] ? { ...order, [field]: at } : order;
};
