import {
  addTimelineChange,
  type SaleOrder,
  saleOf,
  withBookings,
  customersWithTimelines,
  EMPTY_TIMELINE,
  lineOf,
  orderLine,
  type SettingsMemo,
  type Timeline,
  type TimelineState,
} from '#lib/metrics';
import { NO_SOURCE, openBatchActivity, sourceOf } from '#lib/activity/store';
import { now } from '#lib/clock';
import type { AuthContext } from '#lib/auth/tokens';
import { batchGet, keyId } from '#lib/db/batch-get';
import { batchFailure, commitUnit, runBatch } from '#lib/db/batch';
import { keys } from '#lib/db/keys';
import { allocateIds } from '#lib/db/sequences';
import { WriteSet } from '#lib/db/writes';
import { InvalidError } from '#lib/errors';
import { addCustomerCreate } from '#lib/customers/store';
import { addCustomerFigures, type CustomerOrderChange, requireLiveCustomer } from '#lib/customers/figures';
import type { CustomerItem } from '#lib/customers/model';
import { issueMessage } from '#lib/shared/validation';
import { batchCollector, identifierOf, type BatchResult } from '#lib/shared/schemas';
import type { OrderItem } from '#lib/orders/model';
import { dropEmpty, foldImportItem, importUnchanged, missingForNew } from '#lib/orders/rules';
import { orderBatchItem, type OrderBatchItem } from '#lib/orders/schemas';
import { addAggregateDeltas, addOrderWrite, newOrderItem, rewriteOrder } from '#lib/orders/store';
import { formatTimestamp } from '#lib/shared/time';

/**
 * POST /orders/batch (docs/orders.md): an upsert by order_no, applied in array order, through the
 * batch engine. Items naming one order_no fold into one unit (its final write); every email an
 * item names gets its customer, created if no live one holds it (as separate batches would), named
 * by the first item naming it. No webhook events; one activity-log record.
 */
type Item = { index: number; input: OrderBatchItem };
type Collector = ReturnType<typeof batchCollector>;
type Figures = Pick<AuthContext, 'reportingCurrency' | 'timezone' | 'generation' | 'delinquencyDays'>;

/** `request`: the HTTP request the batch came in (its id and import run name its activity entry). */
export const importOrders = async (
  auth: AuthContext,
  rawItems: unknown[],
  request?: Parameters<typeof sourceOf>[0],
): Promise<BatchResult> => {
  const source = request ? sourceOf(request) : NO_SOURCE;
  const collector = batchCollector(rawItems.length);
  const valid: Item[] = [];
  rawItems.forEach((raw, index) => {
    const identifier = identifierOf(raw, 'order_no');
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      collector.failed(index, 'validation_error', `The orders.${index} field must be an object.`, identifier);
      return;
    }
    const parsed = orderBatchItem.safeParse(dropEmpty(raw as Record<string, unknown>), { reportInput: true });
    if (!parsed.success) collector.failed(index, 'validation_error', issueMessage(parsed.error.issues[0]), identifier);
    else valid.push({ index, input: parsed.data });
  });

  const at = formatTimestamp(now());
  const [plan, activity] = await Promise.all([
    prepare(auth.merchantId, auth, valid, collector, at),
    openBatchActivity(auth.merchantId, 'orders.batch', source, at),
  ]);
  await runBatch(plan.units, plan, {
    merchantId: auth.merchantId,
    finish: activity(collector.result, (pending) => {
      const outcomes = plan.units.slice(plan.units.length - pending).flatMap((u) => u.outcomes);
      return { created: outcomes.filter((o) => o.kind === 'created').length, updated: outcomes.filter((o) => o.kind === 'updated').length };
    }),
  });
  return collector.result();
};

/** One order_no's final write, and the items it reports. */
type Unit = {
  orderNo: string;
  items: Item[];
  order: OrderItem;
  stored: OrderItem | null;
  /** Emails the unit's items name, in order (their customers exist once the unit is written). */
  emails: string[];
  outcomes: { index: number; kind: 'created' | 'updated' }[];
};

/** The one message of an item's refusal. */
const refusalMessage = (err: InvalidError) => Object.values(err.fields)[0][0];

type CustomerState = { item: CustomerItem; exists: boolean; name: string | null; timeline: TimelineState };

/**
 * Reads what the items touch (orders and email markers in one BatchGetItem, then the customers),
 * folds them into units and allocates the new ids. Called for the whole batch, and again for one
 * unit's items when its transaction lost a race.
 */
/** `figures`: the reporting currency and time zone the MRR figures are kept in. */
const prepare = async (merchantId: string, figures: Figures, items: Item[], collector: Collector, at: string) => {
  const orderNos = [...new Set(items.map((i) => i.input.order_no))];
  const emails = [...new Set(items.flatMap((i) => i.input.customer_email ?? []))];
  const found = await batchGet([
    ...orderNos.map((n) => keys.order(merchantId, n)),
    ...emails.map((e) => keys.customerEmail(merchantId, e)),
  ]);
  const stored = (n: string) => (found.get(keyId(keys.order(merchantId, n))) as OrderItem | undefined) ?? null;
  const markerId = (e: string) => {
    const m = found.get(keyId(keys.customerEmail(merchantId, e)));
    return m ? Number(m.customer_id) : undefined;
  };

  // Fold the items into one unit per order_no, in array order.
  const units = new Map<string, Unit>();
  for (const item of items) {
    const { index, input } = item;
    const prev = units.get(input.order_no);
    const base = prev?.order ?? stored(input.order_no);
    if (!base) {
      const missing = missingForNew(input);
      if (missing) {
        collector.failed(index, 'validation_error', missing, input.order_no);
        continue;
      }
      units.set(input.order_no, {
        orderNo: input.order_no,
        items: [item],
        order: newOrderItem(
          merchantId,
          0,
          0,
          { ...input, amount: input.amount!, customer_email: input.customer_email! },
          'import',
          at,
          input.created_at ?? at,
        ),
        stored: null,
        emails: [input.customer_email!],
        outcomes: [{ index, kind: 'created' }],
      });
      continue;
    }
    const unit: Unit = prev ?? { orderNo: input.order_no, items: [], order: base, stored: base, emails: [], outcomes: [] };
    let next: OrderItem;
    try {
      next = foldImportItem(unit.order, input, at);
    } catch (err) {
      if (!(err instanceof InvalidError)) throw err;
      collector.failed(index, 'validation_error', refusalMessage(err), input.order_no);
      continue;
    }
    unit.order = next;
    if (input.customer_email) unit.emails.push(input.customer_email);
    unit.items.push(item);
    unit.outcomes.push({ index, kind: 'updated' });
    units.set(input.order_no, unit);
  }

  // Every named email without a live customer gets one, named by the first item naming it.
  const namedBy = new Map<string, string | null>();
  for (const u of units.values()) {
    for (const it of u.items) {
      const e = it.input.customer_email;
      if (e && !namedBy.has(e)) namedBy.set(e, it.input.customer_name ?? null);
    }
  }
  const newEmails = [...namedBy.keys()].filter((e) => markerId(e) === undefined);
  const newOrders = [...units.values()].filter((u) => !u.stored).length;
  const ids = await allocateIds(merchantId, { order: newOrders, customer: newEmails.length });
  let nextOrderId = ids.order ?? 0;
  let nextCustomerId = ids.customer ?? 0;
  const customerIdOf = new Map<string, number>();
  for (const e of namedBy.keys()) customerIdOf.set(e, markerId(e) ?? nextCustomerId++);

  // Final order items: ids, customer links (the last email named wins) and index keys.
  for (const u of units.values()) {
    const email = u.emails.at(-1);
    const customerId = email ? customerIdOf.get(email)! : u.order.customer_id;
    const unchanged = u.stored && importUnchanged(u.stored, u.order, customerId);
    // An item that changes nothing is still reported `updated`, but writes nothing (updated_at stays).
    u.order = unchanged
      ? u.stored!
      : u.stored
        ? rewriteOrder(merchantId, u.stored, { ...u.order, customer_id: customerId }, at)
        : newOrderItem(
            merchantId,
            nextOrderId++,
            customerId,
            { ...u.order, customer_email: email! } as never,
            'import',
            at,
            u.order.created_at,
          );
  }

  // Customers whose figures move or who are created (deleted ones included: their history counts).
  const customers = new Map<number, CustomerState>();
  const existingIds = new Set<number>();
  for (const u of units.values()) {
    if (u.stored) existingIds.add(u.stored.customer_id);
    existingIds.add(u.order.customer_id);
  }
  for (const e of newEmails) existingIds.delete(customerIdOf.get(e)!);
  // The customers and their MRR timelines in one BatchGetItem (per 50 customers).
  const read = await customersWithTimelines<CustomerItem>(merchantId, [...existingIds]);
  for (const [id, item] of read.customers) customers.set(id, { item, exists: true, name: item.name, timeline: read.timelines.get(id)! });
  for (const e of newEmails) {
    const id = customerIdOf.get(e)!;
    customers.set(id, {
      item: { id, email: e, payment_version: 0 } as CustomerItem,
      exists: false,
      name: namedBy.get(e) ?? null,
      timeline: EMPTY_TIMELINE,
    });
  }
  /** Customers linked by email must still be live at commit (a concurrent delete frees the email). */
  const linkedByEmail = new Set([...namedBy.keys()].map((e) => customerIdOf.get(e)!));

  const unitList = [...units.values()];
  // The exchange rates the batch's transactions convert with, read once for all of them.
  const rates: SettingsMemo = new Map();
  return {
    units: unitList,
    write: (ws: WriteSet, chunk: Unit[]) =>
      writeUnits(ws, merchantId, figures, chunk, customers, customerIdOf, linkedByEmail, at, collector, rates),
    alone: async (unit: Unit) => {
      const fresh = await prepare(merchantId, figures, unit.items, collector, at);
      const ws = new WriteSet();
      const done = await fresh.write(ws, fresh.units);
      await commitUnit(ws, merchantId);
      done();
    },
    failed: (unit: Unit, err: unknown) => {
      const [reason, message] = batchFailure(err, 'order');
      for (const o of unit.outcomes) collector.failed(o.index, reason, message, unit.orderNo);
    },
  };
};

/** The writes of a chunk of units: orders, customers created or moved, aggregates. */
const writeUnits = async (
  ws: WriteSet,
  merchantId: string,
  figures: Figures,
  chunk: Unit[],
  customers: Map<number, CustomerState>,
  customerIdOf: Map<string, number>,
  linkedByEmail: Set<number>,
  at: string,
  collector: Collector,
  rates: SettingsMemo,
): Promise<() => void> => {
  const changes = new Map<number, CustomerOrderChange[]>();
  const push = (id: number, change: CustomerOrderChange) => changes.set(id, [...(changes.get(id) ?? []), change]);
  const touched = new Set<number>();
  // Each customer's timeline as the chunk's units leave it, one order change at a time, in order:
  // copied once per customer (a long history has thousands of lines), then each order's line replaced.
  const timelines = new Map<number, Timeline>();
  // …and its bookings' changes (the sales figures' record, one entry per order), applied at once.
  const bookingChanges = new Map<number, [string, SaleOrder | null][]>();
  const moveLine = (id: number, orderNo: string, after: OrderItem | null) => {
    const state = customers.get(id);
    if (!state) return;
    let tl = timelines.get(id);
    if (!tl) timelines.set(id, (tl = { ...state.timeline.timeline }));
    const points = orderLine(after);
    if (points.length) tl[lineOf.order(orderNo)] = points;
    else delete tl[lineOf.order(orderNo)];
    bookingChanges.set(id, [...(bookingChanges.get(id) ?? []), [orderNo, after && saleOf(after)]]);
  };
  for (const u of chunk) {
    if (u.order === u.stored) continue; // nothing changes
    if (u.stored && u.stored.customer_id !== u.order.customer_id) moveLine(u.stored.customer_id, u.orderNo, null);
    moveLine(u.order.customer_id, u.orderNo, u.order);
    addOrderWrite(ws, merchantId, u.stored, u.order);
    addAggregateDeltas(ws, merchantId, u.stored, u.order);
    for (const e of u.emails) touched.add(customerIdOf.get(e)!);
    if (u.stored && u.stored.customer_id !== u.order.customer_id) {
      push(u.stored.customer_id, { before: u.stored, after: null });
      push(u.order.customer_id, { before: null, after: u.order });
    } else {
      push(u.order.customer_id, { before: u.stored, after: u.order });
    }
  }
  for (const id of changes.keys()) touched.add(id);

  const after = new Map<number, CustomerState>();
  for (const id of touched) {
    const state = customers.get(id);
    if (!state) continue; // an order whose customer item is missing: no figures to keep
    const cs = changes.get(id) ?? [];
    const timeline = timelines.has(id)
      ? await addTimelineChange(
          ws,
          merchantId,
          figures,
          id,
          state.timeline,
          timelines.get(id)!,
          rates,
          withBookings(state.timeline.bookings, bookingChanges.get(id) ?? []),
        )
      : state.timeline;
    if (!state.exists) {
      const created = addCustomerCreate(ws, merchantId, id, { email: state.item.email, name: state.name }, at);
      await addCustomerFigures(ws, merchantId, figures.reportingCurrency, created, cs, created);
      after.set(id, { item: created, exists: true, name: state.name, timeline });
    } else {
      const payment = cs.length ? await addCustomerFigures(ws, merchantId, figures.reportingCurrency, state.item, cs) : null;
      if (linkedByEmail.has(id)) requireLiveCustomer(ws, merchantId, id);
      after.set(id, { ...state, item: { ...state.item, ...(payment ?? {}) }, timeline });
    }
  }
  return () => {
    for (const [id, state] of after) customers.set(id, state);
    for (const u of chunk) {
      for (const o of u.outcomes) collector[o.kind](o.index, u.order.id, u.order.order_no);
    }
  };
};
