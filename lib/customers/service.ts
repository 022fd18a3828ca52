import { createHash } from 'node:crypto';
import { now } from '#lib/clock';
import { listPage, type CursorPage } from '#lib/db/query';
import { CURSOR_INVALID, checkPageOffset, cursorMeta, decodeCursor, encodeCursor } from '#lib/shared/pagination';
import { allocateIds } from '#lib/db/sequences';
import { retrying } from '#lib/db/retry';
import { WriteConflict, WriteSet } from '#lib/db/writes';
import { InvalidError, NotFoundError, type FieldErrors } from '#lib/errors';
import { formatTimestamp } from '#lib/shared/time';
import type { CustomerCreate, CustomerUpdate } from '#lib/customers/schemas';
import type { CustomerItem } from '#lib/customers/model';
import {
  addCustomerCreate,
  addCustomerDelete,
  addCustomerUpdate,
  customerSearchRows,
  customersByIds,
  customersList,
  customerTotal,
  profileChanges,
  resolveForWrite,
} from '#lib/customers/store';

/** Customer use cases behind the handlers (docs/customers.md). Each write attempt runs through `retrying`. */

export const EMAIL_TAKEN = 'The email has already been taken.';
export const EXTERNAL_ID_TAKEN = 'The external id has already been taken.';

/** The 422 for unique fields whose marker write failed, or null when the conflict was something else. */
export const takenError = (err: unknown): InvalidError | null => {
  if (!(err instanceof WriteConflict)) return null;
  const errors: FieldErrors = {};
  if (err.tags.includes('email')) errors.email = [EMAIL_TAKEN];
  if (err.tags.includes('external_id')) errors.external_id = [EXTERNAL_ID_TAKEN];
  return Object.keys(errors).length ? new InvalidError(errors) : null;
};

/** A write whose uniqueness markers were taken answers 422; any other lost race is retried. */
const commitOr422 = async (ws: WriteSet): Promise<void> => {
  try {
    await ws.commit();
  } catch (err) {
    throw takenError(err) ?? err;
  }
};

/**
 * Creates a customer. Uniqueness is enforced by the marker puts inside the one transaction, so
 * concurrent creates of one email cannot both succeed. `id` may be pre-allocated (batch import).
 */
export const createCustomer = async (merchantId: string, input: CustomerCreate, id?: number): Promise<CustomerItem> => {
  const customerId = id ?? (await retrying(() => allocateIds(merchantId, { customer: 1 }))).customer!;
  return retrying(async () => {
    const ws = new WriteSet();
    const item = addCustomerCreate(ws, merchantId, customerId, input, formatTimestamp(now()));
    await commitOr422(ws);
    return item;
  });
};

/**
 * PUT /customers/{idOrExternalId}: the customer is resolved by key (marker for external_id) on
 * every attempt, so a lost race (deleted, or its email/external_id moved) is judged afresh.
 */
export const updateCustomer = async (merchantId: string, idOrExternalId: string, input: CustomerUpdate): Promise<CustomerItem> =>
  retrying(async () => {
    const customer = await resolveForWrite(merchantId, idOrExternalId);
    if (!customer) throw new NotFoundError();
    const changes = profileChanges(customer, input);
    if (!Object.keys(changes).length) return customer;
    const ws = new WriteSet();
    const updated = addCustomerUpdate(ws, merchantId, customer, changes, formatTimestamp(now()));
    await commitOr422(ws);
    return updated;
  });

/** Soft delete (see addCustomerDelete); resolved again by key on every attempt; already deleted → 404. */
export const deleteCustomer = async (merchantId: string, idOrExternalId: string): Promise<void> =>
  retrying(async () => {
    const customer = await resolveForWrite(merchantId, idOrExternalId);
    if (!customer) throw new NotFoundError();
    const ws = new WriteSet();
    addCustomerDelete(ws, merchantId, customer, formatTimestamp(now()));
    await ws.commit();
  });

export type CustomerListQuery = { page: number; per_page: number; cursor?: string; search?: string };

/**
 * A page of live customers, newest first, by page number or cursor. Unfiltered: the page's entries
 * from the list index (one Query whatever the list size or depth), then the customers and the
 * TOTALS counter's shards in one BatchGetItem.
 * Search: a case-insensitive substring of email or name over a small projection of the list, then
 * the page's items by BatchGetItem; its cursor names the last customer shown.
 */
export const listCustomers = async (merchantId: string, q: CustomerListQuery): Promise<CursorPage<CustomerItem>> => {
  const term = q.search?.trim().toLowerCase();
  if (!term) return listPage<CustomerItem>(customersList(merchantId), customerTotal(merchantId), q);
  const rows = await customerSearchRows(merchantId);
  const matches = rows.filter((r) => r.email.includes(term) || (r.name ?? '').toLowerCase().includes(term));
  const list = `search:${createHash('sha256').update(term).digest('base64url').slice(0, 16)}`;
  let offset: number;
  if (q.cursor !== undefined) {
    const cursor = decodeCursor(q.cursor);
    if (!cursor || cursor.list !== list || !/^\d+$/.test(cursor.key.id ?? '')) throw InvalidError.field('cursor', CURSOR_INVALID);
    // After the customer the cursor names (still there unless deleted meanwhile), else at its offset.
    const at = matches.findIndex((r) => String(r.id) === cursor.key.id);
    offset = at >= 0 ? at + 1 : cursor.offset;
  } else {
    offset = checkPageOffset(q.page, q.per_page);
  }
  const shown = matches.slice(offset, offset + q.per_page);
  const last = shown.at(-1);
  const next = last && offset + shown.length < matches.length ? encodeCursor({ list, offset: offset + shown.length, key: { id: String(last.id) } }) : null;
  const found = shown.length ? await customersByIds(merchantId, shown.map((r) => Number(r.id))) : new Map<number, CustomerItem>();
  // A customer deleted between the two reads is left out.
  const items = shown.flatMap((r) => {
    const item = found.get(Number(r.id));
    return item && !item.deleted_at ? [item] : [];
  });
  return { items, meta: cursorMeta(offset, q.per_page, matches.length, items.length, next) };
};
