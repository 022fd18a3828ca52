import { readAllRates } from '#lib/exchange-rates/store';
import { changedMerchant, delinquencyDaysOf, presentSettings, zoneOf, type Merchant, type MerchantChanges } from '#lib/merchants/rules';
import { requireMerchant, updateMerchant } from '#lib/merchants/service';
import { startRecount } from '#lib/metrics';
import type { SettingsPut } from '#lib/settings/schemas';

/**
 * A change of a merchant (PUT /settings, `ops merchant update`). A new time zone or a new number of
 * delinquency days is stored at once and starts a recount of the figures in it
 * (lib/metrics/recount.ts): until it switches, every figure stays as counted before, whole, and
 * answers say `Recount-Pending: true`. A name alone, or what is already set, starts none.
 */
export const changeMerchant = async (merchantOrId: Merchant | string, changes: MerchantChanges): Promise<Merchant> => {
  const current = await requireMerchant(typeof merchantOrId === 'string' ? merchantOrId : merchantOrId.merchant_id);
  // Setting what is set changes nothing.
  const { timezone, delinquency_days, ...named } = changes;
  const other: MerchantChanges = {
    ...named,
    ...(delinquency_days === undefined || delinquency_days === delinquencyDaysOf(current) ? {} : { delinquency_days }),
  };
  const newZone = timezone !== undefined && timezone !== zoneOf(current);
  // The delinquency days are the order renewals' grace too: a change restates the figures, so it is counted again as a zone is.
  if (!newZone && other.delinquency_days === undefined) return Object.keys(other).length ? updateMerchant(current, other) : current;
  const zone = newZone ? timezone : zoneOf(current);
  const { book } = await readAllRates(current.merchant_id);
  const record = { timezone: zone, ...other };
  const recount = await startRecount(
    current,
    { timezone: zone, rates: book, delinquencyDays: other.delinquency_days ?? delinquencyDaysOf(current) },
    record,
    () => undefined,
  );
  return {
    ...changedMerchant(current, { ...changes, timezone: zone }),
    figures_timezone: current.figures_timezone ?? zoneOf(current),
    recount,
  };
};

/** What `GET /settings` shows of the merchant's last recount (never one: done, with no times). */
export const presentRecount = (merchant: Merchant) => ({
  status: merchant.recount?.status ?? 'done',
  requested_at: merchant.recount?.requested_at ?? null,
  switched_at: merchant.recount?.switched_at ?? null,
});

/** The settings as shown, and whether a recount runs (the answer's `Recount-Pending`). */
const shown = (merchant: Merchant) => ({
  settings: { ...presentSettings(merchant), recount: presentRecount(merchant) },
  pending: merchant.recount?.status === 'pending',
});

/** PUT /settings: the time zone, the delinquency days, or both. */
export const putSettings = async (merchant: Merchant, { timezone, delinquency_days }: SettingsPut) =>
  shown(
    await changeMerchant(merchant, { ...(timezone ? { timezone } : {}), ...(delinquency_days === undefined ? {} : { delinquency_days }) }),
  );

/** GET /settings: the merchant read afresh (its recount moves in the background). */
export const readSettings = async (auth: { merchantId: string }) => shown(await requireMerchant(auth.merchantId));
