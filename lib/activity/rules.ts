import type { BatchResult } from '#lib/shared/schemas';
import { plusMonths, utcMonth } from '#lib/shared/time';
import { ACTIVITY_TYPES, type ActivityType } from '#lib/activity/schemas';

export { ACTIVITY_TYPES, type ActivityType };

/**
 * The activity log's rules, free of the table and of HTTP: what an entry holds, how long it is
 * kept, and how it is shown. See docs/activity-log.md.
 */

/** Entries are kept for the 13 whole months after the month they were written in. */
export const RETENTION_MONTHS = 13;

/** `YYYY-MM` of an ISO timestamp, moved by `delta` months. */
export const monthOf = (iso: string, delta = 0): string => plusMonths(utcMonth(iso), delta);

/** The first month whose entries are still listed at `at` (older ones have expired). */
export const oldestListedMonth = (at: string): string => monthOf(at, -RETENTION_MONTHS);

/** When an entry written at `createdAt` expires: the start of the 14th month after its own (Unix seconds, the TTL). */
export const expiresAt = (createdAt: string): number => Date.parse(`${monthOf(createdAt, RETENTION_MONTHS + 1)}-01T00:00:00Z`) / 1000;

/**
 * An entry's stored strings are cut to these many UTF-8 bytes, so an entry of 100 failed items
 * stays under 50 KB (DynamoDB items are at most 400 KB; this project keeps every item under 64 KB).
 * The batch's own answer is never cut.
 */
export const MAX_IDENTIFIER_BYTES = 200;
export const MAX_MESSAGE_BYTES = 200;

const encoder = new TextEncoder();
/** `s` cut to at most `max` UTF-8 bytes on a code-point boundary, with an ellipsis when cut. */
export const cutToBytes = (s: string, max: number): string => {
  if (encoder.encode(s).length <= max) return s;
  let out = '';
  let bytes = 0;
  for (const ch of s) {
    const n = encoder.encode(ch).length;
    if (bytes + n > max - 3) break; // room for "…" (3 bytes)
    out += ch;
    bytes += n;
  }
  return `${out}…`;
};

const SKIP_MESSAGES: Record<string, string> = {
  duplicate_email: 'A live customer already has this email; the item was left alone (on_conflict skip).',
  duplicate_external_id: 'A subscription with this external id already exists; the item was left alone.',
  already_recorded: 'This event was already recorded by an earlier request under the same idempotency key.',
};
export const skipMessage = (reason: string): string => SKIP_MESSAGES[reason] ?? `The item was skipped (${reason}).`;

export type ActivityItemReport = { index: number; identifier: string; reason: string; message: string };
export type ActivityEntry = {
  id: number;
  type: ActivityType;
  created_at: string;
  total: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  results: { skipped: ActivityItemReport[]; failed: ActivityItemReport[] };
  request_id: string;
  import_run: string | null;
};

/** Units of the batch's last transaction, counted as the outcome they will have once it commits. */
export type PendingOutcomes = { created: number; updated: number };

export type ActivityCommand = {
  id: number;
  type: ActivityType;
  requestId: string;
  importRun: string | null;
  /** The batch's outcomes so far (skipped and failed items are all known before its last transaction). */
  result: BatchResult;
  pending: PendingOutcomes;
};

/** The entry a batch request leaves: the counts of the whole request and its skipped and failed items. */
export const decideEntry = (c: ActivityCommand, at: string): ActivityEntry => {
  const item = (r: { index: number; identifier: string; reason: string }, message: string): ActivityItemReport => ({
    index: r.index,
    identifier: cutToBytes(r.identifier, MAX_IDENTIFIER_BYTES),
    reason: r.reason,
    message: cutToBytes(message, MAX_MESSAGE_BYTES),
  });
  return {
    id: c.id,
    type: c.type,
    created_at: at,
    total: c.result.total,
    created: c.result.created + c.pending.created,
    updated: c.result.updated + c.pending.updated,
    skipped: c.result.skipped,
    failed: c.result.failed,
    results: {
      skipped: c.result.results.skipped.map((r) => item(r, skipMessage(r.reason))),
      failed: c.result.results.failed.map((r) => item(r, r.message)),
    },
    request_id: c.requestId,
    import_run: c.importRun,
  };
};

/** The entry as the API shows it, from its stored item (which also carries keys and its TTL). */
export const presentEntry = (item: Record<string, unknown>): ActivityEntry => ({
  id: Number(item.id),
  type: item.type as ActivityType,
  created_at: String(item.created_at),
  total: Number(item.total),
  created: Number(item.created),
  updated: Number(item.updated),
  skipped: Number(item.skipped),
  failed: Number(item.failed),
  results: (item.results as ActivityEntry['results'] | undefined) ?? { skipped: [], failed: [] },
  request_id: String(item.request_id ?? ''),
  import_run: (item.import_run as string | null | undefined) ?? null,
});

/** Whether an entry is still listed at `at` (TTL deletion lags, so reads check it themselves). */
export const isListed = (item: Record<string, unknown>, at: string): boolean => monthOf(String(item.created_at)) >= oldestListedMonth(at);
