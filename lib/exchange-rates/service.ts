import { restatePending } from '#lib/metrics/restate-pending';
import type { AuthContext } from '#lib/auth/tokens';
import { deadline, retrying } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { decide, presentRates, type RatesChange } from '#lib/exchange-rates/rules';
import { addRateTablePut, listRateTables, readAllRates, readRateTable } from '#lib/exchange-rates/store';
import { recount } from '#lib/metrics/generation';
import { getMerchant } from '#lib/merchants/store';
import { zoneOf } from '#lib/merchants/rules';
import { continueRestate } from '#lib/metrics/restate-jobs';
import { restateCustomers } from '#lib/metrics/restate';

/**
 * PUT /exchange-rates/{currency}: a change of the currency's table is a new generation of the MRR
 * aggregates, counted at the new rates and switched to with the table in one transaction
 * (lib/metrics/generation.ts), so every read from the next request on converts at them. A merchant
 * past the build's bound, or a build out of time, falls back to passes: the table as changed
 * (under its version), then every customer with points in that currency counted again at the new
 * rates (`restateCustomers`) within the invocation's time; what is left goes on in the background
 * (a restate job, lib/metrics/restate-jobs.ts), or moves sooner with each customer's next write
 * (docs/exchange-rates.md). A PUT that changes no rate runs the pass, so repeating one helps a
 * pass along.
 */
export const putExchangeRates = async (auth: AuthContext, currency: string, change: RatesChange) => {
  const { merchantId } = auth;
  const until = deadline() - 2_000;
  const outcome = await retrying(async () => {
    const state = await readRateTable(merchantId, currency);
    const plan = decide(state, change, auth.reportingCurrency);
    if (!plan.changed) return { table: plan.table, built: false };
    const merchant = await getMerchant(merchantId);
    if (merchant) {
      const rates = await readAllRates(merchantId);
      const book = new Map(rates.book).set(currency, new Map(Object.entries(plan.table.rates)));
      const built = await recount(
        merchant,
        { timezone: zoneOf(merchant), rates: { book, versions: rates.versions } },
        {},
        (ws) => addRateTablePut(ws, merchantId, plan.table),
        until,
      );
      if (built) return { table: plan.table, built: true };
    }
    const ws = new WriteSet();
    addRateTablePut(ws, merchantId, plan.table);
    await ws.commit();
    return { table: plan.table, built: false };
  });
  if (outcome.built) return { rates: presentRates(outcome.table), pending: await restatePending(merchantId) };
  const moved = await restateCustomers(merchantId, auth.reportingCurrency, auth.timezone, {
    currency,
    until,
    generation: auth.generation,
  });
  // The customers left go on moving in the background (a restate job), from where this pass stopped.
  await continueRestate(merchantId, moved, auth.generation, currency);
  // Pending: this pass left customers, or an earlier one (another currency, a zone change) still runs.
  return { rates: presentRates(outcome.table), pending: !moved.done || (await restatePending(merchantId)) };
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
