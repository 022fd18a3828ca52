import { createHash } from 'node:crypto';
import type { CustomerItem } from '#lib/customers/model';
import type { CustomerBatchItem, CustomerUpdate } from '#lib/customers/schemas';
import { pageOfRows } from '#lib/shared/pagination';

/**
 * The customers' rules (docs/customers.md), pure: how a path segment names a customer, what an
 * update changes, how a batch's items fold into one plan per email, and how search pages. No
 * database, no HTTP: the service reads, decides and persists.
 */

export const EMAIL_TAKEN = 'The email has already been taken.';
export const EXTERNAL_ID_TAKEN = 'The external id has already been taken.';

/** The path segment is an id when it is all digits, else an external_id. */
export const isIdSegment = (segment: string) => /^\d{1,15}$/.test(segment);

/** The profile fields a create or update may write; derived figures are never among them. */
export const PROFILE_FIELDS = ['email', 'name', 'phone', 'external_id', 'metadata'] as const;
export type ProfileChanges = Partial<Pick<CustomerItem, (typeof PROFILE_FIELDS)[number]>>;

/** The given fields of `input` that differ from `current` (null clears; email is never null here). */
export const profileChanges = (current: CustomerItem, input: CustomerUpdate): ProfileChanges => {
  const out: Record<string, unknown> = {};
  for (const field of PROFILE_FIELDS) {
    const value = input[field];
    if (value === undefined) continue;
    const next = field === 'email' ? String(value).toLowerCase() : value;
    if (JSON.stringify(next) !== JSON.stringify(current[field] ?? null)) out[field] = next;
  }
  return out as ProfileChanges;
};

export type OnConflict = 'skip' | 'update';

/** A valid batch item: its place in the request, its identifier (the email as sent) and its fields. */
export type ImportItem = { index: number; identifier: string; input: CustomerBatchItem };

/**
 * Everything the batch does to one customer: the items naming one email are folded into one plan
 * (a later item is applied on top of the earlier one, as if the earlier one already existed).
 */
export type ImportPlan =
  | { kind: 'create'; items: ImportItem[]; input: CustomerBatchItem; id: number }
  | { kind: 'update'; items: ImportItem[]; input: CustomerUpdate; current: CustomerItem };

/** The given (non-undefined) fields of `next` over `base`. */
const overlay = <T extends Record<string, unknown>>(base: T, next: Record<string, unknown>): T => {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(next)) if (v !== undefined) out[k] = v;
  return out as T;
};

/** What the batch read before planning: who holds each email and external_id, and (to update) the customers. */
export type ImportReads = {
  emailOwner: (email: string) => number | undefined;
  externalIdOwner: (externalId: string) => number | undefined;
  customer: (id: number) => CustomerItem | undefined;
};

/**
 * The batch's plans, in array order: one per email, created or updated (`onConflict`), or its
 * items skipped; an external_id another customer or plan holds refuses its item.
 */
export const planImport = (
  items: ImportItem[],
  onConflict: OnConflict,
  reads: ImportReads,
  sink: { skipped: (item: ImportItem) => void; failed: (item: ImportItem, message: string) => void },
): ImportPlan[] => {
  const plans: ImportPlan[] = [];
  const byEmail = new Map<string, ImportPlan | 'skip'>();
  /** Who holds each external_id: an existing customer's id, or a plan of this batch. */
  const extHolder = new Map<string, number | ImportPlan>();
  for (const v of items) {
    const { email } = v.input;
    let plan = byEmail.get(email);
    if (plan === 'skip' || (plan && onConflict === 'skip')) {
      sink.skipped(v);
      continue;
    }
    if (!plan) {
      const ownerId = reads.emailOwner(email);
      if (ownerId !== undefined && onConflict === 'skip') {
        byEmail.set(email, 'skip');
        sink.skipped(v);
        continue;
      }
      const current = ownerId === undefined ? undefined : reads.customer(ownerId);
      // A marker whose customer is gone was freed meanwhile: create (the transaction re-checks).
      plan =
        current && !current.deleted_at
          ? { kind: 'update', items: [], input: {}, current }
          : { kind: 'create', items: [], input: v.input, id: 0 };
    }
    const ext = v.input.external_id;
    if (ext) {
      const holder = extHolder.get(ext) ?? reads.externalIdOwner(ext);
      const self = plan.kind === 'update' ? plan.current.id : plan;
      if (holder !== undefined && holder !== self) {
        sink.failed(v, EXTERNAL_ID_TAKEN);
        continue;
      }
      extHolder.set(ext, self);
    }
    if (!plan.items.length) {
      plans.push(plan);
      byEmail.set(email, plan);
    }
    plan.items.push(v);
    plan.input = overlay(plan.input, v.input);
  }
  return plans;
};

export type SearchRow = { id: number; email: string; name?: string | null };
export type SearchQuery = { page: number; per_page: number; cursor?: string };

/** The search term as matched: trimmed, lower case; empty means no search. */
export const searchTerm = (search: string | undefined) => search?.trim().toLowerCase() || undefined;

/**
 * A page of the rows whose email or name contains `term` (lower case), by page number or cursor;
 * the cursor names the last row shown, so a deletion before it does not shift the next page.
 */
export const searchPage = <R extends SearchRow>(merchantId: string, rows: R[], term: string, q: SearchQuery) => {
  const matches = rows.filter((r) => r.email.includes(term) || (r.name ?? '').toLowerCase().includes(term));
  const list = `search:${createHash('sha256').update(term).digest('base64url').slice(0, 16)}`;
  return pageOfRows(merchantId, matches, list, (r) => String(r.id), q);
};
