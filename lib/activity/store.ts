import { randomUUID } from 'node:crypto';
import { keys } from '#lib/db/keys';
import type { WriteSet } from '#lib/db/writes';

/** What wrote an activity-log entry: one per batch endpoint. */
export type ActivityType = 'customers.batch' | 'orders.batch' | 'subscriptions.batch' | 'subscription_events.batch';
export type ActivityCounts = { total: number; created: number; updated: number; skipped: number; failed: number };

/**
 * Adds a batch's activity-log entry to `ws` (the batch engine's closing record, written with the
 * batch's last unit so it never disagrees with the answer).
 */
export const addBatchActivity = (ws: WriteSet, merchantId: string, type: ActivityType, counts: ActivityCounts, at: string) =>
  ws.put('activity', { ...keys.activity(merchantId, at, randomUUID()), type, ...counts, created_at: at });
