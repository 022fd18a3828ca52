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
import { creationSteps, newSubscription, type Step } from '#lib/subscriptions/rules';
import { addChangeEvent, LIVE_TAKEN, moveTotals, stepsTimeline, withSchedule, type Scope } from '#lib/subscriptions/service';
import { subscriptionIndexAttributes } from '#lib/subscriptions/store';
import { addOutboxEvent, TRIAL_EVENT } from '#lib/outbox/store';

/**
 * POST /subscriptions/batch: imported subscriptions, created in array order through the batch
 * engine. Each item creates a subscription (source `import`) with its `created` event at
 * started_at and, when cancelled_at is given, its `cancel` event there; no webhooks (a trial still
 * running records the internal event that arms its conversion). Items of one
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
  /** Its history as imported (created, converted, cancelled: `creationSteps`), one event each. */
  steps: Step[];
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
  const kept: { item: Item; customer: number | string; cancelled: boolean; steps: Step[] }[] = [];
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
    if (input.trial_ends_at && input.trial_ends_at <= (input.started_at ?? at)) {
      fail('The trial ends at field must be a date after started at.');
      continue;
    }
    if (!cancelled && live.has(String(customer))) {
      fail(LIVE_TAKEN);
      continue;
    }
    if (!cancelled) live.add(String(customer));
    taken.add(input.external_id);
    kept.push({ item, customer, cancelled, steps: [] });
  }

  const newCustomers = newEmails.filter((e) => kept.some((k) => k.customer === e));
  const ids = await allocateIds(merchantId, {
    subscription: kept.length,
    // Its own events, then a block it holds for its next changes (as a subscription created one by one does).
    subscription_event: kept.reduce((n, k) => n + stepsOf(k.item.input, at).length + EVENT_ID_BLOCK, 0),
    customer: newCustomers.length,
  });
  let nextSub = ids.subscription ?? 0;
  let nextEvent = ids.subscription_event ?? 0;
  let nextCustomer = ids.customer ?? 0;
  const newIdOf = new Map(newCustomers.map((e) => [e, nextCustomer++]));

  const units: Unit[] = [];
  for (const { item, customer } of kept) {
    const { input, index } = item;
    const customerId = typeof customer === 'number' ? customer : newIdOf.get(customer)!;
    // A new customer is named by the first item naming its email.
    const namedBy = typeof customer === 'string' ? kept.find((k) => k.customer === customer)!.item.input.customer_name : null;
    const create = typeof customer === 'string' ? { email: customer, name: namedBy ?? null } : null;
    const startedAt = input.started_at ?? at;
    const id = nextSub++;
    const steps = stepsOf(input, at, {
      ...keys.subscription(merchantId, id),
      id,
      customer_id: customerId,
      currency: input.currency ?? scope.reportingCurrency,
    });
    const sub = { ...steps[steps.length - 1].state };
    const eventIds = steps.map(() => nextEvent++);
    // The held block: a later change takes its event's id from it, without allocating.
    sub.event_ids_next = nextEvent;
    sub.event_ids_end = nextEvent + EVENT_ID_BLOCK;
    nextEvent += EVENT_ID_BLOCK;
    units.push({ index, customerId, create, sub, eventIds, steps });
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
          writeSubscription(ws, scope, unit, changed.get(customerId) ?? (timelines.get(customerId) ?? EMPTY_TIMELINE).timeline, at),
        );
        // A trial still running: an internal bus event arms the scheduler for its conversion (an import sends no webhooks).
        if (unit.sub.status === 'trialing' && unit.sub.trial_ends_at)
          addOutboxEvent(
            ws,
            scope.merchantId,
            TRIAL_EVENT,
            { id: unit.sub.id, status: 'trialing', trial_ends_at: unit.sub.trial_ends_at },
            at,
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

/**
 * An imported subscription's history (`creationSteps`): created at started_at (trialing while a
 * trial runs), converted at trial_ends_at once that has come, cancelled at cancelled_at.
 */
const stepsOf = (
  input: SubscriptionBatchInput,
  at: string,
  ids: Pick<SubscriptionItem, 'pk' | 'sk' | 'id' | 'customer_id' | 'currency'> = PLACEHOLDER,
) => {
  return creationSteps(
    newSubscription(
      {
        ...ids,
        external_id: input.external_id,
        plan_name: input.plan_name,
        mrr: input.mrr,
        billing_cycle: input.billing_cycle,
        source: 'import',
        started_at: input.started_at,
        current_period_start: input.current_period_start,
        trial_ends_at: input.trial_ends_at,
      },
      at,
    ),
    at,
    input.cancelled_at ? { at: input.cancelled_at, reason: input.cancel_reason ?? null } : undefined,
  );
};
/** Ids for counting an item's steps before it has any. */
const PLACEHOLDER = { pk: '', sk: '', id: 0, customer_id: 0 };

/** The writes of one imported subscription; returns its customer's timeline with its line added. */
const writeSubscription = (ws: WriteSet, scope: Scope, { sub, eventIds, steps }: Unit, before: Timeline, at: string): Timeline => {
  const { merchantId } = scope;
  ws.put(
    'external_id',
    { ...keys.subscriptionExternalId(merchantId, sub.external_id!), subscription_id: sub.id, customer_id: sub.customer_id },
    itemAbsent,
  );
  ws.put('subscription', { ...sub, ...subscriptionIndexAttributes(merchantId, sub) }, itemAbsent);
  if (sub.status !== 'cancelled') {
    ws.put(
      'live',
      { ...keys.liveSubscription(merchantId, sub.customer_id), subscription_id: sub.id, customer_id: sub.customer_id },
      itemAbsent,
    );
  }
  moveTotals(ws, merchantId, null, sub);
  steps.forEach((step, i) => addChangeEvent(ws, merchantId, eventIds[i], sub, step.event, at, 'import'));
  return withSchedule(stepsTimeline(before, steps, scope.reportingCurrency), sub, scope);
};
