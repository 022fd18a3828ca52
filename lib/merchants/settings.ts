import { restatePending } from '#lib/metrics/restate-pending';
import { deadline } from '#lib/db/retry';
import { continueRestate } from '#lib/metrics/restate-jobs';
import { changedMerchant, generationOf, presentSettings, zoneOf, type Merchant, type MerchantChanges } from '#lib/merchants/rules';
import { requireMerchant, updateMerchant } from '#lib/merchants/service';
import { recount } from '#lib/metrics/generation';
import { readAllRates } from '#lib/exchange-rates/store';
import { restateCustomers, type RestateReport } from '#lib/metrics/restate';

/**
 * A change of a merchant (PUT /settings, `ops merchant update`). A new time zone is a new
 * generation of the MRR aggregates, counted in it and switched to with the change in one
 * transaction (lib/metrics/generation.ts), so every read from the next request on is in the new
 * zone's days. A merchant past the build's bound, or a build out of time, falls back to passes:
 * the merchant and its valid token first, then every customer's figures moved to the new zone's
 * days (`restateCustomers`) until `until` (an invocation's deadline; none: to the end); what is
 * left goes on in the background (a restate job, lib/metrics/restate-jobs.ts), or moves sooner
 * with each customer's next write (docs/settings.md).
 */
export const changeMerchant = async (
  merchantOrId: Merchant | string,
  changes: MerchantChanges,
  until?: number,
): Promise<{ merchant: Merchant; moved: RestateReport | null }> => {
  const current = await requireMerchant(merchantOrId);
  if (changes.timezone !== undefined && changes.timezone !== zoneOf(current)) {
    const timezone = changes.timezone;
    const rates = await readAllRates(current.merchant_id);
    const built = await recount(current, { timezone, rates }, changes, () => undefined, until ?? deadline() - 2_000);
    if (built) {
      const merchant = { ...changedMerchant(current, changes), metrics_generation: built.generation };
      return { merchant, moved: { customers_read: built.customers, moved: built.customers, done: true, next: null } };
    }
  }
  const merchant = await updateMerchant(current, changes);
  if (changes.timezone === undefined) return { merchant, moved: null };
  const moved = await restateCustomers(merchant.merchant_id, merchant.reporting_currency, zoneOf(merchant), {
    until,
    generation: generationOf(merchant),
  });
  // The customers left go on moving in the background (a restate job), from where this pass stopped.
  await continueRestate(merchant.merchant_id, moved, generationOf(merchant));
  return { merchant, moved };
};

/** PUT /settings: as `changeMerchant`, within the invocation's time (two seconds kept to answer). */
export const putSettings = async (merchant: Merchant, settings: { timezone: string }) => {
  const { merchant: changed, moved } = await changeMerchant(merchant, { timezone: settings.timezone }, deadline() - 2_000);
  // Pending: this pass left customers, or an earlier one (a rate change, a zone change) still runs.
  const left = moved !== null && !moved.done;
  return { settings: presentSettings(changed), pending: left || (await restatePending(merchant.merchant_id)) };
};

/** GET /settings: as the request's caller knows them, and whether a pass is still moving customers in the background. */
export const readSettings = async (auth: { merchantId: string; timezone: string; reportingCurrency: string }) => ({
  settings: { timezone: auth.timezone, reporting_currency: auth.reportingCurrency },
  pending: await restatePending(auth.merchantId),
});
