import type { Context } from 'aws-lambda';
import { now } from '#lib/clock';
import { config } from '#lib/config';
import { DEADLINE_MARGIN_MS, withDeadline } from '#lib/db/retry';
import { logger } from '#lib/logger';
import { merchantIdPages } from '#lib/merchants/store';
import {
  eventsOfMarks,
  OUTBOX_SHARD_LIST,
  OUTBOX_TTL_SECONDS,
  outboxEventPagesSince,
  pendingMarkPages,
  stampPublishedNow,
  type OutboxItem,
} from '#lib/outbox/store';
import { formatTimestamp } from '#lib/shared/time';
import { inTurn } from '#lib/shared/in-turn';
import {
  eventOfItem,
  markOfItem,
  PUBLISH_ATTEMPTS,
  publishInOrder,
  toEntry,
  type Publish,
  type RelayOptions,
  type RelayStats,
} from '#lib/outbox/relay';
import { asFunction, WORKER_FUNCTIONS } from '#lib/shared/invocation';

/**
 * The safety net of the outbox: events recorded but never published (the stream record expired
 * while EventBridge or the relay was down for more than the stream's 24 h, or the relay's stamp
 * failed) are found by their marks still pending (gsi4) past a grace period, confirmed unpublished
 * on the table (strongly consistent), published again and stamped. The replay publishes a
 * merchant's recorded events since a time on demand, published or not.
 *
 * Both are at least once: an event the relay publishes while the sweeper reads it may go out
 * twice, and a replay repeats what was delivered. Receivers dedupe on the event id (`webhook-id`).
 */

/** Marks pending for less than this are left to the relay (it is normally seconds behind). */
export const SWEEP_GRACE_MS = 15 * 60_000;
/** How often the sweeper runs (its EventBridge schedule; `npm start`'s timer). */
export const SWEEP_INTERVAL_MINUTES = 5;
/** The sweeper function's timeout: under the interval, so runs seldom overlap (an overlap only duplicates). */
export const SWEEP_FUNCTION_TIMEOUT_SECONDS = 4 * 60;

/** The relay's options (`deadline`: also no new page is started past it) and the sweep's own. */
export type SweepOptions = RelayOptions & {
  publish: Publish;
  graceMs?: number;
  /** The merchants to sweep, a page at a time (default: the merchant directory). */
  merchants?: AsyncIterable<string[]>;
  /** Where in the merchants the run starts: [0, 1) of the way through (default: at random). */
  random?: () => number;
  /** Marks a shard publishes in a merchant's turn (default SWEEP_PAGE_SIZE). */
  pageSize?: number;
};

export type SweepStats = RelayStats & {
  merchants: number;
  /** Pending marks found in the index, and of those, confirmed unpublished on the table. */
  candidates: number;
  confirmed: number;
  marked: number;
  /** Events EventBridge still refused (left pending for the next run). */
  unpublished: number;
  /** True when the run left events pending (EventBridge refusing them, or the deadline). */
  stopped: boolean;
};

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const publishOptions = (o: Omit<SweepOptions, 'publish' | 'merchants' | 'markPublished' | 'graceMs'>) => ({
  source: o.source ?? config.eventSource(),
  eventBusName: o.eventBusName ?? config.eventBusName() ?? '',
  maxAttempts: o.maxAttempts ?? PUBLISH_ATTEMPTS,
  deadline: o.deadline ?? Infinity,
  sleep: o.sleep ?? sleep,
});

const emptyStats = (): SweepStats => ({
  records: 0,
  events: 0,
  published: 0,
  calls: 0,
  retried: 0,
  merchants: 0,
  candidates: 0,
  confirmed: 0,
  marked: 0,
  unpublished: 0,
  stopped: false,
});

/**
 * Publishes stored outbox items (in the given order) and stamps the marks of those EventBridge
 * accepted. Returns false when some were refused (the rest of the run would fail the same way).
 */
const publishItems = async (items: OutboxItem[], opts: SweepOptions, stats: SweepStats): Promise<boolean> => {
  const o = publishOptions(opts);
  const pending = items.map((item, index) => {
    const event = eventOfItem(item);
    return { index, event, entry: toEntry(event, o), mark: markOfItem(item) };
  });
  stats.records += items.length;
  stats.events += pending.length;
  const { published, failed } = await publishInOrder(pending, opts.publish, o, stats);
  const marks = published.flatMap((p) => (p.mark ? [p.mark] : []));
  if (marks.length) stats.marked += (await (opts.markPublished ?? stampPublishedNow)(marks)).marked;
  stats.unpublished += pending.length - published.length;
  return failed.length === 0;
};

const pastDeadline = (opts: SweepOptions) => Date.now() >= (opts.deadline ?? Infinity);

/** Marks a shard publishes in a merchant's turn: a turn (16 pages) is a sliver of a run's quota on AWS. */
export const SWEEP_PAGE_SIZE = 100;

/** Merchants swept at once (each with its shards at once): a run covers thousands of merchants within its timeout. */
export const SWEEP_MERCHANT_CONCURRENCY = 4;

type MarkPages = AsyncIterator<{ pk: string; sk: string; id: string }[]>;

/**
 * One run of the sweeper over every merchant (or `opts.merchants`), fairly: the run starts at a
 * random merchant of the directory and goes round it in turns, each merchant's turn one page of
 * pending marks per shard, so a merchant with a long backlog never keeps the others waiting past
 * their turn, and no merchant is always first or always last. A shard whose events EventBridge
 * still refuses (after the relay's retries) is left for the next run; the others go on.
 */
export const sweepOutbox = asFunction(WORKER_FUNCTIONS.outboxSweeper, async (opts: SweepOptions): Promise<SweepStats> => {
  const stats = emptyStats();
  const at = now().getTime();
  const until = formatTimestamp(new Date(at - (opts.graceMs ?? SWEEP_GRACE_MS)));
  // Marks past their TTL may linger until DynamoDB deletes them: their events are not published any more.
  const oldest = formatTimestamp(new Date(at - OUTBOX_TTL_SECONDS * 1000));
  const ids: string[] = [];
  for await (const page of opts.merchants ?? merchantIdPages()) ids.push(...page);
  const first = Math.floor((opts.random ?? Math.random)() * ids.length);
  let queue = [...ids.slice(first), ...ids.slice(0, first)];
  // Each merchant's shards still to read, and where each read has got to.
  const open = new Map<string, Map<number, MarkPages>>();
  const shardPages = (merchantId: string, shard: number): MarkPages =>
    pendingMarkPages(merchantId, shard, oldest, until, opts.pageSize ?? SWEEP_PAGE_SIZE)[Symbol.asyncIterator]();
  /** One turn of a merchant: a page of each open shard published. True while some shard has more. */
  const turn = async (merchantId: string): Promise<boolean> => {
    let shards = open.get(merchantId);
    if (!shards) {
      stats.merchants++;
      shards = new Map(OUTBOX_SHARD_LIST.map((s) => [s, shardPages(merchantId, s)]));
      open.set(merchantId, shards);
    }
    const current = shards;
    await Promise.all(
      [...current].map(async ([shard, pages]) => {
        const next = await pages.next();
        if (next.done) return current.delete(shard);
        stats.candidates += next.value.length;
        const items = await eventsOfMarks(
          merchantId,
          next.value.map(({ pk, sk }) => ({ pk, sk })),
          { unpublished: true },
        );
        stats.confirmed += items.length;
        // Refused: the shard's events stay pending for the next run (in order: nothing after them goes first).
        if (!(await publishItems(items, opts, stats))) current.delete(shard);
      }),
    );
    if (current.size) return true;
    open.delete(merchantId);
    return false;
  };
  while (queue.length && !pastDeadline(opts)) {
    const again: string[] = [];
    await inTurn(queue, SWEEP_MERCHANT_CONCURRENCY, async (merchantId) => {
      if (pastDeadline(opts)) return false;
      if (await turn(merchantId)) again.push(merchantId);
    });
    queue = again;
  }
  stats.stopped = queue.length > 0 || stats.unpublished > 0;
  return stats;
});

/** The replay refuses a start the outbox no longer holds (items expire after OUTBOX_TTL_SECONDS). */
export class ReplayRangeError extends Error {
  constructor(since: string, oldest: string) {
    super(`--since ${since} is older than the outbox keeps events (3 days, by TTL): the oldest replayable time is ${oldest}.`);
    this.name = 'ReplayRangeError';
  }
}

/**
 * Publishes again every recorded event of `merchantId` created at or after `since` (shard by
 * shard, each oldest first), published or not. Throws ReplayRangeError for a start past the
 * outbox's retention, and an Error when EventBridge keeps refusing (what was sent is in its stats).
 */
export const replayOutbox = async (
  merchantId: string,
  since: string,
  opts: Omit<SweepOptions, 'merchants' | 'graceMs'>,
): Promise<SweepStats> => {
  const oldest = formatTimestamp(new Date(now().getTime() - OUTBOX_TTL_SECONDS * 1000));
  const start = new Date(since);
  if (!Number.isFinite(start.getTime())) throw new ReplayRangeError(since, oldest);
  const from = formatTimestamp(start);
  if (from < oldest) throw new ReplayRangeError(since, oldest);
  const stats = emptyStats();
  stats.merchants = 1;
  for await (const items of outboxEventPagesSince(merchantId, from)) {
    stats.candidates += items.length;
    stats.confirmed += items.length;
    if (!(await publishItems(items, opts, stats))) {
      throw new Error(
        `EventBridge refused ${stats.unpublished} event(s) after ${stats.published} were published: run the replay again (receivers drop duplicates).`,
      );
    }
  }
  return stats;
};

/** The sweeper as a scheduled Lambda handler. */
export const createSweeperHandler =
  (publish: Publish, options: Omit<SweepOptions, 'publish' | 'deadline'> = {}) =>
  async (_event: unknown, context: Context): Promise<SweepStats> => {
    logger.addContext(context);
    const deadline = Date.now() + context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS;
    const stats = await withDeadline(deadline, () => sweepOutbox({ ...options, publish, deadline }));
    logger[stats.unpublished ? 'warn' : 'info']('outbox sweep', { ...stats });
    return stats;
  };
