import Decimal from 'decimal.js';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { readCounterItems, sumShards } from '#lib/db/counters';
import { activityIndexes, activityTotalsPartition, keys } from '#lib/db/keys';
import type { IndexQuery } from '#lib/db/query';
import { retrying } from '#lib/db/retry';
import { allocateIds } from '#lib/db/sequences';
import type { BatchOptions } from '#lib/db/batch';
import type { WriteSet } from '#lib/db/writes';
import type { BatchResult } from '#lib/shared/schemas';
import { decideEntry, expiresAt, monthOf, type ActivityCommand, type ActivityType, type PendingOutcomes } from '#lib/activity/rules';

export type { ActivityType } from '#lib/activity/rules';

/** The table adapter of the activity log: keys, reads, and the entry a batch's last transaction carries. */

/** Actions an entry adds to its transaction: the entry, the month's totals, the run's totals. */
export const ENTRY_ACTIONS = 3;

/** Takes the next activity id (its own sequence item; one request, run while the batch reads). */
export const allocateActivityId = async (merchantId: string): Promise<number> =>
  (await retrying(() => allocateIds(merchantId, { activity: 1 }))).activity!;

/** Who sent a batch: its request id, and the import run it belongs to (`X-Import-Run`). */
export type ActivitySource = { requestId: string; importRun: string | null };
export const NO_SOURCE: ActivitySource = { requestId: '', importRun: null };
/** A batch request's source, from what the pipeline hands its handler. */
export const sourceOf = (req: { requestId: string; headers: { 'x-import-run'?: string } }): ActivitySource => ({
  requestId: req.requestId,
  importRun: req.headers['x-import-run'] ?? null,
});

/**
 * Opens a batch's activity entry: takes its id (run it beside the batch's reads; a failure here
 * fails the request before anything is written). The returned function gives the batch engine's
 * closing record: the outcomes so far, plus the last transaction's units as they will turn out.
 */
export const openBatchActivity = async (merchantId: string, type: ActivityType, source: ActivitySource, at: string) => {
  const id = await allocateActivityId(merchantId);
  return (result: () => BatchResult, pending: (units: number) => PendingOutcomes): NonNullable<BatchOptions['finish']> => ({
    actions: ENTRY_ACTIONS,
    add: (ws, units) => addActivityEntry(ws, merchantId, { id, type, ...source, result: result(), pending: pending(units) }, at),
  });
};

/** Adds the entry and its counts (the month's, and the import run's) to `ws`. */
export const addActivityEntry = (ws: WriteSet, merchantId: string, command: ActivityCommand, at: string) => {
  const entry = decideEntry(command, at);
  const ttl = expiresAt(at);
  ws.put('activity', {
    ...keys.activity(merchantId, entry.id),
    ...activityIndexes.of(merchantId, entry.type, entry.import_run, at, entry.id),
    ...entry,
    expires_at: ttl,
  });
  const one = new Decimal(1);
  for (const run of entry.import_run === null ? [null] : [null, entry.import_run]) {
    ws.update(run === null ? 'activity-totals' : 'activity-run-totals', keys.activityTotals(merchantId, run, monthOf(at), ws.shard))
      .add('entries', one)
      .add(`entries_${entry.type}`, one)
      .set('expires_at', ttl);
  }
};

export const getActivityItem = async (merchantId: string, id: number): Promise<Record<string, unknown> | undefined> =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: keys.activity(merchantId, id), ConsistentRead: true }))).Item;

/**
 * Listed entries counted from the monthly totals of months `fromMonth` on (one strongly consistent
 * Query of at most 14 months × the counter shards, whatever the number of entries).
 */
export const countActivity = async (
  merchantId: string,
  run: string | null,
  type: ActivityType | undefined,
  fromMonth: string,
): Promise<number> => {
  const items = await readCounterItems(activityTotalsPartition(merchantId, run), fromMonth, '~');
  return sumShards(items)[type ? `entries_${type}` : 'entries']?.toNumber() ?? 0;
};

/** The list index to read: by import run (gsi3), else by type (gsi2), else all (gsi1). */
export const activityListQuery = (merchantId: string, f: { type?: ActivityType; importRun?: string }): IndexQuery => {
  if (f.importRun !== undefined) {
    const base = { index: 'gsi3' as const, partition: activityIndexes.partitions.byRun(merchantId, f.importRun) };
    return f.type ? { ...base, filter: { expression: '#type = :type', names: { '#type': 'type' }, values: { ':type': f.type } } } : base;
  }
  if (f.type) return { index: 'gsi2', partition: activityIndexes.partitions.byType(merchantId, f.type) };
  return { index: 'gsi1', partition: activityIndexes.partitions.all(merchantId) };
};
