import { afterEach, describe, it } from 'vitest';
import { resetClock } from '#lib/clock';
import { useApi } from '../support/api.ts';
import { deepOrders } from './deep-orders.ts';

/**
 * The depth case at size: 2,000 orders in CI (about a minute), `DEPTH_ORDERS=10000` for the full size
 * (305 s here, docs/benchmarks.md: more than CI's 45 minutes leave room for); test/metrics/depth.test.ts
 * runs it with 800 orders in `npm test`.
 */
const ORDERS = Number(process.env.DEPTH_ORDERS ?? 2_000);
const api = useApi();
afterEach(() => resetClock());

describe('history at any depth, full size', () => {
  it(`a customer with ${ORDERS.toLocaleString('en')} paid monthly orders stays writable and exact; its timeline is stored in bounded chunks`, {
    // Each batch reads the customer's whole record: about 30 s per 1,000 orders here at 10,000.
    timeout: Math.max(600_000, ORDERS * 150),
  }, async () => {
    await deepOrders(api, ORDERS);
  });
});
