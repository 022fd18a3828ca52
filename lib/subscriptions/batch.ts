import {
  addTimelineChange,
  EMPTY_TIMELINE,
  type SettingsMemo,
  subscriptionTimeline,
  type Timeline,
  timelinesFrom,
  type TimelineState,
} from '#lib/metrics';
import { NO_SOURCE, openBatchActivity, sourceOf } from '#lib/activity/store';
import { now } from '#lib/clock';
import { batchGet, keyId } from '#lib/db/batch-get';
import { batchFailure, commitUnit, runBatch } from '#lib/db/batch';
import { keys } from '#lib/db/keys';
import { allocateIds } from '#lib/db/sequences';
import { itemAbsent, WriteSet } from '#lib/db/writes';
import { addCustomerCreate } from '#lib/customers/store';
import { requireLiveCustomer } from '#lib/customers/figures';
import { amountCurrencyError } from '#lib/shared/currency';
import { batchCollector, identifierOf, type BatchResult } from '#lib/shared/schemas';
import { formatTimestamp } from '#lib/shared/time';
import { issueMessage } from '#lib/shared/validation';
import { CUSTOMER_INVALID } from '#lib/subscriptions/events';
import { EVENT_ID_BLOCK, type SubscriptionItem } from '#lib/subscriptions/model';
import { subscriptionBatchItem, type SubscriptionBatchInput } from '#lib/subscriptions/schemas';
import { cancelEvent, createdEvent } from '#lib/subscriptions/rules';
import { addChangeEvent, LIVE_TAKEN, moveTotals, type Scope } from '#lib/subscriptions/service';
import { subscriptionIndexAttributes } from '#lib/subscriptions/store';

/**
 * POST /subscriptions/batch: imported subscriptions, created in array order through the batch
 * engine. Each item creates a subscription (source `import`) with its `created` event at
 * started_at and, when cancelled_at is given, its `cancel` event there; no webhooks. Items of one
 * customer form one unit, so its MRR timeline is written once per transaction. Uniqueness is
 * decided by the transaction (the external id marker, the customer's live marker); the reads
 * before it only sort items into skipped and failed early.
 */
type Item = { index: number; input: SubscriptionBatchInput };
type Collector = ReturnType<typeof batchCollector>;

/**
 * One imported subscription; `create` when its customer is new (created by the first of its units
 * to commit). Units of one customer in one transaction share one timeline write.
 */
type Unit = {
  index: number;
  customerId: number;
  create: { email: string; name: string | null } | null;
  sub: SubscriptionItem;
  eventIds: number[];
};

export const DUPLICATE_EXTERNAL_ID = 'duplicate_external_id';

export const importSubscriptions = async (
  scope: Scope,
  rawItems: unknown[],
  request?: Parameters<typeof sourceOf>[0],
): Promise<BatchResult> => {
  const source = request ? sourceOf(request) : NO_SOURCE;
  const collector = batchCollector(rawItems.length);
  const valid: Item[] = [];
  rawItems.forEach((raw, index) => {
    const identifier = identifierOf(raw, 'external_id');
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      collector.failed(index, 'validation_error', `The subscriptions.${index} field must be an object.`, identifier);
      return;
    }
    const parsed = subscriptionBatchItem.safeParse(raw, { reportInput: true });
    if (!parsed.success) collector.failed(index, 'validation_error', issueMessage(parsed.error.issues[0]), identifier);
    else valid.push({ index, input: parsed.data });
  });
  const at = formatTimestamp(now());
  const [plan, activity] = await Promise.all([
    prepare(scope, valid, collector, at),
    openBatchActivity(scope.merchantId, 'subscriptions.batch', source, at),
  ]);
  // Each unit of the last transaction creates one subscription.
  await runBatch(plan.units, plan, {
    merchantId: scope.merchantId,
    finish: activity(collector.result, (pending) => ({ created: pending, updated: 0 })),
  });
  return collector.result();
};

/**
 * Reads what the items name (external id and email markers, then the customers, their timelines
 * and live markers), sorts out the items that cannot be created, folds the rest into one unit per
 * customer and allocates ids. Called for the whole batch, and again for one unit whose
 * transaction lost a race.
 */
const prepare = async (scope: Scope, items: Item[], collector: Collector, at: string) => {
  const { merchantId } = scope;
  const emails = [...new Set(items.flatMap((i) => (i.input.customer_id ? [] : [i.input.customer_email!])))];
  const found = await batchGet([
    ...items.map((i) => keys.subscriptionExternalId(merchantId, i.input.external_id)),
    ...emails.map((e) => keys.customerEmail(merchantId, e)),
  ]);
  const byEmail = new Map<string, number>();
  for (const e of emails) {
    const marker = found.get(keyId(keys.customerEmail(merchantId, e)));
    if (marker) byEmail.set(e, Number(marker.customer_id));
  }
  const newEmails = emails.filter((e) => !byEmail.has(e));
  const known = [...new Set([...items.flatMap((i) => (i.input.customer_id ? [i.input.customer_id] : [])), ...byEmail.values()])];
  const state = await batchGet<Record<string, unknown>>(
    known.flatMap((id) => [keys.customer(merchantId, id), keys.customerTimeline(merchantId, id), keys.liveSubscription(merchantId, id)]),
  );

  // Sort the items: skipped (external id taken), failed (customer, live slot, currency), kept.
  const taken = new Set<string>();
  const live = new Set(known.filter((id) => state.has(keyId(keys.liveSubscription(merchantId, id)))).map(String));
  const kept: { item: Item; customer: number | string; cancelled: boolean }[] = [];
  for (const item of items) {
    const { index, input } = item;
    const fail = (message: string) => collector.failed(index, 'validation_error', message, input.external_id);
    if (taken.has(input.external_id) || found.has(keyId(keys.subscriptionExternalId(merchantId, input.external_id)))) {
      collector.skipped(index, DUPLICATE_EXTERNAL_ID, input.external_id);
      continue;
    }
    const currency = input.currency ?? scope.reportingCurrency;
    const mismatch = amountCurrencyError(input.mrr, currency, 'mrr');
    if (mismatch) {
      fail(mismatch);
      continue;
    }
    let customer: number | string;
    if (input.customer_id) {
      const c = state.get(keyId(keys.customer(merchantId, input.customer_id)));
      if (!c || c.deleted_at) {
        fail(CUSTOMER_INVALID);
        continue;
      }
      customer = input.customer_id;
    } else {
      customer = byEmail.get(input.customer_email!) ?? input.customer_email!;
    }
    const cancelled = Boolean(input.cancelled_at);
    if (!cancelled && live.has(String(customer))) {
      fail(LIVE_TAKEN);
      continue;
    }
    if (!cancelled) live.add(String(customer));
    taken.add(input.external_id);
    kept.push({ item, customer, cancelled });
  }

  const newCustomers = newEmails.filter((e) => kept.some((k) => k.customer === e));
  const ids = await allocateIds(merchantId, {
    subscription: kept.length,
    // Its own events, then a block it holds for its next changes (as a subscription created one by one does).
    subscription_event: kept.reduce((n, k) => n + (k.cancelled ? 2 : 1) + EVENT_ID_BLOCK, 0),
    customer: newCustomers.length,
  });
  let nextSub = ids.subscription ?? 0;
  let nextEvent = ids.subscription_event ?? 0;
  let nextCustomer = ids.customer ?? 0;
  const newIdOf = new Map(newCustomers.map((e) => [e, nextCustomer++]));

  const units: Unit[] = [];
  for (const { item, customer, cancelled } of kept) {
    const { input, index } = item;
    const customerId = typeof customer === 'number' ? customer : newIdOf.get(customer)!;
    // A new customer is named by the first item naming its email.
    const namedBy = typeof customer === 'string' ? kept.find((k) => k.customer === customer)!.item.input.customer_name : null;
    const create = typeof customer === 'string' ? { email: customer, name: namedBy ?? null } : null;
    const startedAt = input.started_at ?? at;
    const id = nextSub++;
    const sub: SubscriptionItem = {
      ...keys.subscription(merchantId, id),
      id,
      customer_id: customerId,
      external_id: input.external_id,
      status: cancelled ? 'cancelled' : 'active',
      plan_name: input.plan_name,
      mrr: input.mrr,
      currency: input.currency ?? scope.reportingCurrency,
      billing_cycle: input.billing_cycle,
      source: 'import',
      started_at: startedAt,
      current_period_start: input.current_period_start ?? startedAt,
      cancelled_at: input.cancelled_at ?? null,
      paused_at: null,
      cancel_reason: cancelled ? (input.cancel_reason ?? null) : null,
      created_at: at,
      updated_at: at,
      changed_at: input.cancelled_at ?? startedAt,
      version: 1,
    };
    const eventIds = cancelled ? [nextEvent++, nextEvent++] : [nextEvent++];
    // The held block: a later change takes its event's id from it, without allocating.
    sub.event_ids_next = nextEvent;
    sub.event_ids_end = nextEvent + EVENT_ID_BLOCK;
    nextEvent += EVENT_ID_BLOCK;
    units.push({ index, customerId, create, sub, eventIds });
  }

  const timelines = await timelinesFrom(merchantId, state, known);
  const created = new Set<number>();
  // The exchange rates the batch's transactions convert with, read once for all of them.
  const rates: SettingsMemo = new Map();
  return {
    units,
    write: async (ws: WriteSet, chunk: Unit[]) => {
      const changed = new Map<number, Timeline>();
      for (const unit of chunk) {
        const { customerId } = unit;
        if (!changed.has(customerId)) {
          // The customer, once per transaction: created by the first unit that commits, else still live.
          if (unit.create && !created.has(customerId)) addCustomerCreate(ws, scope.merchantId, customerId, unit.create, at);
          else requireLiveCustomer(ws, scope.merchantId, customerId);
        }
        changed.set(
          customerId,
          writeSubscription(
            ws,
            scope,
            unit.sub,
            unit.eventIds,
            changed.get(customerId) ?? (timelines.get(customerId) ?? EMPTY_TIMELINE).timeline,
            at,
          ),
        );
      }
      // One timeline write per customer per transaction, whatever the number of its subscriptions.
      const after: [number, TimelineState][] = [];
      for (const [id, tl] of changed)
        after.push([id, await addTimelineChange(ws, scope.merchantId, scope, id, timelines.get(id) ?? EMPTY_TIMELINE, tl, rates)]);
      return () => {
        for (const [id, timeline] of after) {
          timelines.set(id, timeline);
          created.add(id);
        }
        for (const u of chunk) collector.created(u.index, u.sub.id, u.sub.external_id!);
      };
    },
    alone: async (unit: Unit) => {
      // Sorted again from fresh reads into a scratch collector, kept only once the unit commits (an attempt may be retried).
      const scratch = batchCollector(0);
      const fresh = await prepare(scope, [items.find((i) => i.index === unit.index)!], scratch, at);
      const ws = new WriteSet();
      const done = await fresh.write(ws, fresh.units);
      // A marker taken since the read (a concurrent import) fails a condition: the retry sorts the items again.
      await commitUnit(ws, scope.merchantId);
      done();
      const { results } = scratch.result();
      for (const r of results.skipped) collector.skipped(r.index, r.reason, r.identifier);
      for (const r of results.failed) collector.failed(r.index, r.reason, r.message, r.identifier);
      for (const r of results.created) collector.created(r.index, r.id, r.identifier);
    },
    failed: (unit: Unit, err: unknown) => {
      const [reason, message] = batchFailure(err, 'subscription');
      collector.failed(unit.index, reason, message, unit.sub.external_id!);
    },
  };
};

/** The writes of one imported subscription; returns its customer's timeline with its line added. */
const writeSubscription = (
  ws: WriteSet,
  scope: Scope,
  sub: SubscriptionItem,
  eventIds: number[],
  before: Timeline,
  at: string,
): Timeline => {
  const { merchantId } = scope;
  const started: SubscriptionItem = { ...sub, status: 'active', cancelled_at: null, cancel_reason: null };
  ws.put(
    'external_id',
    { ...keys.subscriptionExternalId(merchantId, sub.external_id!), subscription_id: sub.id, customer_id: sub.customer_id },
    itemAbsent,
  );
  ws.put('subscription', { ...sub, ...subscriptionIndexAttributes(merchantId, sub) }, itemAbsent);
  if (sub.status === 'active') {
    ws.put(
      'live',
      { ...keys.liveSubscription(merchantId, sub.customer_id), subscription_id: sub.id, customer_id: sub.customer_id },
      itemAbsent,
    );
  }
  moveTotals(ws, merchantId, null, sub);
  addChangeEvent(ws, merchantId, eventIds[0], sub, createdEvent(sub), at, 'import');
  let timeline = subscriptionTimeline(before, null, started, sub.started_at, scope.reportingCurrency);
  if (sub.cancelled_at) {
    addChangeEvent(ws, merchantId, eventIds[1], sub, cancelEvent(sub, sub.cancelled_at), at, 'import');
    timeline = subscriptionTimeline(timeline, started, sub, sub.cancelled_at, scope.reportingCurrency);
  }
  return timeline;
};
