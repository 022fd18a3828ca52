import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { METRIC_SHARDS } from '#lib/db/keys';
import { inSegment, type Money, merchantSales, type SaleOrder, type SalesSegment } from '#lib/metrics/bookings';
import { aggregateKey, SALES_ID } from '#lib/metrics/store';
import { batchWriteAll } from './seed.ts';

const DAY = 86_400_000;
const METHODS = ['credit_card', 'atm', 'cvs', 'wallet_a_pay', null] as const;
const STATUSES = ['paid', 'paid', 'paid', 'refunded', 'failed', 'pending', 'cancelled'] as const;
const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;

/**
 * `count` synthetic orders of `count ÷ 5` customers over 2024–2025, every day of those years with
 * bookings: statuses, payment methods and sources in turn, one in 20 in USD (no rate: left out).
 */
export const syntheticOrders = (count: number): SaleOrder[] => {
  const start = Date.parse('2024-01-01T00:00:00Z');
  return Array.from({ length: count }, (_, i) => {
    const created = start + ((i * 7919) % 730) * DAY + ((i * 131) % 86_400) * 1000;
    const status = STATUSES[i % STATUSES.length];
    const paid = status === 'paid' || status === 'refunded' ? iso(created + (i % 7) * 3_600_000) : null;
    return {
      order_no: `SYN-${i}`,
      customer_id: 1 + (i % Math.max(1, Math.floor(count / 5))),
      amount: (10 + (i % 991) / 10).toFixed(2),
      currency: i % 20 === 0 ? 'USD' : 'TWD',
      status,
      payment_method: METHODS[i % METHODS.length],
      source: i % 3 ? 'api' : 'import',
      billing_cycle: i % 4 ? 'one-time' : 'monthly',
      created_at: iso(created),
      paid_at: paid,
      refunded_at: status === 'refunded' ? iso(created + 5 * DAY) : null,
      failed_at: status === 'failed' ? iso(created + 60_000) : null,
    };
  });
};

/**
 * A merchant's sales items exactly as the write path leaves them for `orders` (the sum of every
 * customer's figures, lib/metrics/bookings.ts), of the whole and of `segments`, in UTC without
 * rates. Every item is in all 8 shards (the sums in shard 0, zeros elsewhere): the largest a read
 * can meet. Written with BatchWriteItem; returns how many items. For request-budget tests, whose
 * reads touch only these items.
 */
export const seedSalesAggregates = async (merchantId: string, orders: SaleOrder[], segments: SalesSegment[] = []) => {
  const money: Money = { zone: 'UTC', reporting: 'TWD', rates: new Map() };
  const items: Record<string, unknown>[] = [];
  for (const segment of [null, ...segments]) {
    const select = segment ? inSegment({ [segment.dimension]: segment.value }, null) : undefined;
    const figures = merchantSales(orders, segment?.dimension === 'currency' ? { ...money, only: segment.value } : money, select);
    for (const [id, attrs] of figures)
      for (let shard = 0; shard < METRIC_SHARDS; shard++)
        items.push({
          ...aggregateKey(merchantId, `${SALES_ID}${id}`, shard, segment),
          ...Object.fromEntries([...attrs].map(([a, v]) => [a, NumberValue.from(shard ? '0' : v.toFixed())])),
        });
  }
  await batchWriteAll(items);
  return items.length;
};
