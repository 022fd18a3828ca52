import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { batchGet, keyId } from '#lib/db/batch-get';
import { db, tableName } from '#lib/db/client';
import { keys, type Key } from '#lib/db/keys';
import { itemAbsent, MAX_ACTIONS, versionIs, type WriteSet } from '#lib/db/writes';
import { InvalidError } from '#lib/errors';
import { contributions, difference, type Timeline } from '#lib/metrics/timeline';

/**
 * The customer's MRR timeline item and the aggregate moves of a change (decisions §9). A write
 * reads the timeline by key (strongly consistent) in the same attempt as the rest of its state,
 * computes the new timeline, and `addTimelineChange` adds to its WriteSet: the timeline (put under
 * the version read) and the difference of the customer's contributions as ADD deltas to the day,
 * month and cohort items. One transaction: the change and its metrics commit together or not at all.
 */
export type TimelineState = { timeline: Timeline; version: number | null };

export const EMPTY_TIMELINE: TimelineState = { timeline: {}, version: null };

export const timelineFromItem = (item: Record<string, unknown> | undefined | null): TimelineState =>
  item ? { timeline: JSON.parse(String(item.lines)) as Timeline, version: Number(item.version) } : EMPTY_TIMELINE;

export const readTimeline = async (merchantId: string, customerId: number): Promise<TimelineState> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.customerTimeline(merchantId, customerId), ConsistentRead: true }));
  return timelineFromItem(Item);
};

/** Stored attribute names of the aggregates (short: a 731-day read of every shard stays one Query page). */
export const STORED_ATTR: Record<string, string> = {
  new: 'n',
  expansion: 'e',
  contraction: 'x',
  churn: 'c',
  reactivation: 'r',
  customers: 'ac',
  subscriptions: 'as',
  churned: 'cc',
  joined: 'j',
  start: 'sm',
  mrr: 'm',
};

/** The aggregate item (in `shard`) a contribution id names (`D#<day>`, `M#<month>`, `C#<cohort>#<month>`). */
export const aggregateKey = (merchantId: string, id: string, shard: number): Key => {
  if (id.startsWith('D#')) return keys.metricsDay(merchantId, id.slice(2), shard);
  if (id.startsWith('M#')) return keys.metricsMonth(merchantId, id.slice(2), shard);
  const [, cohort, month] = id.split('#');
  return keys.metricsCohort(merchantId, cohort, month, shard);
};

export const TOO_FAR_BACK =
  'The change would reclassify more history than one write can move at once (100 items); import it in smaller steps.';

/**
 * Adds the customer's timeline change to `ws`. `field` names the request field a 422 blames when
 * the moves do not fit the transaction (at most 100 actions); batches pass null and let the batch
 * engine's packing measure the transaction. Returns the state the transaction leaves.
 */
export const addTimelineChange = (
  ws: WriteSet,
  merchantId: string,
  customerId: number,
  before: TimelineState,
  after: Timeline,
  field: string | null,
): TimelineState => {
  if (JSON.stringify(before.timeline) === JSON.stringify(after)) return before;
  const key = keys.customerTimeline(merchantId, customerId);
  const version = (before.version ?? 0) + 1;
  ws.put('timeline', { ...key, customer_id: customerId, lines: JSON.stringify(after), version }, before.version === null ? itemAbsent : versionIs(before.version));
  for (const [id, attrs] of difference(contributions(before.timeline), contributions(after))) {
    const u = ws.update('metrics', aggregateKey(merchantId, id, ws.shard));
    for (const [attr, delta] of attrs) u.add(STORED_ATTR[attr], delta);
  }
  if (field && ws.actions > MAX_ACTIONS) throw InvalidError.field(field, TOO_FAR_BACK);
  return { timeline: after, version };
};

/**
 * Customers (deleted ones included) and their timelines by id, in one BatchGetItem per 50
 * customers: order writes read the timeline with the customer they already read.
 */
export const customersWithTimelines = async <C>(merchantId: string, ids: number[]) => {
  const unique = [...new Set(ids)];
  const found = await batchGet<Record<string, unknown>>(unique.flatMap((id) => [keys.customer(merchantId, id), keys.customerTimeline(merchantId, id)]));
  const customers = new Map<number, C>();
  const timelines = new Map<number, TimelineState>();
  for (const id of unique) {
    const customer = found.get(keyId(keys.customer(merchantId, id)));
    if (customer) customers.set(id, customer as C);
    timelines.set(id, timelineFromItem(found.get(keyId(keys.customerTimeline(merchantId, id)))));
  }
  return { customers, timelines };
};
