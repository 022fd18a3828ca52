import { afterEach, describe, it } from 'vitest';
import { resetClock } from '#lib/clock';
import { useApi } from '../support/api.ts';
import { deepOrders } from './deep-orders.ts';

/**
 * The depth case at size: 6,000 orders in CI (about three minutes here), `DEPTH_ORDERS=10000` for
 * the full size (323 s in the last clean run that had it); test/metrics/depth.test.ts runs it with
 * 800 orders in `npm test`.
 */
const ORDERS = Number(process.env.DEPTH_ORDERS ?? 6_000);
const api = useApi();
afterEach(() => resetClock());

describe('history at any depth, full size', () => {
  it(`a customer with ${ORDERS.toLocaleString('en')} paid monthly orders stays writable and exact; its timeline is stored in bounded chunks`, {
    timeout: 600_000,
  }, async () => {
    await deepOrders(api, ORDERS);
  });
});
