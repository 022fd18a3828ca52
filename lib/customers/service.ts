import { now } from '#lib/clock';
import { listPage, type CursorPage } from '#lib/db/query';
import { allocateIds } from '#lib/db/sequences';
import { retrying } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { NotFoundError } from '#lib/errors';
import { formatTimestamp } from '#lib/shared/time';
import { EXTERNAL_ID_MAX, type CustomerCreate, type CustomerUpdate } from '#lib/customers/schemas';
import { isIdSegment, profileChanges, searchPage, searchTerm } from '#lib/customers/rules';
import { convertedLtv, otherLtvCurrencies, type CustomerItem } from '#lib/customers/model';
import type { AuthContext } from '#lib/auth/tokens';
import {
  countedTimelines,
  generationSettings,
  movementRow,
  movementsOf,
  NO_STANDING,
  readStandings,
  readTimeline,
  type Standing,
  standingKey,
  standingsOf,
} from '#lib/metrics';
import type Decimal from 'decimal.js';
import { cursorMeta, pageOfRows } from '#lib/shared/pagination';
import {
  addCustomerCreate,
  addCustomerDelete,
  addCustomerUpdate,
  customerSearchRows,
  customersByIds,
  customersList,
  customerTotal,
  customerWithStanding,
  getCustomerByExternalId,
  getCustomerById,
  readLtvParts,
  resolveForWrite,
  takenError,
} from '#lib/customers/store';

/**
 * Customers (docs/customers.md): each write reads by key, decides (lib/customers/rules.ts) and
 * persists in one transaction, every attempt through `retrying`.
 */

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
 * Search: a case-insensitive substring of email or name (rules: `searchPage`) over a small
 * projection of the list, then the page's items by BatchGetItem.
 */
export const listCustomers = async (merchantId: string, q: CustomerListQuery): Promise<CursorPage<CustomerItem>> => {
  const term = searchTerm(q.search);
  if (!term)
    return listPage<CustomerItem>(
      merchantId,
      // Each listed customer's timeline head comes in the BatchGetItem of the page's customers.
      { ...customersList(merchantId), companion: (row) => standingKey(merchantId, Number(row.customer_id ?? row.id)) },
      customerTotal(merchantId),
      q,
    );
  const { shown, offset, total, next } = searchPage(merchantId, await customerSearchRows(merchantId), term, q);
  const found = shown.length
    ? await customersByIds(
        merchantId,
        shown.map((r) => Number(r.id)),
      )
    : new Map<number, CustomerItem>();
  // A customer deleted between the two reads is left out.
  const items = shown.flatMap((r) => {
    const item = found.get(Number(r.id));
    return item && !item.deleted_at ? [item] : [];
  });
  return { items, meta: cursorMeta(offset, q.per_page, total, items.length, next) };
};

/** GET /customers/{idOrExternalId}: an all-digit segment is the id, else an external_id (docs/customers.md). */
export const findCustomer = async (merchantId: string, idOrExternalId: string): Promise<CustomerItem | null> =>
  isIdSegment(idOrExternalId)
    ? getCustomerById(merchantId, Number(idOrExternalId))
    : // Longer than any external_id: no key to read (and one past 2,048 bytes would be a DynamoDB ValidationException, a 500).
      idOrExternalId.length > EXTERNAL_ID_MAX
      ? null
      : getCustomerByExternalId(merchantId, idOrExternalId);

/**
 * GET /customers/{idOrExternalId} with its figures: by id, the customer and its timeline head in
 * one BatchGetItem; by external_id, the index read, then the head with the figures.
 */
export const readCustomer = async (
  merchantId: string,
  figures: Pick<AuthContext, 'reportingCurrency' | 'timezone' | 'generation'>,
  idOrExternalId: string,
): Promise<{ customer: CustomerItem; figures: CustomerFigures } | null> => {
  if (isIdSegment(idOrExternalId)) {
    const byId = await customerWithStanding(merchantId, Number(idOrExternalId));
    if (!byId) return null;
    const read = await customerFigures(merchantId, figures, [byId.customer], byId.heads);
    return { customer: byId.customer, figures: read.get(byId.customer.id)! };
  }
  const customer = await findCustomer(merchantId, idOrExternalId);
  if (!customer) return null;
  const read = await customerFigures(merchantId, figures, [customer]);
  return { customer, figures: read.get(customer.id)! };
};

/** What a customer shows beyond its item: its MRR and latest subscription status now, and its `ltv` when converted. */
export type CustomerFigures = { standing: Standing; ltv?: Decimal };

/**
 * The customers' figures (docs/customers.md): their MRR and status from one BatchGetItem of their
 * timeline heads; for those with paid orders in other currencies, `ltv` converted at the rates as
 * they are now, in the merchant's zone as it is now (the rate tables in one BatchGetItem, then the
 * parts of the customers with a rate to use, a Query each, at once).
 */
export const customerFigures = async (
  merchantId: string,
  figures: Pick<AuthContext, 'reportingCurrency' | 'timezone' | 'generation'>,
  customers: CustomerItem[],
  /** Their timeline heads when already read (by `keyId`), else read here. */
  heads?: Map<string, Record<string, unknown>>,
): Promise<Map<number, CustomerFigures>> => {
  const { reportingCurrency, timezone } = figures;
  const others = new Map(customers.map((c) => [c.id, otherLtvCurrencies(c, reportingCurrency)]));
  const ids = customers.map((c) => c.id);
  const [standings, { book }] = await Promise.all([
    heads ? standingsOf(merchantId, figures, ids, heads) : readStandings(merchantId, figures, ids),
    generationSettings(merchantId, figures.generation, [...others.values()].flat(), new Map(), figures.timezone).then((s) => ({
      book: s.rates,
    })),
  ]);
  // Only a customer with a currency that has rates has anything to convert.
  const converting = customers.filter((c) => others.get(c.id)!.some((ccy) => book.get(ccy)?.size));
  const ltvs = new Map(
    await Promise.all(
      converting.map(
        async (c) => [c.id, convertedLtv(c, reportingCurrency, await readLtvParts(merchantId, c.id), book, timezone)] as const,
      ),
    ),
  );
  return new Map(customers.map((c) => [c.id, { standing: standings.get(c.id) ?? NO_STANDING, ltv: ltvs.get(c.id) }]));
};

/**
 * A page of the customer's MRR movements up to now, newest first (docs/customers.md): its timeline
 * (the head, and its chunks when long) read once, classified in memory as the aggregates count it.
 */
export const customerActivities = async (
  merchantId: string,
  figures: Pick<AuthContext, 'reportingCurrency' | 'timezone' | 'generation'>,
  idOrExternalId: string,
  q: { page: number; per_page: number; cursor?: string },
) => {
  const customer = await findCustomer(merchantId, idOrExternalId);
  if (!customer) throw new NotFoundError();
  // Up to now: a recurring order's end or a dated change ahead is listed once it has happened.
  const upTo = `${formatTimestamp(now())}~`;
  const read = await countedTimelines(merchantId, figures, new Map([[customer.id, await readTimeline(merchantId, customer.id)]]));
  const movements = movementsOf(read.get(customer.id)!.timeline, figures.reportingCurrency)
    .filter((m) => m.at < upTo)
    .reverse();
  const { shown, offset, total, next } = pageOfRows(merchantId, movements, `activities:${customer.id}`, (m) => `${m.at}|${m.line}`, q);
  const items = shown.map(movementRow);
  return { items, meta: cursorMeta(offset, q.per_page, total, items.length, next) };
};
