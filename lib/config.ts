/** Runtime configuration, read from the environment on every call so tests can change it per file. */
const int = (name: string, fallback: number): number => {
  const raw = process.env[name];
  const n = raw === undefined || raw === '' ? NaN : Number(raw);
  return Number.isInteger(n) && n > 0 ? n : fallback;
};

export const config = {
  tableName: (): string => process.env.TABLE_NAME ?? 'revenue-analytics',
  dynamoEndpoint: (): string | undefined => process.env.DYNAMODB_ENDPOINT || undefined,
  region: (): string => process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
  rateLimitPerHour: (): number => int('RATE_LIMIT_PER_HOUR', 3600),
  unauthenticatedRateLimitPerMinute: (): number => int('UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE', 10),
  /** Back-office requests per merchant per clock minute (a window of their own). */
  backofficeRateLimitPerMinute: (): number => int('BACKOFFICE_RATE_LIMIT_PER_MINUTE', 60),
  defaultReportingCurrency: (): string => (process.env.REPORTING_CURRENCY ?? 'TWD').toUpperCase(),
  /** The bus the outbox relay publishes to (set by the stack; unset: the account's default bus). */
  eventBusName: (): string | undefined => process.env.EVENT_BUS_NAME || undefined,
  /** `source` of every published event. */
  eventSource: (): string => process.env.EVENT_SOURCE || 'revenue-analytics-api',
  /** Local only: an EventBridge emulator (moto) instead of AWS. */
  eventBridgeEndpoint: (): string | undefined => process.env.EVENTBRIDGE_ENDPOINT || undefined,
  /**
   * The secret CloudFront adds to every request it forwards (lib/http/front-door.ts): when set, the
   * pipeline refuses requests without it. Unset locally and in tests: nothing is checked.
   */
  originVerifySecret: (): string | undefined => process.env.ORIGIN_VERIFY_SECRET || undefined,
  /**
   * The secret list cursors are sealed with, per merchant (lib/shared/cursor.ts). Set by the stack
   * from a generated Secrets Manager secret; unset locally and in tests: a development secret.
   */
  cursorSecret: (): string | undefined => process.env.CURSOR_SECRET || undefined,
  /**
   * Most pending-moves items one metric shard of a merchant may hold waiting (lib/db/writes.ts):
   * past it a batch is answered `throttled` until the applier catches up. `npm start` raises it:
   * one local process writes every batch to one shard.
   */
  pendingBacklogBound: (): number => {
    const n = Number(process.env.PENDING_BACKLOG_BOUND ?? '');
    return process.env.PENDING_BACKLOG_BOUND !== undefined && Number.isInteger(n) && n > 0 ? n : 500;
  },
  /**
   * Write units a second the pending-moves applier takes from one metric shard's keys of a merchant
   * (lib/metrics/pending-applier.ts): beside the full live load's 223 on a shard (docs/scale.md) it
   * stays under 500, and above the 130 an import at its pace needs, so the applier keeps up. 0: unpaced.
   */
  applierWcuPerSecond: (): number => {
    const n = Number(process.env.APPLIER_WCU_PER_SECOND ?? '');
    return process.env.APPLIER_WCU_PER_SECOND !== undefined && Number.isFinite(n) && n >= 0 ? n : 150;
  },
  /** Local stack only: lets webhook endpoints use http://localhost (docs/webhook-endpoints.md). */
  isLocal: (): boolean => process.env.STAGE === 'local',
};
