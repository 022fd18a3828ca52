import { restatePending } from '#lib/metrics/restate-pending';
import { deadline } from '#lib/db/retry';
import { continueRestate } from '#lib/metrics/restate-jobs';
import { presentSettings, zoneOf, type Merchant, type MerchantChanges } from '#lib/merchants/rules';
import { updateMerchant } from '#lib/merchants/service';
import { restateCustomers, type RestateReport } from '#lib/metrics/restate';

/**
 * A change of a merchant (PUT /settings, `ops merchant update`): the merchant, and its valid token
 * when the time zone changes, in one transaction, so every request from the next one on knows the
 * zone; then, for a time zone, every customer's figures move to the new zone's days
 * (`restateCustomers`) until `until` (an invocation's deadline; none: to the end). What is left
 * goes on in the background (a restate job, lib/metrics/restate-jobs.ts), or moves sooner with each
 * customer's next write (docs/settings.md).
 */
export const changeMerchant = async (
  merchantOrId: Merchant | string,
  changes: MerchantChanges,
  until?: number,
): Promise<{ merchant: Merchant; moved: RestateReport | null }> => {
  const merchant = await updateMerchant(merchantOrId, changes);
  if (changes.timezone === undefined) return { merchant, moved: null };
  const moved = await restateCustomers(merchant.merchant_id, merchant.reporting_currency, zoneOf(merchant), { until });
  // The customers left go on moving in the background (a restate job), from where this pass stopped.
  await continueRestate(merchant.merchant_id, moved);
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
