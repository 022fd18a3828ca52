/**
 * The metrics module's face: every other folder (lib/, functions/, infra/) imports the MRR
 * aggregates from here (`#lib/metrics`), never a module inside lib/metrics
 * (test/shared/imports.unit.test.ts). Modules inside lib/metrics import each other directly.
 * Its route entries (routes.ts) are the other face, for the route table and the metrics' handlers,
 * as every module's are: a function's bundle carries its own routes only.
 *
 * What only a worker or ops runs (the recount, the pending-moves applier, the rebuild) is here too:
 * their module-level handlers are marked pure, so a bundle that does not call them drops them
 * (test/infra/bundles.test.ts holds every bundle to its budget).
 */
export {
  addSalesFigures,
  amountAt,
  type BookingLines,
  customerSales,
  firstPaidOrders,
  inSegment,
  LEFT_OUT_ATTR,
  METHOD_ATTR,
  type Money,
  merchantSales,
  NO_PAYMENT_METHOD,
  paymentMethodOf,
  SALES_DIMENSIONS,
  type SaleOrder,
  type SalesDimension,
  type SalesFigures,
  type SalesFilters,
  type SalesSegment,
  saleOf,
  salesItem,
  wasPaid,
  withBooking,
  withBookings,
} from '#lib/metrics/bookings';
export { generationSettings, ratesKey, rememberRates, type SettingsMemo, settingsItems } from '#lib/metrics/generation';
export { orderTimeline, recordedLine, scheduleTimeline, subscriptionTimeline } from '#lib/metrics/lines';
export { movementRow, resolveCohortRange, resolveRange } from '#lib/metrics/rules';
export { settleRenewals } from '#lib/metrics/renewals';
export { INTERVALS } from '#lib/shared/buckets';
export {
  dayParam,
  METADATA_FILTERS_MAX,
  METADATA_PREFIX,
  metadataFilters,
  monthParam,
  onlyKnown,
} from '#lib/metrics/params';
export {
  churnReasons,
  cohorts,
  forecast,
  metricsSummary,
  mrrMovements,
  mrrSeries,
  planFigures,
  recoverySeriesOf,
  trialsSeries,
} from '#lib/metrics/service';
export {
  addTimelineChange,
  countedTimelines,
  customersOrders,
  customersWithMetadata,
  customersWithTimelines,
  figuresRead,
  lastCustomerId,
  readSalesFigures,
  type SalesRanges,
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
  SUBSCRIPTION_STANDINGS,
  orderLine,
  type RateBook,
  type Standing,
  setAt,
  type Tag,
  type Timeline,
} from '#lib/metrics/timeline';
export {
  applyPendingRecords,
  type ApplierStats,
  handlePendingMoves,
  isPendingMovesInsert,
} from '#lib/metrics/pending-applier';
export { type RebuildReport, type RepairCustomer, rebuildMerchantAggregates } from '#lib/metrics/rebuild';
export {
  handleRecountJobs,
  isRecountJobInsert,
  type NewSettings,
  RECOUNT_JOB_ENTITY,
  RECOUNTS_PER_HOUR,
  type RecountState,
  resumeRecount,
  settleRecounts,
  startRecount,
} from '#lib/metrics/recount';
