/**
 * The header an answer carries while a pass after a zone or rate change still has customers to
 * move in the background (docs/exchange-rates.md, "Passes in the background"): the PUTs that leave
 * one or meet one, the settings and rates reads, and the whole's MRR reads.
 */
export const restatePendingHeader = (pending: boolean): Record<string, string> | undefined =>
  pending ? { 'Restate-Pending': 'true' } : undefined;

/** What the header means, as the OpenAPI document says it on each kind of route. */
export const RESTATE_PENDING_DOC = {
  /** GET /settings, GET /exchange-rates. */
  read: '"true" while a pass after a zone or rate change still has customers to move in the background: until it ends they count in the old zone or at the old rates (docs/exchange-rates.md, "Passes in the background")',
  /** GET /metrics/mrr, GET /metrics/summary. */
  metrics:
    '"true" while a pass after a zone or rate change still has customers to move in the background: until it ends they count in the old zone or at the old rates. Sent on the whole\'s figures and the reporting currency\'s segment (the items that carry the marker), not on other segments (docs/exchange-rates.md, "Passes in the background")',
  /** PUT /settings, PUT /exchange-rates/{currency}. */
  change:
    '"true" when this pass left customers to count again, or an earlier one still runs: they move in the background (docs/exchange-rates.md, "Passes in the background")',
};
