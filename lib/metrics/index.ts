/**
 * The metrics module's one face: every other folder (lib/, functions/, infra/) imports the MRR
 * aggregates from here (`#lib/metrics`), never a module inside lib/metrics
 * (test/shared/imports.unit.test.ts). Modules inside lib/metrics import each other directly.
 *
 * Doors besides this face, each for the modules test/shared/imports.unit.test.ts names (known
 * debts: their module-level handlers are kept by esbuild in every bundle that reaches this face,
 * over the bundle budget, test/infra/bundles.test.ts): the route definitions (routes.ts: the API's
 * route table and the metrics handlers), the recount (recount.ts: a settings or rate change starts
 * one; its worker), the pending-moves applier (pending-applier.ts) and the rebuild (rebuild.ts, ops).
 */
export { generationSettings, type SettingsMemo, settingsItems } from '#lib/metrics/generation';
export { orderTimeline, recordedLine, subscriptionTimeline } from '#lib/metrics/lines';
export { movementRow } from '#lib/metrics/rules';
export { churnReasons, cohorts, metricsSummary, mrrMovements, mrrSeries, planFigures } from '#lib/metrics/service';
export {
  addTimelineChange,
  countedTimelines,
  customersWithTimelines,
  EMPTY_TIMELINE,
  readStandings,
  readTimeline,
  standingKey,
  standingsOf,
  type TimelineState,
  timelinesFrom,
} from '#lib/metrics/store';
export {
  importedLineEnd,
  lineOf,
  movementsOf,
  NO_STANDING,
  orderLine,
  type RateBook,
  type Standing,
  setAt,
  type Tag,
  type Timeline,
} from '#lib/metrics/timeline';
