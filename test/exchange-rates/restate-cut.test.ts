import { afterEach, describe, expect, it, vi } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, ok, useApi } from '../support/api.ts';
import { WriteSet } from '#lib/db/writes';
import { addRateTablePut, readRateTable } from '#lib/exchange-rates/store';
import { restateCustomers } from '#lib/metrics/restate';

/** Set once the pass has read a round's timeline heads: from then on the clock says the time is up. */
const cut = { armed: false, fired: false };
vi.mock('#lib/db/batch-get', async (importOriginal) => {
  const real = await importOriginal<typeof import('#lib/db/batch-get')>();
  return {
    ...real,
    batchGet: async (...args: Parameters<typeof real.batchGet>) => {
      const found = await real.batchGet(...args);
      if (cut.armed) cut.fired = true;
      return found;
    },
  };
});

process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const api = useApi();
afterEach(() => {
  resetClock();
  vi.restoreAllMocks();
});

describe('the pass after a rate change, out of time within a round', () => {
  it('stops before the next customer (not at the next round of a thousand) and says it is not done', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const { token, merchantId } = await newMerchant();
    const subscriptions = [1, 2, 3].map((n) => ({
      external_id: `cut-${n}`,
      customer_email: `cut${n}@rates.test`,
      plan_name: 'Pro',
      billing_cycle: 'monthly',
      mrr: '10',
      currency: 'USD',
      started_at: '2026-01-15T00:00:00Z',
    }));
    await ok(api.post('/subscriptions/batch', token, { subscriptions }, { 'idempotency-key': `cut-${Math.random()}` }));
    // The table changes without the pass.
    const ws = new WriteSet();
    addRateTablePut(ws, merchantId, { ...(await readRateTable(merchantId, 'USD')), rates: { '2026-01': '30' } });
    await ws.commit();

    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => (cut.fired ? realNow() + 3_600_000 : realNow()));
    cut.armed = true;
    const report = await restateCustomers(merchantId, 'TWD', 'UTC', { currency: 'USD', until: realNow() + 60_000 });
    cut.armed = false;
    cut.fired = false;
    vi.restoreAllMocks();
    // The round's heads were read, then time ran out: no customer was moved.
    expect(report).toEqual({ customers_read: 3, moved: 0, done: false, next: 1 });
    expect(await restateCustomers(merchantId, 'TWD', 'UTC', { currency: 'USD' })).toEqual({
      customers_read: 3,
      moved: 3,
      done: true,
      next: null,
    });
  });
});
