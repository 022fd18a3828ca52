import { deadline } from '#lib/db/retry';
import { logger } from '#lib/logger';
import { presentSettings, zoneOf, type Merchant } from '#lib/merchants/rules';
import { updateMerchant } from '#lib/merchants/service';
import { rezoneCustomers } from '#lib/metrics/rezone';

/**
 * A change of the merchant's reporting time zone (PUT /settings, `ops merchant update --timezone`):
 * the merchant and its valid token take the zone in one transaction, so every request from the next
 * one on knows it; then every customer's figures move to the new zone's days (`rezoneCustomers`),
 * until `until` (an invocation's deadline). What is left moves with each customer's next write, or
 * with `ops metrics rebuild`; the answer of the API does not wait for more (docs/settings.md).
 */
export const changeTimezone = async (merchant: Merchant, timezone: string, until?: number) => {
  const changed = await updateMerchant(merchant.merchant_id, { timezone });
  const moved = await rezoneCustomers(merchant.merchant_id, merchant.reporting_currency, zoneOf(changed), { until });
  if (!moved.done) logger.warn('time zone change: customers left to move', { merchant_id: merchant.merchant_id, ...moved });
  return { settings: presentSettings(changed), moved };
};

/** PUT /settings: as `changeTimezone`, within the invocation's time (two seconds kept to answer). */
export const putSettings = async (merchant: Merchant, settings: { timezone: string }) =>
  (await changeTimezone(merchant, settings.timezone, deadline() - 2_000)).settings;
