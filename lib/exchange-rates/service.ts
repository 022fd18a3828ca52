import type { AuthContext } from '#lib/auth/tokens';
import { deadline, retrying } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { decide, presentRates, type RatesChange } from '#lib/exchange-rates/rules';
import { addRateTablePut, listRateTables, readRateTable } from '#lib/exchange-rates/store';
import { logger } from '#lib/logger';
import { restateCustomers } from '#lib/metrics/restate';

/**
 * PUT /exchange-rates/{currency}: the currency's table as changed (under its version), then every
 * customer with points in that currency is counted again at the new rates (`restateCustomers`),
 * within the invocation's time; what is left moves with each customer's next write, a repeated PUT
 * or `ops metrics rebuild` (docs/exchange-rates.md). The pass runs even when no rate changed, so
 * repeating a PUT finishes one cut short.
 */
export const putExchangeRates = async (auth: AuthContext, currency: string, change: RatesChange) => {
  const { merchantId } = auth;
  const table = await retrying(async () => {
    const state = await readRateTable(merchantId, currency);
    const plan = decide(state, change, auth.reportingCurrency);
    if (!plan.changed) return plan.table;
    const ws = new WriteSet();
    addRateTablePut(ws, merchantId, plan.table);
    await ws.commit();
    return plan.table;
  });
  const moved = await restateCustomers(merchantId, auth.reportingCurrency, auth.timezone, { currency, until: deadline() - 2_000 });
  if (!moved.done) logger.warn('exchange rates: customers left to move', { merchant_id: merchantId, currency, ...moved });
  return presentRates(table);
};

/** GET /exchange-rates: every currency with rates, in code order (a table whose months were all removed is not listed). */
export const listExchangeRates = async (auth: AuthContext) =>
  (await listRateTables(auth.merchantId))
    .filter((t) => Object.keys(t.rates).length > 0)
    .sort((a, b) => (a.currency < b.currency ? -1 : 1))
    .map(presentRates);
