import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { batchGet, keyId } from '#lib/db/batch-get';
import { db, tableName } from '#lib/db/client';
import {
  churnReasonsPartition,
  cohortPartition,
  cohortShardPartition,
  CUSTOMER_INDEX_SHARDS,
  METRIC_SHARDS,
  metricShardOfKey,
  customerMetadataPartition,
  keys,
  metricsPartition,
  metricsShardPartition,
  shardPartitions,
  planCustomersPartition,
  plansPartition,
  salesShardPartition,
  salesItemOfSk,
  salesItemSk,
  salesLanesEnd,
  type SalesKind,
  TIMELINE_CHUNK_PREFIX,
  type Key,
} from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { itemAbsent, pendingMovesOf, versionIs, type WriteSet } from '#lib/db/writes';
import { COHORT_PROJECTION, STORED_ATTR, type AggregateItem, type RangeReads } from '#lib/metrics/rules';
import { now } from '#lib/clock';
import { addOutboxEvent, RENEWAL_EVENT } from '#lib/outbox/store';
import { delinquencyDaysOf } from '#lib/merchants/rules';
import { RecountingError } from '#lib/errors';
import { deadline, retrying, RetryableError } from '#lib/db/retry';
import { COUNTER_SHARDS } from '#lib/db/writes-constants';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatTimestamp } from '#lib/shared/time';
import { DEFAULT_TIMEZONE } from '#lib/shared/zone';
import {
  changedLines,
  chunkTimeline,
  contributionChange,
  firstDifference,
  joinChunks,
  NO_STANDING,
  type Segment,
  type Standing,
  type StandingStep,
  standingAt,
  standingFromSteps,
  standingSteps,
  segmentsOf,
  foreignCurrencies,
  type RateBook,
  type Contributions,
  type SegmentMoves,
  type Timeline,
  isOrderLine,
  withConversions,
  withRenewals,
  renewalGraceEnd,
} from '#lib/metrics/timeline';
import {
  BOOKING_LINE,
  type BookingLines,
  bookingCurrencies,
  isBookingLine,
  isSalesAttr,
  type Money,
  orderSegments,
  ordersOfBookings,
  type SaleOrder,
  salesChange,
} from '#lib/metrics/bookings';
import { ExactDecimal } from '#lib/shared/money';
import type Decimal from 'decimal.js';
import {
  addGenerationCurrent,
  copyOf,
  currentScope,
  generationSettings,
  type FiguresScope,
  type GenerationCopy,
  type SettingsMemo,
} from '#lib/metrics/generation';

/**
 * The customer's MRR timeline and the aggregate moves of a change (docs/architecture.md, "Metrics aggregates"). A write
 * reads the timeline by key (strongly consistent) in the same attempt as the rest of its state,
 * computes the new timeline, and `addTimelineChange` adds to its WriteSet: the timeline (its head
 * put under the version read) and the difference of the customer's contributions as ADD deltas to
 * the day, month and cohort items. One transaction: the change and its metrics commit together or
 * not at all.
 *
 * Storage stays bounded however long the history: the head holds the points inline while they fit
 * INLINE_LIMIT; beyond that the head only says `chunked` and the points live in chunk items of at
 * most CHUNK_LIMIT each, split when full (`chunkTimeline`). A change rewrites the head and the
 * chunks whose points it moves, nothing else.
 */
export type TimelineState = {
  timeline: Timeline;
  version: number | null;
  /** The time zone whose days and months the aggregates count this customer in (the merchant's when last written). */
  zone: string;
  /** Stored chunks (period → JSON) of a chunked timeline; null while it is inline. */
  chunks: Map<string, string> | null;
  /** The generation whose settings its stored conversions and standing are in (its last write's). */
  generation: number;
  /** The generation a recount counted it in (lib/metrics/recount.ts): its writes move that one too while the recount runs. */
  recounted?: number;
  /**
   * The customer's bookings (lib/metrics/bookings.ts): one line `B<order_no>` per order, stored with
   * the timeline's lines (inline or in its chunks) under the same version, so the sales figures have
   * the same raw record, generations and recounts as the MRR ones.
   */
  bookings: BookingLines;
  /**
   * When its order lines' renewals were last settled (`withRenewals`): a grace that ran out before
   * then is over in the stored lines. Absent: written before renewals were chained (lines as made).
   */
  settledAt?: string;
  /**
   * The time the scheduler's renewal check of this customer is armed for (its wait is open until
   * then): a grace ending at or after it needs no other wait, the check waits on to it.
   */
  renewalArmed?: string;
};

export const EMPTY_TIMELINE: TimelineState = {
  timeline: {},
  version: null,
  zone: DEFAULT_TIMEZONE,
  chunks: null,
  generation: 0,
  bookings: {},
};

/** The stored lines split: the MRR timeline and the bookings. */
const splitStored = (stored: Timeline): { timeline: Timeline; bookings: BookingLines } => {
  const timeline: Timeline = {};
  const bookings: Record<string, unknown> = {};
  for (const [line, pts] of Object.entries(stored)) {
    if (isBookingLine(line)) bookings[line] = pts;
    else timeline[line] = pts;
  }
  return { timeline, bookings: bookings as BookingLines };
};
/** The stored lines (timeline's and bookings') that differ between `stored` and the new state. */
const movedLines = (stored: TimelineState, after: Timeline, bookings: BookingLines): string[] => [
  ...changedLines(stored.timeline, after),
  ...changedLines(stored.bookings as unknown as Timeline, bookings as unknown as Timeline),
];
/** Of the lines as stored (`timeline` and `bookings`), those named in `lines`. */
const pickStored = (timeline: Timeline, bookings: BookingLines, lines: string[]): Timeline => {
  const booked = bookings as unknown as Timeline;
  const out: Timeline = {};
  for (const line of lines) {
    const pts = isBookingLine(line) ? booked[line] : timeline[line];
    if (pts) out[line] = pts;
  }
  return out;
};
/** The lines as stored: the bookings' lines beside the timeline's (chunked by their first element, a time, as points are). */
const joinStored = (timeline: Timeline, bookings: BookingLines): Timeline => ({ ...timeline, ...(bookings as unknown as Timeline) });

export type { FiguresScope };
export const INLINE_LIMIT = 32_000;
export const CHUNK_LIMIT = 32_000;

/** The state a head item stands for, once its chunks (if any) are read. */
const stateOf = async (
  merchantId: string,
  customerId: number,
  head: Record<string, unknown> | undefined | null,
): Promise<TimelineState> => {
  if (!head) return EMPTY_TIMELINE;
  const version = Number(head.version);
  const zone = typeof head.zone === 'string' ? head.zone : DEFAULT_TIMEZONE;
  const generation = Number(head.generation ?? 0);
  // What the head notes beside its lines: the recount that counted it, when renewals were settled and armed.
  const marks = {
    ...(head.recounted === undefined ? {} : { recounted: Number(head.recounted) }),
    ...(typeof head.settled_at === 'string' ? { settledAt: head.settled_at } : {}),
    ...(typeof head.renewal_armed === 'string' ? { renewalArmed: head.renewal_armed } : {}),
  };
  if (!head.chunked)
    return { ...splitStored(JSON.parse(String(head.lines)) as Timeline), version, zone, chunks: null, generation, ...marks };
  const items = await queryAll<{ sk: string; lines: string }>(
    {
      partition: keys.customer(merchantId, customerId).pk,
      from: TIMELINE_CHUNK_PREFIX,
      to: `${TIMELINE_CHUNK_PREFIX}~`,
      descending: false,
    },
    ['sk', 'lines'],
  );
  const chunks = new Map(items.map((i) => [i.sk.slice(TIMELINE_CHUNK_PREFIX.length), i.lines]));
  return { ...splitStored(joinChunks(chunks.values())), version, zone, chunks, generation, ...marks };
};

/** The condition that a timeline head is as read: its version, and the recount that counted it (a recount's mark changes no version). */
export const recountedAsRead = (state: Pick<TimelineState, 'version' | 'recounted'>) =>
  state.version === null
    ? itemAbsent
    : {
        expression: `version = :v AND ${state.recounted === undefined ? 'attribute_not_exists(#rcd)' : '#rcd = :rcd'}`,
        names: { '#rcd': 'recounted' },
        values: { ':v': state.version, ...(state.recounted === undefined ? {} : { ':rcd': state.recounted }) },
      };

/**
 * The registry items of `segments` in generation `generation` (lib/metrics/recount.ts retires a
 * generation's segments by them): an MRR slice's by its dimension, a sales slice's by its dimension
 * after `SALES_REGISTRY` (`sales.currency#USD`), so retiring reads only the partitions a slice has.
 */
export const SALES_REGISTRY = 'sales.';
export const segmentRegistryPuts = (merchantId: string, generation: number, segments: Segment[], shard: number, sales = false) =>
  segments.map((s) => ({
    ...keys.generationSegment(merchantId, generation, `${sales ? SALES_REGISTRY : ''}${s.dimension}`, s.value, shard),
    dimension: `${sales ? SALES_REGISTRY : ''}${s.dimension}`,
    value: s.value,
  }));

export const readTimeline = async (merchantId: string, customerId: number): Promise<TimelineState> => {
  const { Item } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.customerTimeline(merchantId, customerId), ConsistentRead: true }),
  );
  return stateOf(merchantId, customerId, Item);
};

/**
 * The timelines of `ids` from their head items as read by key (a BatchGetItem with the caller's
 * other reads); a chunked one costs one more strongly consistent Query for its chunks.
 */
export const timelinesFrom = async (
  merchantId: string,
  found: Map<string, Record<string, unknown>>,
  ids: Iterable<number>,
): Promise<Map<number, TimelineState>> => {
  const out = new Map<number, TimelineState>();
  await Promise.all(
    [...new Set(ids)].map(async (id) =>
      out.set(id, await stateOf(merchantId, id, found.get(keyId(keys.customerTimeline(merchantId, id))))),
    ),
  );
  return out;
};

/**
 * The aggregate item (in `shard`, of the whole or of one segment) a contribution id names (`D#<day>`,
 * `M#<month>`, `C#<cohort>#<month>`, churn by reason `RD#<day>#<reason>` / `RM#<month>#<reason>`).
 */
export const aggregateKey = (merchantId: string, id: string, shard: number, segment: Segment | null = null, generation = 0): Key => {
  // The sales figures' ids (`S` and the item's sort key: lib/metrics/bookings.ts).
  if (id.startsWith(SALES_ID))
    return {
      pk: salesShardPartition(merchantId, segment, generation, salesKindOf(id), shard),
      sk: salesItemSk(id.slice(SALES_ID.length), shard),
    };
  if (id.startsWith('D#')) return keys.metricsDay(merchantId, id.slice(2), shard, segment, generation);
  if (id.startsWith('M#')) return keys.metricsMonth(merchantId, id.slice(2), shard, segment, generation);
  if (id.startsWith('F#')) return keys.metricsForecast(merchantId, id.slice(2), shard, generation);
  if (id.startsWith('R')) {
    const [kind, period, reason] = id.split('#');
    return keys.churnReason(merchantId, kind.slice(1) as 'D' | 'M', period, reason, shard, generation);
  }
  const [, cohort, month] = id.split('#');
  return keys.metricsCohort(merchantId, cohort, month, shard, segment, generation);
};

/**
 * Where an aggregate's pending moves are kept: in its own partition, sorted where every read of
 * it looks (before every month of the movement items; inside its cohort's range of cohort items).
 */
export const PENDING_MONTH = '0000-00';
/** The prefix of a sales figure's id among a change's moves (the MRR ones start `D#`, `M#`, `C#`, `R`). */
export const SALES_ID = 'S';
/** The partition kind of a sales item (by its sort key's first letter: booking days and months, payment-method days, cohorts). */
const salesKindOf = (id: string): SalesKind => {
  const first = id.startsWith(SALES_ID) ? id[SALES_ID.length] : id[0];
  return first === 'Y' ? 'Y' : first === 'C' ? 'C' : 'B';
};
/** Where a kind's pending moves are kept: before every item of its partition (the bookings', before every month). */
const salesHome = (kind: SalesKind) => (kind === 'B' ? `M#${PENDING_MONTH}` : `${kind}#0000`);
export const pendingHome = (merchantId: string, id: string, shard: number, segment: Segment | null = null, generation = 0): Key =>
  id.startsWith(SALES_ID)
    ? { pk: salesShardPartition(merchantId, segment, generation, salesKindOf(id), shard), sk: salesHome(salesKindOf(id)) }
    : id.startsWith('C#')
      ? { pk: cohortShardPartition(merchantId, segment, generation, shard), sk: `${id.split('#')[1]}#${PENDING_MONTH}` }
      : id.startsWith('R')
        ? { pk: churnReasonsPartition(merchantId, generation), sk: `M#${PENDING_MONTH}` }
        : { pk: metricsShardPartition(merchantId, segment, generation, shard), sk: `M#${PENDING_MONTH}` };

/**
 * Adds the customer's timeline change to `ws`: the timeline's items and the aggregate moves (those
 * beyond what one transaction holds wait as pending moves, see `WriteSet.spillable`), on condition
 * that the generation copy of its shard still says what the request counts in
 * (`addGenerationCurrent`). Returns the state the transaction leaves. The moves are counted in the
 * settings of the generation that counts (its zone, its rates: `generationSettings`); while a
 * recount runs and has counted this customer (or the customer is new), the same change is counted
 * in the recount's generation and settings too, in the same transaction: the recount's count of a
 * customer and its mark commit together, so it is counted there exactly once.
 */
export const addTimelineChange = async (
  ws: WriteSet,
  merchantId: string,
  request: FiguresScope,
  customerId: number,
  stored: TimelineState,
  lines: Timeline,
  memo: SettingsMemo = new Map(),
  bookings: BookingLines = stored.bookings,
): Promise<TimelineState> => {
  const scope = await currentScope(merchantId, request);
  const { reportingCurrency, timezone: zone, generation, recount } = scope;
  const currencies = foreignCurrencies(lines, reportingCurrency);
  const all = new Set([
    ...currencies,
    ...foreignCurrencies(stored.timeline, reportingCurrency),
    ...bookingCurrencies(bookings, reportingCurrency),
    ...bookingCurrencies(stored.bookings, reportingCurrency),
  ]);
  const { rates } = await generationSettings(merchantId, generation, all, memo, zone);
  // Order renewals are settled at every write: a grace that ran out since is over from now on.
  const at = formatTimestamp(now());
  const grace = delinquencyDaysOf({ delinquency_days: scope.delinquencyDays });
  const settled = withRenewals(lines, grace, at);
  const after = withConversions(settled, reportingCurrency, rates, zone);
  // Stored conversions are the last write's generation's: another's are converted again in this one's settings.
  const before =
    stored.version === null || stored.generation === generation
      ? stored.timeline
      : withConversions(asCounted(stored, grace), reportingCurrency, rates, zone);
  const counting = recount !== undefined && (stored.version === null || stored.recounted === recount);
  if (firstDifference(before, after) === null && bookings === stored.bookings && stored.generation === generation) return stored;
  const key = keys.customerTimeline(merchantId, customerId);
  const version = (stored.version ?? 0) + 1;
  // A renewal grace running after this write: the scheduler is armed for its end unless a wait of
  // this customer's is open until then or earlier (its check waits on to the grace's end). So a
  // customer has one open wait, not one per order.
  const graceEnd = renewalGraceEnd(settled, grace, at);
  const armed = stored.renewalArmed !== undefined && stored.renewalArmed >= at ? stored.renewalArmed : undefined;
  const arm = graceEnd !== null && (armed === undefined || graceEnd < armed);
  const renewalArmed = arm ? graceEnd : armed;
  let chunks: Map<string, string> | null = null;
  const inline = stored.chunks ? null : JSON.stringify(joinStored(after, bookings));
  // The customer's standing from now on, so reading a customer's MRR and status costs the head only.
  const { steps, complete } = standingSteps(after, reportingCurrency, at);
  const standing = { standing: JSON.stringify(steps), standing_complete: complete };
  // Its zone, the other currencies it has, the generation its conversions are in, the recount that counted it.
  const counted = {
    ...(zone === DEFAULT_TIMEZONE ? {} : { zone }),
    currencies: [...currencies].sort(),
    ...(generation ? { generation } : {}),
    ...(counting ? { recounted: recount } : {}),
    ...(Object.keys(after).some(isOrderLine) ? { settled_at: at } : {}),
    ...(renewalArmed === undefined ? {} : { renewal_armed: renewalArmed }),
  };
  const guard = recountedAsRead(stored);
  if (inline !== null && Buffer.byteLength(inline) <= INLINE_LIMIT) {
    ws.put('timeline', { ...key, customer_id: customerId, lines: inline, version, ...standing, ...counted }, guard);
  } else {
    // Only the chunks whose points moved are written; one outgrowing its limit is split. From
    // chunks, only the lines that moved are handed over (the others are taken from their chunks).
    const moved = stored.chunks ? movedLines(stored, after, bookings) : [];
    chunks = stored.chunks
      ? chunkTimeline(pickStored(after, bookings, moved), CHUNK_LIMIT, stored.chunks, pickStored(stored.timeline, stored.bookings, moved))
      : chunkTimeline(joinStored(after, bookings), CHUNK_LIMIT);
    ws.put('timeline', { ...key, customer_id: customerId, chunked: true, version, ...standing, ...counted }, guard);
    for (const [period, json] of chunks) {
      if (stored.chunks?.get(period) !== json)
        ws.put('timeline-chunk', { ...keys.customerTimelineChunk(merchantId, customerId, period), lines: json });
    }
  }
  // Chunks of periods the new layout no longer has (or all of them, back inline) go.
  for (const period of stored.chunks?.keys() ?? [])
    if (!chunks?.has(period)) ws.delete('timeline-chunk', keys.customerTimelineChunk(merchantId, customerId, period));
  // The scheduler armed through an internal bus event (never a webhook).
  if (arm) addOutboxEvent(ws, merchantId, RENEWAL_EVENT, { customer_id: customerId, grace_ends_at: graceEnd }, at);
  // Checked whenever the timeline is written, moves or not: what the request counts in must still be what counts.
  addGenerationCurrent(ws, merchantId, scope);
  addMoves(ws, merchantId, generation, before, after, reportingCurrency, zone);
  addSalesMoves(ws, merchantId, generation, customerId, stored.bookings, bookings, { zone, reporting: reportingCurrency, rates });
  if (counting) {
    // The recount's settings: the same lines, in its zone and at its rates.
    const next = await generationSettings(merchantId, recount, all, memo);
    const raw = stored.version === null ? {} : withConversions(asCounted(stored, grace), reportingCurrency, next.rates, next.zone);
    addMoves(
      ws,
      merchantId,
      recount,
      raw,
      withConversions(settled, reportingCurrency, next.rates, next.zone),
      reportingCurrency,
      next.zone,
    );
    addSalesMoves(ws, merchantId, recount, customerId, stored.version === null ? {} : stored.bookings, bookings, {
      zone: next.zone,
      reporting: reportingCurrency,
      rates: next.rates,
    });
  }
  // A plan new to this customer's timeline: the customer joins that plan's customers (never removed).
  for (const plan of plansOf(after, changedLines(before, after)))
    if (!hasPlan(before, plan)) ws.put('plan_customer', { ...keys.planCustomer(merchantId, plan, customerId), customer_id: customerId });
  return {
    timeline: after,
    version,
    zone,
    chunks,
    generation,
    bookings,
    ...(counting ? { recounted: recount } : {}),
    ...(counted.settled_at ? { settledAt: at } : {}),
    ...(renewalArmed === undefined ? {} : { renewalArmed }),
  };
};

/**
 * Records that a customer's renewal check waits on until `at` (the scheduler's check found a grace
 * still running): later writes then arm no other wait for a grace ending by then. A hint only: lost
 * to a concurrent write, a later write arms one wait more.
 */
export const noteRenewalWait = async (merchantId: string, customerId: number, at: string) => {
  await db()
    .send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.customerTimeline(merchantId, customerId),
        UpdateExpression: 'SET renewal_armed = :at',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(renewal_armed) OR renewal_armed < :at)',
        ExpressionAttributeValues: { ':at': at },
      }),
    )
    .catch((err: unknown) => {
      if ((err as { name?: string }).name !== 'ConditionalCheckFailedException') throw err;
    });
};

/**
 * A stored timeline as another generation counted it (a recount, lib/metrics/recount.ts): its
 * renewals settled at the time they were stored, with that generation's grace (`grace`).
 */
export const asCounted = (stored: Pick<TimelineState, 'timeline' | 'settledAt'>, grace: number): Timeline =>
  stored.settledAt === undefined ? stored.timeline : withRenewals(stored.timeline, grace, stored.settledAt);

/** The MRR moves of a change in generation `generation` (the difference of the customer's contributions). */
const addMoves = (
  ws: WriteSet,
  merchantId: string,
  generation: number,
  before: Timeline,
  after: Timeline,
  reportingCurrency: string,
  zone: string,
) =>
  addSliceMoves(
    ws,
    merchantId,
    generation,
    contributionChange(before, after, reportingCurrency, zone),
    segmentsOf(before, reportingCurrency),
  );

/** The sales moves of a change of the customer's bookings, in `money` (a generation's settings). */
const addSalesMoves = (
  ws: WriteSet,
  merchantId: string,
  generation: number,
  customerId: number,
  before: BookingLines,
  after: BookingLines,
  money: Money,
) => {
  if (before === after) return;
  const was = ordersOfBookings(before, customerId);
  const moved = salesChange(was, ordersOfBookings(after, customerId), money);
  addSliceMoves(
    ws,
    merchantId,
    generation,
    moved.map(({ segment, moves }) => ({ segment, moves: salesIds(moves) })),
    [...new Map([...was.values()].flatMap(orderSegments).map((g) => [`${g.dimension}#${g.value}`, g])).values()],
    true,
  );
};

/** Sales figures as moves among the MRR ones: each item's id prefixed (`aggregateKey` routes it to the sales partitions). */
export const salesIds = (figures: Contributions): Contributions => new Map([...figures].map(([id, attrs]) => [`${SALES_ID}${id}`, attrs]));

/**
 * Moves of a change in generation `generation` (ADD deltas per slice), and what a segment new to
 * this customer (not among `had`) adds: its registry entry in that generation (its retirement finds
 * its items by it) and, for a plan, the merchant's plan list.
 */
const addSliceMoves = (ws: WriteSet, merchantId: string, generation: number, moved: SegmentMoves[], had: Segment[], sales = false) => {
  const known = new Set(had.map((s) => `${s.dimension}#${s.value}`));
  for (const { segment, moves: slice } of moved) {
    // A change reaching far back may move more aggregates than one transaction holds: the excess
    // waits in pending-moves items that every read adds in (exact from the next read on).
    for (const [id, attrs] of slice) {
      const u = ws
        .update('metrics', aggregateKey(merchantId, id, ws.shard, segment, generation))
        .spillable(pendingHome(merchantId, id, ws.shard, segment, generation));
      for (const [attr, delta] of attrs) u.add(storedAttr(id, attr), delta);
    }
    if (!segment || known.has(`${segment.dimension}#${segment.value}`)) continue;
    const [entry] = segmentRegistryPuts(merchantId, generation, [segment], ws.shard, sales);
    if (!ws.has(entry)) ws.put('segment', entry);
    // A plan new to this customer's figures joins the merchant's plan list (sharded like the aggregates).
    if (segment.dimension === 'plan' && !ws.has(keys.plan(merchantId, segment.value, ws.shard)))
      ws.update('plan', keys.plan(merchantId, segment.value, ws.shard)).set('plan', segment.value);
  }
};

/** The attribute a figure is stored under: the MRR figures' short names (`STORED_ATTR`); the sales figures' as they are. */
export const storedAttr = (id: string, attr: string) => (id.startsWith(SALES_ID) ? attr : (STORED_ATTR[attr] ?? attr));

const hasPlan = (tl: Timeline, plan: string) => Object.values(tl).some((pts) => pts.some((p) => p[3]?.[0] === plan));
/** The plans the points of `lines` (all of them by default) of a timeline are tagged with. */
export const plansOf = (tl: Timeline, lines: Iterable<string> = Object.keys(tl)): Set<string> => {
  const out = new Set<string>();
  for (const line of lines) for (const p of tl[line] ?? []) if (p[3]?.[0] != null) out.add(p[3][0]);
  return out;
};

/**
 * Customers' MRR and latest subscription status now (docs/customers.md): their timeline heads in one
 * BatchGetItem, each read from the steps its last write stored; a customer read past what those
 * steps know (or written before they were stored) is computed from its timeline (one more read).
 */
export const readStandings = async (merchantId: string, figures: FiguresScope, ids: number[]): Promise<Map<number, Standing>> => {
  const unique = [...new Set(ids)];
  const found = unique.length
    ? await batchGet<Record<string, unknown>>(
        unique.map((id) => keys.customerTimeline(merchantId, id)),
        STANDING_ATTRIBUTES,
      )
    : new Map<string, Record<string, unknown>>();
  return standingsOf(merchantId, figures, unique, found);
};

const STANDING_ATTRIBUTES = ['standing', 'standing_complete', 'generation', 'currencies'];

/** The key of a customer's standing (its timeline head), for a caller that reads it beside other items. */
export const standingKey = (merchantId: string, id: number): Key => keys.customerTimeline(merchantId, id);

/**
 * The customers' standings from their timeline heads already read (`found`, by `keyId`; a
 * customer without one has none). A head stored in an older generation by a customer with other
 * currencies is recounted from its timeline (steps stored then may be at rates changed since).
 */
export const standingsOf = async (
  merchantId: string,
  figures: FiguresScope,
  ids: number[],
  found: Map<string, Record<string, unknown>>,
): Promise<Map<number, Standing>> => {
  const at = formatTimestamp(now());
  const stale = (head: Record<string, unknown>) =>
    Number(head.generation ?? 0) !== figures.generation && (!Array.isArray(head.currencies) || head.currencies.length > 0);
  const recounted = async (id: number) =>
    (await countedTimelines(merchantId, figures, new Map([[id, await readTimeline(merchantId, id)]]))).get(id)!.timeline;
  const out = new Map<number, Standing>();
  await Promise.all(
    [...new Set(ids)].map(async (id) => {
      const head = found.get(keyId(keys.customerTimeline(merchantId, id)));
      if (!head) return out.set(id, NO_STANDING);
      const stored =
        typeof head.standing === 'string' && !stale(head)
          ? standingFromSteps(JSON.parse(head.standing) as StandingStep[], head.standing_complete === true, at)
          : null;
      out.set(id, stored ?? standingAt(await recounted(id), figures.reportingCurrency, at));
    }),
  );
  return out;
};

/**
 * Customers (deleted ones included) and their timelines by id, in one BatchGetItem per 50
 * customers: order writes read the timeline with the customer they already read (and `extra`
 * items beside them, in `found`).
 */
export const customersWithTimelines = async <C>(merchantId: string, ids: number[], extra: Key[] = []) => {
  const unique = [...new Set(ids)];
  const found = await batchGet<Record<string, unknown>>([
    ...unique.flatMap((id) => [keys.customer(merchantId, id), keys.customerTimeline(merchantId, id)]),
    ...extra,
  ]);
  const customers = new Map<number, C>();
  for (const id of unique) {
    const customer = found.get(keyId(keys.customer(merchantId, id)));
    if (customer) customers.set(id, customer as C);
  }
  return { customers, timelines: await timelinesFrom(merchantId, found, unique), found };
};

const isPending = (item: AggregateItem) => item.moves !== undefined;
/** A pending-moves item as the items it is for (their sort keys, the deltas as their attributes). */
const pendingItems = (item: AggregateItem): AggregateItem[] => pendingMovesOf(item).map(([sk, adds]) => ({ sk, ...adds }));

/**
 * Where a read's aggregate items are: `sharded`, prefixes whose METRIC_SHARDS partitions it Queries
 * (movements or cohorts, whole or of a segment); `unsharded`, partitions whose items name their
 * shard in the sort key (churn by reason).
 */
export type AggregateSource = { sharded: string[]; unsharded?: string[]; generation: number };
/** The movement prefix of the whole (segment null) or of one segment. */
export const movementsSource = (merchantId: string, segments: (Segment | null)[], generation = 0): AggregateSource => ({
  sharded: segments.map((segment) => metricsPartition(merchantId, segment, generation)),
  generation,
});
/** Churn by cancellation reason (the same day and month layout, a reason and the shard in each sort key). */
export const reasonsSource = (merchantId: string, generation = 0): AggregateSource => ({
  sharded: [],
  unsharded: [churnReasonsPartition(merchantId, generation)],
  generation,
});

/** An item read, with the metric shard it counts in. */
type ShardItem = { shard: number; item: AggregateItem };
const shardOfItem = (item: AggregateItem): number => {
  const own = metricShardOfKey({ pk: String(item.pk), sk: String(item.sk) });
  return own === null || own < 0 ? Number(item.pending_shard ?? 0) : own;
};
/** Each partition `source` names for `shards`, with its shard (null: its items name theirs). */
const partitionsOf = (source: AggregateSource, shards: number[]) => [
  ...source.sharded.flatMap((prefix) => shards.map((shard) => ({ partition: shardPartitions(prefix)[shard], shard }))),
  ...(source.unsharded ?? []).map((partition) => ({ partition, shard: null as number | null })),
];

/**
 * A read of a generation no longer counted (a recount switched while it read): its items may be
 * being deleted, so the read is made again in the generation the copy names (`figuresRead`).
 */
export class FiguresMoved extends Error {
  constructor(readonly copy: GenerationCopy) {
    super('the figures generation moved during the read');
  }
}

/** Every lane's figures version, joined per metric shard, and a generation copy: one strongly consistent BatchGetItem. */
const shardVersions = async (merchantId: string): Promise<{ versions: string[]; copy: GenerationCopy }> => {
  const lanes = Array.from({ length: COUNTER_SHARDS }, (_, lane) => keys.figuresVersion(merchantId, lane));
  const read = await batchGet<Record<string, unknown>>(
    [...lanes, keys.generation(merchantId, 0)],
    ['v', 'generation', 'timezone', 'recount'],
  );
  const out = Array.from({ length: METRIC_SHARDS }, () => [] as string[]);
  lanes.forEach((key, lane) => out[lane % METRIC_SHARDS].push(String(read.get(keyId(key))?.v ?? 0)));
  return { versions: out.map((v) => v.join(',')), copy: copyOf(read.get(keyId(keys.generation(merchantId, 0)))) };
};

/**
 * The items `read` returns, each metric shard's as of one moment, so every write is in the answer
 * whole or not at all (docs/metrics.md, "What a read sees while writes land"). Every transaction
 * that writes the aggregates adds to its shard's figures version (lib/db/writes.ts); the versions are
 * read before and after the Queries (one BatchGetItem each), and a shard whose versions moved
 * meanwhile is read again, alone, from fresh versions: an attempt of the one retry layer, a lost
 * race (409 when none is left). The same read gives a generation copy: generation `generation` no
 * longer counting after the Queries, the read is made again in the one that does (`FiguresMoved`).
 */
export const oneState = async (
  merchantId: string,
  generation: number,
  read: (shards: number[]) => Promise<ShardItem[]>,
): Promise<AggregateItem[]> => {
  const kept: AggregateItem[] = [];
  let todo = Array.from({ length: METRIC_SHARDS }, (_, shard) => shard);
  await retrying(async () => {
    const before = await shardVersions(merchantId);
    const items = await read(todo);
    const after = await shardVersions(merchantId);
    if (after.copy.generation !== generation) throw new FiguresMoved(after.copy);
    const held = new Set(todo.filter((shard) => before.versions[shard] === after.versions[shard]));
    for (const { shard, item } of items) if (held.has(shard)) kept.push(item);
    todo = todo.filter((shard) => !held.has(shard));
    if (todo.length) throw new RetryableError('contention', `the figures of metric shard ${todo.join(', ')} moved during the read`);
  });
  return kept;
};

/**
 * `read` in the request's figures, or, when a recount switched while it read, once more in the
 * generation and zone that count since.
 */
export const figuresRead = async <F extends FiguresScope, T>(figures: F, read: (figures: F) => Promise<T>): Promise<T> => {
  try {
    return await read(figures);
  } catch (err) {
    if (!(err instanceof FiguresMoved)) throw err;
    const { recount: _r, ...rest } = figures;
    return read({
      ...rest,
      generation: err.copy.generation,
      timezone: err.copy.timezone,
      ...(err.copy.recount === undefined ? {} : { recount: err.copy.recount }),
    } as F);
  }
};

/** The range's aggregate items as read (month roll-ups with pending moves and markers, then days), before sorting out. */
const rangeQueries =
  ({ monthsTo, dayRanges }: RangeReads, sources: AggregateSource[]) =>
  async (shards: number[]): Promise<ShardItem[]> => {
    // Every attribute: the levels left unconverted (`uUSD`) are named by currency (a read costs the items' size either way).
    const query = (partition: string, lo: string, hi: string) =>
      queryAll<AggregateItem>({ partition, from: lo, to: hi, descending: false }, []);
    const reads = await Promise.all(
      sources
        .flatMap((source) => partitionsOf(source, shards))
        .map(async ({ partition, shard }) =>
          (await Promise.all([query(partition, 'M#', monthsTo), ...dayRanges.map(([lo, hi]) => query(partition, lo, hi))]))
            .flat()
            .map((item) => ({ shard: shard ?? shardOfItem(item), item })),
        ),
    );
    return reads.flat();
  };

/**
 * The months and days of items read by `rangeQueries`: pending moves (sorted before every month,
 * so always read) as the items they are for, where the Queries would have read them.
 */
export const rangeItemsOf = (read: AggregateItem[], { monthsTo, dayRanges }: RangeReads) => {
  const months: AggregateItem[] = [];
  const days: AggregateItem[] = [];
  for (const item of read) if (!isPending(item)) (String(item.sk).startsWith('D#') ? days : months).push(item);
  for (const moved of read.filter(isPending).flatMap(pendingItems)) {
    const sk = String(moved.sk);
    if (sk.startsWith('M#') && sk <= monthsTo) months.push(moved);
    else if (sk.startsWith('D#') && dayRanges.some(([lo, hi]) => sk >= lo && sk <= hi)) days.push(moved);
  }
  return { months, days };
};

/**
 * The aggregate items `rangeReads` names in `sources` (each in one state, `oneState`): in each
 * partition, one Query of month roll-ups and up to two of day items, all at once, strongly consistent.
 */
export const readRangeItems = async (merchantId: string, reads: RangeReads, ...sources: AggregateSource[]) =>
  rangeItemsOf(await oneState(merchantId, sources[0].generation, rangeQueries(reads, sources)), reads);

/**
 * What GET /metrics/forecast reads of the whole, in one state: the items of `reads` (the level now)
 * and the forecast's month items `F#<from>` to `F#<to>`, pending moves included as the items they
 * are for. One Query more a shard than a range read.
 */
export const readForecastItems = async (merchantId: string, reads: RangeReads, generation: number, from: string, to: string) => {
  const source = movementsSource(merchantId, [null], generation);
  const levels = rangeQueries(reads, [source]);
  const read = await oneState(merchantId, generation, async (shards) => {
    const forecast = partitionsOf(source, shards).map(async ({ partition, shard }) =>
      (await queryAll<AggregateItem>({ partition, from: `F#${from}`, to: `F#${to}#~`, descending: false }, [])).map((item) => ({
        shard: shard!,
        item,
      })),
    );
    return [...(await levels(shards)), ...(await Promise.all(forecast)).flat()];
  });
  const isForecast = (item: AggregateItem) => String(item.sk).startsWith('F#');
  const forecast = read.filter((item) => !isPending(item) && isForecast(item));
  for (const moved of read.filter(isPending).flatMap(pendingItems)) {
    const sk = String(moved.sk);
    if (isForecast(moved) && sk >= `F#${from}` && sk <= `F#${to}#~`) forecast.push(moved);
  }
  return {
    ...rangeItemsOf(
      read.filter((item) => !isForecast(item)),
      reads,
    ),
    forecast,
  };
};

/**
 * The items of several sources read in one state, each source's apart (`GET /metrics/plans`: every
 * plan's segment): one read of them all, sorted out by partition.
 */
export const readRangeItemsApart = async (merchantId: string, reads: RangeReads, sources: AggregateSource[]) => {
  const read = await oneState(merchantId, sources[0]?.generation ?? 0, rangeQueries(reads, sources));
  // Each partition read, by the source that names it.
  const all = Array.from({ length: METRIC_SHARDS }, (_, shard) => shard);
  const sourceOf = new Map(sources.flatMap((source, i) => partitionsOf(source, all).map(({ partition }) => [partition, i])));
  return sources.map((_, i) =>
    rangeItemsOf(
      read.filter((item) => sourceOf.get(String(item.pk)) === i),
      reads,
    ),
  );
};

/**
 * The cohort items of cohorts `start`..`end` (`yyyy-mm`) of the whole (null) or each segment, in one state: one
 * Query a partition, at once; a cohort's pending moves, which sit in its range, as the items they are for.
 */
export const readCohortItems = async (merchantId: string, start: string, end: string, segments: (Segment | null)[], generation = 0) => {
  const prefixes = segments.map((segment) => cohortPartition(merchantId, segment, generation));
  const read = await oneState(merchantId, generation, async (shards) =>
    (
      await Promise.all(
        partitionsOf({ sharded: prefixes, generation }, shards).map(async ({ partition, shard }) =>
          (
            await queryAll<AggregateItem>({ partition, from: `${start}#`, to: `${end}#~`, descending: false }, [
              'sk',
              'moves',
              ...COHORT_PROJECTION,
            ])
          ).map((item) => ({ shard: shard!, item })),
        ),
      )
    ).flat(),
  );
  return read.flatMap((i) => (isPending(i) ? pendingItems(i) : [i]));
};

/** The plan names the merchant's figures have seen: one Query of their (sharded) items. */
export const readPlanNames = async (merchantId: string): Promise<string[]> => {
  const items = await queryAll<{ plan: string }>({ partition: plansPartition(merchantId), descending: false }, ['plan']);
  return [...new Set(items.map((i) => i.plan))].sort();
};

/** The customer ids of an index (metadata or plan customers): its shards' partitions Queried at once, strongly consistent. */
const indexedCustomers = async (partitionOf: (shard: number) => string): Promise<Set<number>> => {
  const shards = await Promise.all(
    Array.from({ length: CUSTOMER_INDEX_SHARDS }, (_, shard) =>
      queryAll<{ customer_id: number }>({ partition: partitionOf(shard), descending: false }, ['customer_id']),
    ),
  );
  return new Set(shards.flat().map((i) => Number(i.customer_id)));
};

/** The customers whose metadata holds `key` = `value` (String of a string, number or boolean; exact, case-sensitive). */
export const customersWithMetadata = (merchantId: string, key: string, value: string) =>
  indexedCustomers((shard) => customerMetadataPartition(merchantId, shard, key, value));

/** The customers whose timeline has ever had a point of `plan`. */
export const customersOfPlan = (merchantId: string, plan: string) =>
  indexedCustomers((shard) => planCustomersPartition(merchantId, shard, plan));

/**
 * Timelines as the request's generation counts them: one last written in an older generation has
 * its points in other currencies converted again at this generation's rates (its stored
 * conversions are its last write's generation's); one read for those rates, only when some are.
 */
export const countedTimelines = async (
  merchantId: string,
  figures: FiguresScope,
  states: Map<number, TimelineState>,
): Promise<Map<number, TimelineState>> => {
  const stale = [...states].filter(([, s]) => s.version !== null && s.generation !== figures.generation);
  const currencies = new Set(stale.flatMap(([, s]) => [...foreignCurrencies(s.timeline, figures.reportingCurrency)]));
  if (!currencies.size) return states;
  const { rates: book } = await generationSettings(merchantId, figures.generation, currencies, new Map(), figures.timezone);
  const out = new Map(states);
  for (const [id, s] of stale)
    out.set(id, { ...s, timeline: withConversions(s.timeline, figures.reportingCurrency, book, figures.timezone), zone: figures.timezone });
  return out;
};

/** Customers' timelines by id: their heads in BatchGetItems of 100 (at once), a chunked one with one Query more. */
export const readTimelines = async (merchantId: string, ids: number[]): Promise<Map<number, TimelineState>> => {
  if (!ids.length) return new Map();
  const found = await batchGet<Record<string, unknown>>(ids.map((id) => keys.customerTimeline(merchantId, id)));
  return timelinesFrom(merchantId, found, ids);
};

/** The merchant's last allocated customer id (its sequence, read strongly consistent; 0: none yet). */
export const lastCustomerId = async (merchantId: string): Promise<number> => {
  const { Item: seq } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.sequences(merchantId), ConsistentRead: true }));
  return Number(seq?.customer ?? 0);
};

/**
 * Every customer id the merchant has allocated (`from`, by default 1, to its sequence's last, read
 * strongly consistent), `size` at a time: what reads over all customers (`GET /metrics/movements`)
 * take, round by round, reading the timeline heads by key, never an index.
 */
export async function* customerIdRounds(merchantId: string, size: number, from = 1): AsyncGenerator<number[]> {
  const last = await lastCustomerId(merchantId);
  for (let first = from; first <= last; first += size) yield Array.from({ length: Math.min(size, last - first + 1) }, (_, i) => first + i);
}

/** The email and name of customers (deleted ones too) by id: one BatchGetItem of their items, projected. */
export const customerNames = async (merchantId: string, ids: number[]): Promise<Map<number, { email: string; name: string | null }>> => {
  const found = await batchGet<{ id: number; email: string; name?: string | null }>(
    [...new Set(ids)].map((id) => keys.customer(merchantId, id)),
    ['id', 'email', 'name'],
  );
  return new Map([...found.values()].map((c) => [Number(c.id), { email: c.email, name: c.name ?? null }]));
};

/** Sort-key ranges `[lo, hi]` of a sales read (booking days or months, payment-method days, cohort months). */
export type SalesRanges = [lo: string, hi: string][];

/**
 * The sales items of one stored slice (the whole: null) in `ranges`, summed over the 8 shards, as
 * of one state (`oneState`): in each shard's partition one Query a range, and its pending moves
 * (kept before every month, `M#0000-00#P#…`) with the months or in one more, all at once, strongly
 * consistent. Pending moves count as the items they are for.
 */
export const readSalesFigures = async (
  merchantId: string,
  generation: number,
  segment: Segment | null,
  ranges: SalesRanges,
): Promise<Map<string, Map<string, Decimal>>> => {
  const queries = withPendingHomes(ranges);
  const read = await oneState(merchantId, generation, async (shards) =>
    (
      await Promise.all(
        shards.flatMap((shard) =>
          queries.map(async ({ kind, range: [lo, hi] }) =>
            (
              await queryAll<AggregateItem>(
                { partition: salesShardPartition(merchantId, segment, generation, kind, shard), from: lo, to: hi, descending: false },
                [],
              )
            ).map((item) => ({ shard, item })),
          ),
        ),
      )
    ).flat(),
  );
  const out = new Map<string, Map<string, Decimal>>();
  const add = (stored: string, attrs: Record<string, unknown>) => {
    const sk = salesItemOfSk(stored);
    for (const [attr, v] of Object.entries(attrs)) {
      if (!isSalesAttr(attr) || v === undefined || v === null) continue;
      let m = out.get(sk);
      if (!m) out.set(sk, (m = new Map()));
      const d = new ExactDecimal(String(v));
      const was = m.get(attr);
      m.set(attr, was ? was.plus(d) : d);
    }
  };
  for (const item of read) {
    if (isPending(item)) for (const [sk, adds] of pendingMovesOf(item)) add(sk, adds);
    else add(String(item.sk), item);
  }
  return out;
};

/**
 * The ranges and the pending moves' home: a range of months is read from the home on (it sorts
 * before every month; the months before the range cost little), else the home is one Query more.
 */
const withPendingHomes = (ranges: SalesRanges): { kind: SalesKind; range: [string, string] }[] => {
  const out: { kind: SalesKind; range: [string, string] }[] = [];
  for (const kind of new Set(ranges.map(([lo]) => salesKindOf(lo)))) {
    const home = `${salesHome(kind)}#`;
    const own = ranges.filter(([lo]) => salesKindOf(lo) === kind);
    const months = own.findIndex(([lo]) => lo.startsWith('M#'));
    if (months < 0) out.push({ kind, range: [home, `${home}~`] });
    for (const [i, [lo, hi]] of own.entries()) out.push({ kind, range: [i === months ? home : lo, salesLanesEnd(hi)] });
  }
  return out;
};

/** The orders of customers as their bookings (stored with their timelines) say: their heads 100 a BatchGetItem, chunked ones a Query more. */
export const customersOrders = async (merchantId: string, ids: number[]): Promise<SaleOrder[]> => {
  const out: SaleOrder[] = [];
  for (let i = 0; i < ids.length; i += 100) {
    const states = await readTimelines(merchantId, ids.slice(i, i + 100));
    for (const [id, state] of states) out.push(...ordersOfBookings(state.bookings, id).values());
  }
  return out;
};
