import { restatePending } from '#lib/metrics/restate-pending';
import type { AuthContext } from '#lib/auth/tokens';
import { deadline, retrying } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { decide, presentRates, type RatesChange } from '#lib/exchange-rates/rules';
import { addRateTablePut, listRateTables, readRateTable } from '#lib/exchange-rates/store';
import { continueRestate } from '#lib/metrics/restate-jobs';
import { restateCustomers } from '#lib/metrics/restate';

/**
 * PUT /exchange-rates/{currency}: the currency's table as changed (under its version), then every
 * customer with points in that currency is counted again at the new rates (`restateCustomers`),
 * within the invocation's time; what is left goes on in the background (a restate job,
 * lib/metrics/restate-jobs.ts), or moves sooner with each customer's next write
 * (docs/exchange-rates.md). The pass runs even when no rate changed, so repeating a PUT helps one along.
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
  // The customers left go on moving in the background (a restate job), from where this pass stopped.
  await continueRestate(merchantId, moved, currency);
  // Pending: this pass left customers, or an earlier one (another currency, a zone change) still runs.
  return { rates: presentRates(table), pending: !moved.done || (await restatePending(merchantId)) };
};

/** GET /exchange-rates: every currency with rates, in code order (a table whose months were all removed is not listed). */
export const listExchangeRates = async (auth: AuthContext) =>
  (await listRateTables(auth.merchantId))
    .filter((t) => Object.keys(t.rates).length > 0)
    .sort((a, b) => (a.currency < b.currency ? -1 : 1))
    .map(presentRates);

/** GET /exchange-rates: the rates, and whether a pass is still moving customers in the background. */
export const readExchangeRates = async (auth: AuthContext) => {
  const [data, pending] = await Promise.all([listExchangeRates(auth), restatePending(auth.merchantId)]);
  return { data, pending };
};
