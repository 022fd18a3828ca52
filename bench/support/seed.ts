import Decimal from 'decimal.js';
import { addTotal } from '#lib/db/counters';
import { WriteSet } from '#lib/db/writes';
import { addCustomerCreate } from '#lib/customers/store';
import { batchWriteAll, seedOrders } from '../../test/support/seed.ts';
import { seedMetricsAggregates } from '../../test/support/seed-metrics.ts';
import { seedSubscriptionEvents } from '../../test/support/seed-subscriptions.ts';
import { benchMerchant } from './api.ts';

/**
 * A merchant of `records` records of each kind, written straight to the table with BatchWriteItem
 * in the shapes the API writes (the API's own item builders): customers (`addCustomerCreate`: the
 * customer, its email marker, the live total), orders (`newOrderItem` through the test seed; paid,
 * pending, failed in turn, with the totals per status), subscription events (the test seed) and the
 * MRR aggregate items that many subscriptions leave (the metrics budget test's seed).
 */
export const seedMerchant = async (label: string, records: number) => {
  const m = await benchMerchant(label);
  const at = '2025-06-01T00:00:00Z';
  const customers: Record<string, unknown>[] = [];
  for (let id = 1; id <= records; id++) {
    const ws = new WriteSet(0);
    addCustomerCreate(
      ws,
      m.merchantId,
      id,
      { email: `customer${id}@${label.replace(/\W/g, '')}.bench`, name: `Customer ${id}` } as never,
      at,
    );
    for (const a of ws.toTransactItems()) if (a.Put) customers.push(a.Put.Item as Record<string, unknown>);
  }
  await batchWriteAll(customers);
  const totals = new WriteSet(0);
  addTotal(totals, m.merchantId, 'CUSTOMERS', 'customers', new Decimal(records));
  await totals.commit();
  await seedOrders(m.merchantId, 1, records, ['paid', 'pending', 'failed']);
  await seedSubscriptionEvents(m.merchantId, 1, records);
  await seedMetricsAggregates(m.merchantId, records);
  return m;
};
