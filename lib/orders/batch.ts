import { now } from '#lib/clock';
import type { AuthContext } from '#lib/auth/tokens';
import { keys } from '#lib/db/keys';
import { allocateIds } from '#lib/db/sequences';
import { itemAbsent, versionIs, WriteConflict, WriteSet } from '#lib/db/writes';
import { addCustomerCreate, batchGet, customersByIds } from '#lib/customers/store';
import type { CustomerItem } from '#lib/customers/model';
import { issueMessage } from '#lib/http/validation';
import { batchCollector, identifierOf, type BatchResult } from '#lib/shared/schemas';
import { newOrderItem } from '#lib/orders/create';
import {
  addAggregateDeltas,
  addCustomerFigureUpdate,
  applyPlanToNewCustomer,
  planCustomerFigures,
  type CustomerFigurePlan,
  type CustomerOrderChange,
} from '#lib/orders/figures';
import type { OrderItem } from '#lib/orders/model';
import { orderBatchItem, type OrderBatchItem } from '#lib/orders/schemas';
import { otherPaymentTimes } from '#lib/orders/store';
import { fillStatusTimestamp } from '#lib/orders/transitions';
import { rewriteOrder } from '#lib/orders/update-status';
import { formatTimestamp } from '#lib/shared/time';

/**
 * POST /orders/batch (decisions §6): an upsert by order_no, applied in array order. Items are folded
 * into one final write per order_no, then written in transactions of up to 100 actions (orders, new
 * customers with their email markers, customer figures, stats and totals merged per item). Nothing
 * is rolled back: a transaction that loses a race is redone order by order from fresh reads.
 * No webhook events; one activity-log record.
 */
type Item = { index: number; input: OrderBatchItem };
type Collector = ReturnType<typeof batchCollector>;

const FIELDS = ['amount', 'currency', 'status', 'payment_method', 'billing_cycle', 'paid_at', 'refunded_at', 'failed_at', 'metadata'] as const;
const MAX_ACTIONS = 99; // one left for the activity-log record
const MAX_ATTEMPTS = 5;

/** Absent, null, empty-string and empty-object fields leave the stored value alone (decisions §6: accumulate). */
const isEmpty = (v: unknown) =>
  v === null || v === undefined || v === '' || (typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0);
const dropEmpty = (raw: Record<string, unknown>) => Object.fromEntries(Object.entries(raw).filter(([, v]) => !isEmpty(v)));

export const importOrders = async (auth: AuthContext, rawItems: unknown[]): Promise<BatchResult> => {
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
  const activity = (extra: Draft[]) => {
    const r = collector.result();
    const pending = extra.flatMap((d) => d.outcomes);
    return {
      ...keys.activity(auth.merchantId, at, `${Date.now()}${Math.random().toString(36).slice(2, 8)}`),
      type: 'orders.import',
      total: r.total,
      created: r.created + pending.filter((o) => o.kind === 'created').length,
      updated: r.updated + pending.filter((o) => o.kind === 'updated').length,
      skipped: r.skipped,
      failed: r.failed,
      created_at: at,
    };
  };
  const logged = await applyItems(auth, valid, collector, at, activity);
  if (!logged) await new WriteSet().put('activity', activity([])).commit();
  return collector.result();
};

type Draft = { order: OrderItem; stored: OrderItem | null; email?: string; outcomes: { index: number; kind: 'created' | 'updated' }[] };

/**
 * Plans and writes `items`. With `activity`, the import's activity record rides in the last
 * transaction when there is room; returns whether it was written.
 */
const applyItems = async (
  auth: AuthContext,
  items: Item[],
  collector: Collector,
  at: string,
  activity?: (pending: Draft[]) => Record<string, unknown> & { pk: string; sk: string },
  attempt = 1,
): Promise<boolean> => {
  if (!items.length) return false;
  const { merchantId } = auth;
  const orderNos = [...new Set(items.map((i) => i.input.order_no))];
  const emails = [...new Set(items.flatMap((i) => i.input.customer_email ?? []))];
  const found = await batchGet([
    ...orderNos.map((n) => keys.order(merchantId, n)),
    ...emails.map((e) => keys.customerEmail(merchantId, e)),
  ]);
  const stored = (n: string) => found.get(`${keys.order(merchantId, n).pk}|ORDER`) as OrderItem | undefined;
  const markerId = (e: string) => {
    const k = keys.customerEmail(merchantId, e);
    const m = found.get(`${k.pk}|${k.sk}`);
    return m ? Number(m.customer_id) : undefined;
  };

  // Fold the items into one draft per order_no, in array order.
  const drafts = new Map<string, Draft>();
  const needNewCustomer = new Map<string, string | undefined>(); // email → name
  let newOrders = 0;
  for (const { index, input } of items) {
    const prev = drafts.get(input.order_no);
    const base = prev?.order ?? stored(input.order_no) ?? null;
    if (!base) {
      const missing = !input.amount ? 'amount' : !input.customer_email ? 'customer_email' : null;
      if (missing) {
        collector.failed(index, 'validation_error', `The ${missing.replace('_', ' ')} field is required.`, input.order_no);
        continue;
      }
      newOrders++;
      drafts.set(input.order_no, {
        order: newOrderItem(merchantId, 0, 0, { ...input, amount: input.amount!, customer_email: input.customer_email! }, 'import', at),
        stored: null,
        email: input.customer_email,
        outcomes: [{ index, kind: 'created' }],
      });
    } else {
      const changes: Partial<OrderItem> = {};
      for (const f of FIELDS) if (input[f] !== undefined) (changes as Record<string, unknown>)[f] = input[f];
      const draft: Draft = prev ?? { order: base, stored: base, outcomes: [] };
      draft.order = fillStatusTimestamp({ ...draft.order, ...changes } as OrderItem, at);
      if (input.customer_email) draft.email = input.customer_email;
      draft.outcomes.push({ index, kind: 'updated' });
      drafts.set(input.order_no, draft);
    }
  }
  // A customer created by the batch is named by the first item that names its email (later items
  // address an existing customer, whose name an order never changes).
  const firstName = new Map<string, string | undefined>();
  for (const { input } of items) {
    if (input.customer_email && !firstName.has(input.customer_email)) firstName.set(input.customer_email, input.customer_name ?? undefined);
  }
  for (const d of drafts.values()) {
    if (d.email && markerId(d.email) === undefined) needNewCustomer.set(d.email, firstName.get(d.email));
  }

  const ids = await allocateIds(merchantId, { order: newOrders, customer: needNewCustomer.size });
  let nextOrderId = ids.order ?? 0;
  let nextCustomerId = ids.customer ?? 0;
  const newCustomerIds = new Map([...needNewCustomer.keys()].map((e) => [e, nextCustomerId++]));

  // Final order items, with ids, customer links and index keys.
  const finals: Draft[] = [];
  for (const d of drafts.values()) {
    const customerId = d.email ? (markerId(d.email) ?? newCustomerIds.get(d.email)!) : d.order.customer_id;
    if (!d.stored) {
      d.order = newOrderItem(merchantId, nextOrderId++, customerId, { ...d.order, customer_email: d.email! } as never, 'import', at);
    } else {
      d.order = rewriteOrder(merchantId, d.stored, { ...d.order, customer_id: customerId }, at);
    }
    finals.push(d);
  }

  // Existing customers whose figures move (read once, deleted ones included: their history still counts).
  const newIds = new Set(newCustomerIds.values());
  const existingIds = new Set<number>();
  for (const d of finals) {
    if (d.stored) existingIds.add(d.stored.customer_id);
    if (!newIds.has(d.order.customer_id)) existingIds.add(d.order.customer_id);
  }
  const customers = new Map<number, CustomerState>();
  for (const [id, c] of await customersByIds(merchantId, [...existingIds])) customers.set(id, { item: c, created: true });
  // Customers this batch creates: put by the first chunk that touches them.
  for (const [email, id] of newCustomerIds) {
    const item = { email, first_payment_at: null, last_payment_at: null, payment_version: 0 } as CustomerItem;
    customers.set(id, { item, created: false, email, name: needNewCustomer.get(email) ?? null });
  }

  // Write in chunks; customer state carries over between chunks in memory.
  const chunks = chunkFinals(finals, newCustomerIds);
  for (let c = 0; c < chunks.length; c++) {
    const ws = new WriteSet();
    const changesByCustomer = new Map<number, CustomerOrderChange[]>();
    const push = (id: number, change: CustomerOrderChange) => changesByCustomer.set(id, [...(changesByCustomer.get(id) ?? []), change]);
    for (const d of chunks[c]) {
      ws.put('order', d.order, d.stored ? versionIs(d.stored.version) : itemAbsent);
      addAggregateDeltas(ws, merchantId, d.stored, d.order);
      if (d.stored && d.stored.customer_id !== d.order.customer_id) {
        push(d.stored.customer_id, { before: d.stored, after: null });
        push(d.order.customer_id, { before: null, after: d.order });
      } else {
        push(d.order.customer_id, { before: d.stored, after: d.order });
      }
    }
    const exclude = new Set(chunks[c].map((d) => d.order.order_no));
    const applied: [CustomerState, CustomerFigurePlan][] = [];
    for (const [customerId, changes] of changesByCustomer) {
      const state = customers.get(customerId);
      if (!state) continue; // an order whose customer item is missing (should not happen): no figures to keep
      const plan = await planCustomerFigures(state.item, changes, () => otherPaymentTimes(merchantId, customerId, exclude));
      if (!state.created) {
        const created = addCustomerCreate(ws, merchantId, customerId, { email: state.email!, name: state.name ?? null }, at);
        applyPlanToNewCustomer(created, plan);
        state.pendingItem = created;
      } else {
        addCustomerFigureUpdate(ws, keys.customer(merchantId, customerId), state.item, plan);
      }
      applied.push([state, plan]);
    }
    const withActivity = activity !== undefined && c === chunks.length - 1 && ws.size < 100;
    if (withActivity) ws.put('activity', activity(chunks[c]));
    try {
      await ws.commit();
    } catch (err) {
      if (!(err instanceof WriteConflict)) throw err;
      await redoOneByOne(auth, chunks.slice(c), items, collector, at, attempt);
      return false;
    }
    settle(chunks[c], applied, collector);
    if (withActivity) return true;
  }
  return false;
};

type CustomerState = { item: CustomerItem; created: boolean; email?: string; name?: string | null; pendingItem?: CustomerItem };


/** Records the outcomes of a committed chunk and carries the customers' new state forward. */
const settle = (chunk: Draft[], applied: [CustomerState, CustomerFigurePlan][], collector: Collector) => {
  for (const d of chunk) {
    for (const o of d.outcomes) collector[o.kind](o.index, d.order.id, d.order.order_no);
  }
  for (const [state, plan] of applied) {
    if (!state.created) {
      state.item = state.pendingItem!;
      state.created = true;
    } else if (plan.payments) {
      state.item = { ...state.item, ...{ first_payment_at: plan.payments.first, last_payment_at: plan.payments.last }, payment_version: (state.item.payment_version ?? 0) + 1 };
    }
  }
};

/** A transaction lost a race: redo each remaining order from fresh reads, on its own. */
const redoOneByOne = async (auth: AuthContext, chunks: Draft[][], items: Item[], collector: Collector, at: string, attempt: number) => {
  // Only the items of the unwritten drafts: items already reported (failed while folding) stay reported once.
  const remaining = new Set(chunks.flat().flatMap((d) => d.outcomes.map((o) => o.index)));
  const byOrder = new Map<string, Item[]>();
  for (const it of items) {
    if (remaining.has(it.index)) byOrder.set(it.input.order_no, [...(byOrder.get(it.input.order_no) ?? []), it]);
  }
  for (const [orderNo, group] of byOrder) {
    if (attempt >= MAX_ATTEMPTS) {
      for (const it of group) collector.failed(it.index, 'conflict', 'The order was changed concurrently; retry the item.', orderNo);
      continue;
    }
    await applyItems(auth, group, collector, at, undefined, attempt + 1);
  }
};

/** Sequential slices of the final writes, each within the transaction's action limit. */
const chunkFinals = (finals: Draft[], newCustomerIds: Map<string, number>): Draft[][] => {
  const newIds = new Set(newCustomerIds.values());
  const chunks: Draft[][] = [];
  let current: Draft[] = [];
  let customers = new Set<number>();
  let aggregates = new Set<string>();
  const cost = (d: Draft) => {
    const cs = new Set([d.order.customer_id, ...(d.stored ? [d.stored.customer_id] : [])].filter((id) => !customers.has(id)));
    const customerActions = [...cs].reduce((n, id) => n + (newIds.has(id) ? 2 : 1), 0);
    const aggs = aggregateKeys(d).filter((k) => !aggregates.has(k));
    return { actions: 1 + customerActions + aggs.length, cs, aggs };
  };
  let used = 0;
  for (const d of finals) {
    let c = cost(d);
    if (used + c.actions > MAX_ACTIONS && current.length) {
      chunks.push(current);
      current = [];
      customers = new Set();
      aggregates = new Set();
      used = 0;
      c = cost(d);
    }
    current.push(d);
    c.cs.forEach((id) => customers.add(id));
    c.aggs.forEach((k) => aggregates.add(k));
    used += c.actions;
  }
  if (current.length) chunks.push(current);
  return chunks;
};

/** The stats/totals items an order write touches (upper bound). */
const aggregateKeys = (d: Draft): string[] => {
  const out = ['totals'];
  for (const o of [d.stored, d.order]) {
    if (!o) continue;
    out.push(`D${o.created_at.slice(0, 10)}`);
    if (o.paid_at) out.push(`D${o.paid_at.slice(0, 10)}`, `M${o.paid_at.slice(0, 7)}`);
  }
  return [...new Set(out)];
};
