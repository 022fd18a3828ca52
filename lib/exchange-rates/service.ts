import type { AuthContext } from '#lib/auth/tokens';
import { decide, presentRates, type RatesChange } from '#lib/exchange-rates/rules';
import { addRateTablePut, listRateTables, readAllRates, readRateTable } from '#lib/exchange-rates/store';
import { zoneOf } from '#lib/merchants/rules';
import { requireMerchant } from '#lib/merchants/service';
import { startRecount } from '#lib/metrics';

/**
 * PUT /exchange-rates/{currency}: the table as changed is stored at once, and starts a recount of
 * the figures at the new rates (lib/metrics/recount.ts): until it switches, every figure stays at
 * the rates before, whole, and answers say `Recount-Pending: true`. A PUT that changes no rate
 * starts none (docs/exchange-rates.md).
 */
export const putExchangeRates = async (auth: AuthContext, currency: string, change: RatesChange) => {
  const { merchantId } = auth;
  const plan = decide(await readRateTable(merchantId, currency), change, auth.reportingCurrency);
  if (!plan.changed) return { rates: presentRates(plan.table), pending: auth.recount !== undefined };
  const merchant = await requireMerchant(merchantId);
  const { book } = await readAllRates(merchantId);
  const rates = new Map(book).set(currency, new Map(Object.entries(plan.table.rates)));
  // The table's own version is checked at the commit; a change of another table meanwhile is a recount started, which the merchant's condition sees.
  await startRecount(merchant, { timezone: zoneOf(merchant), rates }, {}, (ws) => addRateTablePut(ws, merchantId, plan.table));
  return { rates: presentRates(plan.table), pending: true };
};

/** GET /exchange-rates: every currency with rates, in code order (a table whose months were all removed is not listed). */
export const listExchangeRates = async (auth: AuthContext) =>
  (await listRateTables(auth.merchantId))
    .filter((t) => Object.keys(t.rates).length > 0)
    .sort((a, b) => (a.currency < b.currency ? -1 : 1))
    .map(presentRates);

/** GET /exchange-rates: the rates as set, and whether the figures are still being recounted at them. */
export const readExchangeRates = async (auth: AuthContext) => ({
  data: await listExchangeRates(auth),
  pending: auth.recount !== undefined,
});
