/**
 * The header an answer carries while a pass after a zone or rate change still has customers to
 * move in the background (docs/exchange-rates.md, "Passes in the background"): the PUTs that leave
 * one, and the settings and rates reads while one waits or runs.
 */
export const restatePendingHeader = (pending: boolean): Record<string, string> | undefined =>
  pending ? { 'Restate-Pending': 'true' } : undefined;
