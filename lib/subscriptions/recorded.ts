import {
  addTimelineChange,
  importedLineEnd,
  recordedLine,
  setAt,
  type SettingsMemo,
  type Tag,
  type Timeline,
  timelinesFrom,
  type TimelineState,
} from '#lib/metrics';
import { NO_SOURCE, openBatchActivity, sourceOf } from '#lib/activity/store';
import Decimal from 'decimal.js';
import { now } from '#lib/clock';
import { batchGet, keyId } from '#lib/db/batch-get';
import { batchFailure, commitUnit, runBatch } from '#lib/db/batch';
import { keys } from '#lib/db/keys';
import { retrying } from '#lib/db/retry';
import { allocateIds } from '#lib/db/sequences';
import { versionIs, WriteSet } from '#lib/db/writes';
import { InvalidError } from '#lib/errors';
import { requireLiveCustomer } from '#lib/customers/figures';
import { batchCollector, type BatchResult } from '#lib/shared/schemas';
import { IDEMPOTENCY_TTL_SECONDS, isLive, type IdempotencyRecord } from '#lib/db/idempotency';
import { formatTimestamp } from '#lib/shared/time';
import { issueMessage } from '#lib/shared/validation';
import { addSubscriptionEvent, CUSTOMER_INVALID, importedAfterSubscription, SUBSCRIPTION_INVALID } from '#lib/subscriptions/events';
import { presentSubscriptionEvent, type SubscriptionEventItem, type SubscriptionItem } from '#lib/subscriptions/model';
import { dueChange, latestChangeAt } from '#lib/subscriptions/effective';
import { subscriptionEventBatchItem, type SubscriptionEventBatchInput } from '#lib/subscriptions/schemas';
import { delinquencyOf, type Scope, settleDueChanges, withSchedule } from '#lib/subscriptions/service';

/**
 * Recorded subscription events (history imported from elsewhere, source `import`), one or a batch:
 * each sets its line (the named subscription, or the customer's imported line) to new_amount from
 * occurred_at on. Events of one customer form one unit applied in array order, so a customer's
 * history is rewritten once per transaction, not once per event. Everything an item needs is read
 * in one round (markers, subscriptions, customers, timelines, all by key); the transaction guards
 * what was read (customer live, subscription the customer's and not deleted, timeline version).
 */
type Item = { index: number; input: SubscriptionEventBatchInput };

/** Where outcomes go: the batch result, or the single endpoint's 201 / 422. */
type Report = {
  skipped: (index: number, reason: string, identifier: string) => void;
  failed: (index: number, field: string, message: string, identifier: string) => void;
  recorded: (index: number, event: SubscriptionEventItem, identifier: string) => void;
};

/** One recorded event: units of one customer in one transaction share one timeline write. */
type Unit = { customerId: number; index: number; identifier: string; tag: Tag; event: Parameters<typeof addSubscriptionEvent>[2] };

export const EXTERNAL_ID_INVALID = 'The selected subscription external id is invalid.';

/** Under an idempotency key, an item already applied by an earlier attempt of the batch is skipped, not recorded twice. */
export const ALREADY_RECORDED = 'already_recorded';

const prepare = async (scope: Scope, items: Item[], report: Report, at: string, idempotencyKey?: string) => {
  // Read again once due changes were applied (a second pass finds none left to apply).
  const prepared = await prepareOnce(scope, items, report, at, idempotencyKey, true);
  return prepared ?? (await prepareOnce(scope, items, report, at, idempotencyKey, false))!;
};

const prepareOnce = async (
  scope: Scope,
  items: Item[],
  report: Report,
  at: string,
  idempotencyKey: string | undefined,
  settle: boolean,
) => {
  const { merchantId } = scope;
  const externalKey = (i: Item) => keys.subscriptionExternalId(merchantId, i.input.subscription_external_id!);
  const customerKeys = (id: number) => [keys.customer(merchantId, id), keys.customerTimeline(merchantId, id)];
  const found = await batchGet<Record<string, unknown>>([
    ...(idempotencyKey ? items.map((i) => keys.idempotentItem(merchantId, idempotencyKey, i.index)) : []),
    ...items.flatMap((i) => (i.input.subscription_external_id ? [externalKey(i)] : [])),
    ...items.flatMap((i) => (i.input.subscription_id ? [keys.subscription(merchantId, i.input.subscription_id)] : [])),
    ...items.flatMap((i) => (i.input.customer_id ? customerKeys(i.input.customer_id) : [])),
  ]);
  // Without customer_id the customer is the named subscription's (its external id marker says which): read in a second round.
  const customerOf = (i: Item): number | undefined =>
    i.input.customer_id ?? (found.has(keyId(externalKey(i))) ? Number(found.get(keyId(externalKey(i)))!.customer_id) : undefined);
  const unread = [...new Set(items.flatMap((i) => (i.input.customer_id ? [] : (customerOf(i) ?? [])) as number[]))].filter(
    (id) => !found.has(keyId(keys.customerTimeline(merchantId, id))) && !found.has(keyId(keys.customer(merchantId, id))),
  );
  // A subscription named by external id is read with them: its plan, cycle and currency tag the event's point.
  const subscriptionOf = (i: Item): number | undefined =>
    i.input.subscription_id ?? (found.has(keyId(externalKey(i))) ? Number(found.get(keyId(externalKey(i)))!.subscription_id) : undefined);
  const unreadSubs = [
    ...new Set(items.flatMap((i) => (i.input.subscription_external_id ? (subscriptionOf(i) ?? []) : []) as number[])),
  ].filter((id) => !found.has(keyId(keys.subscription(merchantId, id))));
  if (unread.length || unreadSubs.length) {
    const more = await batchGet<Record<string, unknown>>([
      ...unread.flatMap(customerKeys),
      ...unreadSubs.map((id) => keys.subscription(merchantId, id)),
    ]);
    for (const [k, v] of more) found.set(k, v);
  }
  // A named subscription with a change due (a trial's conversion, a scheduled or delinquent cancellation the
  // scheduler has not applied yet) has it applied first, as any change does, and everything is read again.
  const due = [...found.values()].filter(
    (v) => v.sk === 'SUB' && !v.deleted_at && dueChange(v as unknown as SubscriptionItem, at, delinquencyOf(scope)),
  );
  if (settle && due.length) {
    for (const sub of due) await settleDueChanges(scope, Number(sub.id));
    return null;
  }
  const timelines: Map<number, TimelineState> = await timelinesFrom(
    merchantId,
    found,
    items.flatMap((i) => customerOf(i) ?? []),
  );
  // Each customer's timeline as the kept items leave it, in array order (the imported line's end moves with it).
  const planned = new Map<number, Timeline>();
  const kept: { item: Item; subscriptionId: number | null; identifier: string; tag: Tag }[] = [];
  for (const item of items) {
    const { index } = item;
    const customerId = customerOf(item);
    // From here on the item names its customer (given, or its subscription's).
    const input = { ...item.input, customer_id: customerId ?? 0 };
    let subscriptionId: number | null = null;
    let identifier = input.subscription_external_id ?? String(input.customer_id);
    const fail = (field: string, message: string) => report.failed(index, field, message, identifier);
    if (
      idempotencyKey &&
      isLive(found.get(keyId(keys.idempotentItem(merchantId, idempotencyKey, index))) as IdempotencyRecord | undefined)
    ) {
      report.skipped(index, ALREADY_RECORDED, identifier);
      continue;
    }
    if (customerId === undefined) {
      fail('subscription_external_id', EXTERNAL_ID_INVALID);
      continue;
    }
    const customer = found.get(keyId(keys.customer(merchantId, input.customer_id)));
    if (!customer || customer.deleted_at) {
      fail('customer_id', CUSTOMER_INVALID);
      continue;
    }
    if (input.subscription_external_id) {
      identifier = input.subscription_external_id;
      const marker = found.get(keyId(keys.subscriptionExternalId(merchantId, input.subscription_external_id)));
      if (!marker || Number(marker.customer_id) !== input.customer_id) {
        fail('subscription_external_id', EXTERNAL_ID_INVALID);
        continue;
      }
      subscriptionId = Number(marker.subscription_id);
    } else if (input.subscription_id) {
      const sub = found.get(keyId(keys.subscription(merchantId, input.subscription_id)));
      if (sub?.external_id) identifier = String(sub.external_id);
      if (!sub || sub.deleted_at || Number(sub.customer_id) !== input.customer_id) {
        fail('subscription_id', SUBSCRIPTION_INVALID);
        continue;
      }
      subscriptionId = input.subscription_id;
    }
    const timeline = planned.get(input.customer_id) ?? timelines.get(input.customer_id)!.timeline;
    const occurredAt = input.occurred_at ?? at;
    // A trial counts nothing until it converts: no recorded change of its amount before then.
    const trialEnd = subscriptionId ? found.get(keyId(keys.subscription(merchantId, subscriptionId)))?.trial_ends_at : null;
    if (typeof trialEnd === 'string' && occurredAt < trialEnd) {
      fail('occurred_at', `The occurred at field must be a date after or equal to ${trialEnd}, when the subscription's trial ends.`);
      continue;
    }
    // Without a subscription an event is history from before the customer's first subscription here.
    const importedEnd = importedLineEnd(timeline, scope.reportingCurrency);
    if (!subscriptionId && importedEnd && occurredAt >= importedEnd) {
      fail('subscription_id', importedAfterSubscription(importedEnd));
      continue;
    }
    const tag = recordedTag(
      subscriptionId ? found.get(keyId(keys.subscription(merchantId, subscriptionId))) : undefined,
      input.new_plan ?? null,
      scope.reportingCurrency,
    );
    planned.set(input.customer_id, applyEvent(timeline, subscriptionId, input.new_amount, occurredAt, tag));
    kept.push({ item, subscriptionId, identifier, tag });
  }
  const { subscription_event: first } = await allocateIds(merchantId, { subscription_event: kept.length });
  let next = first ?? 0;
  const units: Unit[] = kept.map(({ item, subscriptionId, identifier, tag }) => {
    const { index } = item;
    const input = { ...item.input, customer_id: customerOf(item)! };
    return {
      customerId: input.customer_id,
      index,
      identifier,
      tag,
      event: {
        id: next++,
        customer_id: input.customer_id,
        subscription_id: subscriptionId,
        event_type: input.event_type,
        source: 'import',
        old_amount: input.old_amount,
        new_amount: input.new_amount,
        old_plan: input.old_plan ?? null,
        new_plan: input.new_plan ?? null,
        occurred_at: input.occurred_at ?? at,
      },
    };
  });
  // The exchange rates the batch's transactions convert with, read once for all of them.
  const rates: SettingsMemo = new Map();
  // The named subscriptions as read (and as each committed chunk left them): what the record shows.
  const subs = new Map<number, SubscriptionItem>();
  for (const u of units) {
    const id = u.event.subscription_id;
    const sub = id ? found.get(keyId(keys.subscription(merchantId, id))) : undefined;
    if (id && sub && !subs.has(id)) subs.set(id, sub as unknown as SubscriptionItem);
  }
  return {
    units,
    write: async (ws: WriteSet, chunk: Unit[]) => {
      const written: [number, SubscriptionEventItem, string][] = [];
      const changed = new Map<number, Timeline>();
      const shown = new Map<number, SubscriptionItem>();
      for (const { customerId, index, identifier, tag, event } of chunk) {
        requireLiveCustomer(ws, merchantId, customerId);
        if (event.subscription_id) {
          ws.update('subscription', keys.subscription(merchantId, event.subscription_id)).when({
            expression: 'customer_id = :c AND attribute_not_exists(deleted_at)',
            values: { ':c': customerId },
          });
          const current = shown.get(event.subscription_id) ?? subs.get(event.subscription_id);
          const present = current && recordShows(current, event);
          if (present) shown.set(event.subscription_id, present);
        }
        written.push([index, addSubscriptionEvent(ws, merchantId, event, at), identifier]);
        if (idempotencyKey) addItemMarker(ws, merchantId, idempotencyKey, index, event.id);
        const before = changed.get(customerId) ?? timelines.get(customerId)!.timeline;
        changed.set(customerId, applyEvent(before, event.subscription_id, event.new_amount, event.occurred_at, tag));
      }
      // The latest change of a subscription shows on its record: mrr and plan_name, as of changed_at.
      for (const [id, present] of shown) {
        const before = subs.get(id)!;
        // What its schedules will move follows its mrr (the forecast).
        const customerId = Number(present.customer_id);
        changed.set(customerId, withSchedule(changed.get(customerId) ?? timelines.get(customerId)!.timeline, present, scope));
        // The customer's current MRR follows its subscriptions' records.
        ws.update('subscription', keys.subscription(merchantId, id))
          .setAll({
            mrr: present.mrr,
            plan_name: present.plan_name,
            changed_at: present.changed_at,
            updated_at: at,
            version: before.version + 1,
          })
          .when(versionIs(before.version));
      }
      // One timeline write per customer per transaction, whatever the number of its events.
      const after: [number, TimelineState][] = [];
      for (const [id, tl] of changed) after.push([id, await addTimelineChange(ws, merchantId, scope, id, timelines.get(id)!, tl, rates)]);
      return () => {
        for (const [id, present] of shown) subs.set(id, { ...present, updated_at: at, version: subs.get(id)!.version + 1 });
        for (const [id, state] of after) timelines.set(id, state);
        for (const [index, event, identifier] of written) report.recorded(index, event, identifier);
      };
    },
  };
};

/**
 * The subscription as its record shows it once `event` is recorded: when the event is (or becomes,
 * history arriving in any order) its latest change and leaves it an amount, its `mrr` and
 * `plan_name` are the event's `new_amount` and `new_plan` (the plan unchanged without one), as of
 * `occurred_at`; null when the record stays as it is (an older event, or one that takes it to 0:
 * its status changes only through pause and cancel).
 */
export const recordShows = (
  sub: SubscriptionItem,
  event: Pick<SubscriptionEventItem, 'occurred_at' | 'new_amount' | 'new_plan'>,
): SubscriptionItem | null => {
  if (event.occurred_at < latestChangeAt(sub) || !new Decimal(event.new_amount).gt(0)) return null;
  return {
    ...sub,
    mrr: new Decimal(event.new_amount).toFixed(2),
    plan_name: event.new_plan ?? sub.plan_name,
    changed_at: event.occurred_at,
  };
};

/** A recorded event's point: its line (the named subscription, or the imported line) is new_amount from occurred_at on. */
const applyEvent = (tl: Timeline, subscriptionId: number | null, newAmount: string, occurredAt: string, tag: Tag) => {
  const amount = new Decimal(newAmount);
  return setAt(tl, recordedLine(subscriptionId), occurredAt, amount, amount.gt(0) ? 'a' : 'c', tag);
};

/**
 * What a recorded event's point counts under in segments: its `new_plan`, else the plan its
 * subscription has when the event is recorded; the subscription's cycle and currency. The imported
 * line is in the reporting currency, with no cycle.
 */
const recordedTag = (sub: Record<string, unknown> | undefined, newPlan: string | null, reportingCurrency: string): Tag =>
  sub
    ? [
        newPlan ?? (sub.plan_name as string | undefined) ?? null,
        (sub.billing_cycle as string | undefined) ?? null,
        (sub.currency as string | undefined) ?? reportingCurrency,
      ]
    : [newPlan, null, reportingCurrency];

/** Marks a batch item applied under its idempotency key (24 hours, like the key). */
const addItemMarker = (ws: WriteSet, merchantId: string, key: string, index: number, eventId: number) =>
  ws.put(
    'item-marker',
    {
      ...keys.idempotentItem(merchantId, key, index),
      event_id: eventId,
      expires_at: Math.floor(now().getTime() / 1000) + IDEMPOTENCY_TTL_SECONDS,
    },
    { expression: 'attribute_not_exists(pk) OR expires_at <= :now', values: { ':now': Math.floor(now().getTime() / 1000) } },
  );

/** A scratch report whose outcomes are kept only once its attempt commits (an attempt may be retried). */
const scratchReport = () => {
  const outcomes: ((into: Report) => void)[] = [];
  return {
    report: {
      skipped: (...a: Parameters<Report['skipped']>) => outcomes.push((r) => r.skipped(...a)),
      failed: (...a: Parameters<Report['failed']>) => outcomes.push((r) => r.failed(...a)),
      recorded: (...a: Parameters<Report['recorded']>) => outcomes.push((r) => r.recorded(...a)),
    } satisfies Report,
    replay: (into: Report) => outcomes.forEach((o) => o(into)),
  };
};

/**
 * One unit's items, read, decided and committed on their own (one attempt); `commit` is a batch's
 * for a unit it redoes alone (settled through a receipt when its answer is lost).
 */
const attempt = async (
  scope: Scope,
  items: Item[],
  into: Report,
  at: string,
  idempotencyKey?: string,
  commit: (ws: WriteSet) => Promise<void> = (ws) => ws.commit(),
) => {
  const scratch = scratchReport();
  const plan = await prepare(scope, items, scratch.report, at, idempotencyKey);
  const ws = new WriteSet();
  const done = await plan.write(ws, plan.units);
  await commit(ws);
  done();
  scratch.replay(into);
};

/** POST /subscriptions/events: one recorded event → 201 with it, or a 422 on the field at fault. */
export const recordSubscriptionEvent = async (scope: Scope, input: SubscriptionEventBatchInput) => {
  let result: SubscriptionEventItem | undefined;
  let refusal: InvalidError | undefined;
  await retrying(() => {
    result = undefined;
    refusal = undefined;
    return attempt(
      scope,
      [{ index: 0, input }],
      {
        skipped: () => undefined, // no idempotency key here
        failed: (_i, field, message) => (refusal = InvalidError.field(field, message)),
        recorded: (_i, event) => (result = event),
      },
      formatTimestamp(now()),
    );
  });
  if (refusal) throw refusal;
  return presentSubscriptionEvent(result!);
};

/** POST /subscriptions/events/batch: up to 100 recorded events, in array order, through the batch engine. */
export const importSubscriptionEvents = async (
  scope: Scope,
  rawItems: unknown[],
  idempotencyKey?: string,
  request?: Parameters<typeof sourceOf>[0],
): Promise<BatchResult> => {
  const source = request ? sourceOf(request) : NO_SOURCE;
  const collector = batchCollector(rawItems.length);
  const report: Report = {
    skipped: (index, reason, identifier) => collector.skipped(index, reason, identifier),
    failed: (index, _field, message, identifier) => collector.failed(index, 'validation_error', message, identifier),
    recorded: (index, event, identifier) => collector.created(index, event.id, identifier),
  };
  const valid: Item[] = [];
  rawItems.forEach((raw, index) => {
    const r = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : null;
    const identifier =
      typeof r?.subscription_external_id === 'string'
        ? r.subscription_external_id
        : typeof r?.customer_id === 'number'
          ? String(r.customer_id)
          : '';
    if (!r) {
      collector.failed(index, 'validation_error', `The events.${index} field must be an object.`, identifier);
      return;
    }
    const parsed = subscriptionEventBatchItem.safeParse(r, { reportInput: true });
    if (!parsed.success) collector.failed(index, 'validation_error', issueMessage(parsed.error.issues[0]), identifier);
    else valid.push({ index, input: parsed.data });
  });
  const at = formatTimestamp(now());
  const [plan, activity] = await Promise.all([
    prepare(scope, valid, report, at, idempotencyKey),
    openBatchActivity(scope.merchantId, 'subscription_events.batch', source, at),
  ]);
  const byIndex = new Map(valid.map((i) => [i.index, i]));
  await runBatch(
    plan.units,
    {
      write: plan.write,
      alone: (unit) => attempt(scope, [byIndex.get(unit.index)!], report, at, idempotencyKey, (ws) => commitUnit(ws, scope.merchantId)),
      failed: (unit, err) => {
        const [reason, message] = batchFailure(err, 'customer');
        collector.failed(unit.index, reason, message, unit.identifier);
      },
    },
    // Each unit of the last transaction records one event.
    { merchantId: scope.merchantId, finish: activity(collector.result, (pending) => ({ created: pending, updated: 0 })) },
  );
  return collector.result();
};
