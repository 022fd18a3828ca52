/**
 * The header an answer carries while the merchant's figures are being recounted after a settings
 * change (lib/metrics/recount.ts): its figures are those of the settings before the change, whole.
 * The pipeline sets it on every route that declares it (lib/api/handler.ts).
 */
export const RECOUNT_PENDING = 'Recount-Pending';

/** What the header means, as the OpenAPI document says it on each kind of route. */
export const RECOUNT_PENDING_DOC = {
  /** Reads of figures and of the settings. */
  read: '"true" while a change of time zone or exchange rates is being recounted in the background: until it switches, every figure is that of the settings before the change, whole (docs/settings.md, "Recounts")',
  /** PUT /settings, PUT /exchange-rates/{currency}. */
  change:
    '"true": the change is stored and its recount runs in the background (or an earlier one still runs); until it switches, the figures are those of the settings before it (docs/settings.md, "Recounts")',
};

/** The header of a change's answer: set when a recount runs. */
export const recountPendingHeader = (pending: boolean): Record<string, string> | undefined =>
  pending ? { [RECOUNT_PENDING]: 'true' } : undefined;
