import { afterEach, describe, it } from 'vitest';
import { resetClock } from '#lib/clock';
import { useApi } from '../support/api.ts';
import { deepOrders } from './deep-orders.ts';

/** The depth case at full size (about two minutes here): test/metrics/depth.test.ts runs it with 1,500 orders. */
const api = useApi();
afterEach(() => resetClock());

describe('history at any depth, full size', () => {
  it('a customer with 10,000 paid monthly orders stays writable and exact; its timeline is stored in bounded chunks', {
    timeout: 600_000,
  }, async () => {
    await deepOrders(api, 10_000);
  });
});
