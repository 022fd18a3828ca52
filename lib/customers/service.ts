import { now } from '#lib/clock';
import { allocateIds } from '#lib/db/sequences';
import { backoff, WriteConflict, WriteSet } from '#lib/db/writes';
import { contended, HttpError, notFound, validationFailed, type FieldErrors } from '#lib/http/errors';
import { formatTimestamp } from '#lib/shared/time';
import type { CustomerCreate, CustomerUpdate } from '#lib/customers/schemas';
import type { CustomerItem } from '#lib/customers/model';
import {
  addCustomerCreate,
  addCustomerDelete,
  addCustomerUpdate,
  customerSearchRows,
  customersByIds,
  customersPage,
  customerTotal,
  findCustomer,
  getCustomerById,
  profileChanges,
} from '#lib/customers/store';

/** Customer use cases behind the handlers (decisions §5). */

export const EMAIL_TAKEN = 'The email has already been taken.';
export const EXTERNAL_ID_TAKEN = 'The external id has already been taken.';

/** The 422 for unique fields whose marker write failed, or null when the conflict was something else. */
const takenError = (tags: string[]): HttpError | null => {
  const errors: FieldErrors = {};
  if (tags.includes('email')) errors.email = [EMAIL_TAKEN];
  if (tags.includes('external_id')) errors.external_id = [EXTERNAL_ID_TAKEN];
  return Object.keys(errors).length ? validationFailed(errors) : null;
};

/** The field errors of a 422 thrown by this module (the batch import classifies items by them). */
export const takenFields = (err: unknown): FieldErrors | null =>
  err instanceof HttpError && err.status === 422 ? ((err.body.errors as FieldErrors) ?? null) : null;

/**
 * Creates a customer. Uniqueness is enforced by the marker puts inside the one transaction, so
 * concurrent creates of one email cannot both succeed. `id` may be pre-allocated (batch import).
 */
export const createCustomer = async (merchantId: string, input: CustomerCreate, id?: number): Promise<CustomerItem> => {
  const customerId = id ?? (await allocateIds(merchantId, { customer: 1 })).customer!;
  const ws = new WriteSet();
  const item = addCustomerCreate(ws, merchantId, customerId, input, formatTimestamp(now()));
  try {
    await ws.commit();
  } catch (err) {
    if (err instanceof WriteConflict) throw takenError(err.tags) ?? err;
    throw err;
  }
  return item;
};

/** Retries when the customer changed between read and write (another update moved its email). */
const MAX_ATTEMPTS = 10;

/**
 * Applies the given fields to a live customer. A `customer` condition failure means it was
 * deleted or its email/external_id changed meanwhile: re-read and try again; gone → 404.
 */
export const applyCustomerUpdate = async (
  merchantId: string,
  current: CustomerItem,
  input: CustomerUpdate,
): Promise<CustomerItem> => {
  let customer: CustomerItem | null = current;
  for (let attempt = 1; ; attempt++) {
    if (!customer) throw notFound();
    const changes = profileChanges(customer, input);
    if (!Object.keys(changes).length) return customer;
    const ws = new WriteSet();
    const updated = addCustomerUpdate(ws, merchantId, customer, changes, formatTimestamp(now()));
    try {
      await ws.commit();
      return updated;
    } catch (err) {
      if (!(err instanceof WriteConflict)) throw err;
      const taken = takenError(err.tags);
      if (taken) throw taken;
      if (attempt >= MAX_ATTEMPTS) throw contended();
      await backoff(attempt);
      customer = await getCustomerById(merchantId, customer.id);
    }
  }
};

export const updateCustomer = async (merchantId: string, idOrExternalId: string, input: CustomerUpdate): Promise<CustomerItem> => {
  const current = await findCustomer(merchantId, idOrExternalId);
  if (!current) throw notFound();
  return applyCustomerUpdate(merchantId, current, input);
};

/** Soft delete (see addCustomerDelete); a customer already deleted is 404. */
export const deleteCustomer = async (merchantId: string, idOrExternalId: string): Promise<void> => {
  let customer = await findCustomer(merchantId, idOrExternalId);
  for (let attempt = 1; ; attempt++) {
    if (!customer) throw notFound();
    const ws = new WriteSet();
    addCustomerDelete(ws, merchantId, customer, formatTimestamp(now()));
    try {
      await ws.commit();
      return;
    } catch (err) {
      if (!(err instanceof WriteConflict)) throw err;
      if (attempt >= MAX_ATTEMPTS) throw contended();
      await backoff(attempt);
      customer = await getCustomerById(merchantId, customer.id);
    }
  }
};

export type CustomerListQuery = { page: number; per_page: number; search?: string };

/**
 * A page of live customers, newest first. Unfiltered: the total from the TOTALS counter and the
 * page from the list index (page 1 costs one GetItem and one Query whatever the list size).
 * Search: a case-insensitive substring of email or name over a small projection of the list,
 * then the page's items by BatchGetItem.
 */
export const listCustomers = async (merchantId: string, q: CustomerListQuery): Promise<{ items: CustomerItem[]; total: number }> => {
  const offset = (q.page - 1) * q.per_page;
  const term = q.search?.trim().toLowerCase();
  if (term) {
    const rows = await customerSearchRows(merchantId);
    const matches = rows.filter((r) => r.email.includes(term) || (r.name ?? '').toLowerCase().includes(term));
    const pageIds = matches.slice(offset, offset + q.per_page).map((r) => Number(r.id));
    if (!pageIds.length) return { items: [], total: matches.length };
    const found = await customersByIds(merchantId, pageIds);
    // A customer deleted between the two reads is left out.
    const items = pageIds.flatMap((id) => {
      const item = found.get(id);
      return item && !item.deleted_at ? [item] : [];
    });
    return { items, total: matches.length };
  }
  if (offset === 0) {
    const [total, items] = await Promise.all([customerTotal(merchantId), customersPage(merchantId, 0, q.per_page)]);
    return { items, total: Math.max(total, items.length) };
  }
  const total = await customerTotal(merchantId);
  if (offset >= total) return { items: [], total };
  return { items: await customersPage(merchantId, offset, q.per_page), total };
};
