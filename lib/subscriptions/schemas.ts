import * as z from 'zod';
import { batchItems } from '#lib/shared/schemas';
import {
  amount,
  currency,
  dateBound,
  email,
  idParam,
  wellFormedText,
  pageQuery,
  pastTimestamp,
  pathId,
  positiveAmountDocument,
  timestamp,
  plainText,
} from '#lib/shared/fields';
import { Decimal } from '#lib/shared/money';

export const SUBSCRIPTION_STATUSES = ['trialing', 'active', 'past_due', 'paused', 'cancelled'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];
export const SUBSCRIPTION_CYCLES = ['monthly', 'quarterly', 'semi-annual', 'yearly'] as const;
/** The event types a merchant may record (POST /subscriptions/events): each moves the MRR. */
export const RECORDED_EVENT_TYPES = ['created', 'upgrade', 'downgrade', 'cancel', 'reactivated'] as const;
export type RecordedEventType = (typeof RECORDED_EVENT_TYPES)[number];
/** Every event type a subscription's own changes record (trials and failed renewals add theirs). */
export const EVENT_TYPES = [...RECORDED_EVENT_TYPES, 'trial_converted', 'trial_cancelled', 'past_due', 'recovered'] as const;
export type SubscriptionEventType = (typeof EVENT_TYPES)[number];
export const SUBSCRIPTION_SOURCES = ['api', 'import'] as const;

/** A positive integer id in a JSON body (a safe integer). */
const bodyId = () => z.int({ error: 'The :field field must be an integer.' }).min(1).max(Number.MAX_SAFE_INTEGER);
const plan = () => wellFormedText(1, 255);
const reasonText = () => wellFormedText(0, 255);
/** A subscription's MRR is above zero: pause and cancel are what take it to zero. */
const mrr = () =>
  amount()
    .refine((v) => new Decimal(v).gt(0), { message: 'The :field field must be greater than 0.' })
    .meta({ description: 'Monthly recurring revenue, above 0 (pause or cancel take it to 0)', override: positiveAmountDocument() });

/** A trial's end: the subscription is `trialing` (no MRR) until then and converts on its own then. */
const trialEndsAt = () =>
  timestamp().nullish().meta({
    description: 'A trial: the subscription is trialing (counting in no figure) until this time, after started_at, and then converts',
  });
/** `trial_ends_at` is after `started_at` (when both are given; a default start is checked by the rules). */
const trialAfterStart = (s: { started_at?: string | null; trial_ends_at?: string | null }, ctx: z.RefinementCtx) => {
  if (s.trial_ends_at && s.started_at && s.trial_ends_at <= s.started_at)
    ctx.addIssue({ code: 'custom', path: ['trial_ends_at'], message: 'The trial ends at field must be a date after started at.' });
};

/** POST /subscriptions (docs/subscriptions.md). */
export const subscriptionCreateBody = z
  .object({
    customer_id: bodyId(),
    plan_name: plan(),
    mrr: mrr(),
    billing_cycle: z.enum(SUBSCRIPTION_CYCLES),
    started_at: timestamp().nullish(),
    current_period_start: timestamp().nullish(),
    trial_ends_at: trialEndsAt(),
  })
  .superRefine(trialAfterStart);
export type SubscriptionCreate = z.output<typeof subscriptionCreateBody>;

/** PUT /subscriptions/{id}: the given fields change. */
export const subscriptionUpdateBody = z.object({
  plan_name: plan().nullish(),
  mrr: mrr().nullish(),
  current_period_start: timestamp().nullish(),
  effective_at: pastTimestamp()
    .nullish()
    .meta({ description: 'When the change takes effect (default now); not before the start or the latest change' }),
  cancel_at: timestamp()
    .nullable()
    .optional()
    .meta({ description: 'Schedules the cancellation at this future time; null clears a schedule' }),
  trial_ends_at: timestamp().nullish().meta({ description: 'While trialing: moves the end of the trial (a future time)' }),
});
export type SubscriptionUpdate = z.output<typeof subscriptionUpdateBody>;

export const subscriptionCancelBody = z.object({
  cancelled_at: timestamp().nullish().meta({ description: 'Default now; a future time schedules the cancellation (`cancel_at`)' }),
  reason: reasonText().nullish(),
});
export type SubscriptionCancel = z.output<typeof subscriptionCancelBody>;

/** Pause and reactivate take their effective time (default now); unknown fields are ignored. */
export const subscriptionPauseBody = z.object({
  paused_at: pastTimestamp()
    .nullish()
    .meta({ description: 'When the pause takes effect (default now); not before the start or the latest change' }),
});
export type SubscriptionPause = z.output<typeof subscriptionPauseBody>;
export const subscriptionReactivateBody = z.object({
  reactivated_at: pastTimestamp()
    .nullish()
    .meta({ description: 'When the subscription is active again (default now); not before the start or the latest change' }),
});
export type SubscriptionReactivate = z.output<typeof subscriptionReactivateBody>;

/** PUT /subscriptions/{id}/past-due: a renewal failed (from active). */
export const subscriptionPastDueBody = z.object({
  failed_at: pastTimestamp()
    .nullish()
    .meta({ description: 'When the renewal failed (default now); not before the start or the latest change' }),
});
export type SubscriptionPastDue = z.output<typeof subscriptionPastDueBody>;
/** PUT /subscriptions/{id}/recover: the failed renewal was paid (from past_due). */
export const subscriptionRecoverBody = z.object({
  recovered_at: pastTimestamp().nullish().meta({ description: 'When the payment was recovered (default now); not before the failure' }),
});
export type SubscriptionRecover = z.output<typeof subscriptionRecoverBody>;

export const subscriptionPathParams = z.object({ id: pathId('Subscription id') });

export const subscriptionListQuery = z.object({
  ...pageQuery,
  customer_id: idParam().optional().meta({ description: "Only this customer's subscriptions" }),
  status: z
    .enum(SUBSCRIPTION_STATUSES)
    .optional()
    .meta({ description: 'Only subscriptions in this status (as stored; a due scheduled cancellation is applied within a minute)' }),
  plan_name: z.string().min(1).max(255).optional().meta({ description: 'Only subscriptions of this plan (exact name)' }),
});
export type SubscriptionListQuery = z.output<typeof subscriptionListQuery>;

export const subscriptionEventListQuery = z
  .object({
    ...pageQuery,
    customer_id: idParam().optional().meta({ description: "Only this customer's events" }),
    subscription_id: idParam().optional().meta({ description: "Only this subscription's events" }),
    event_type: z.enum(EVENT_TYPES).optional().meta({ description: 'Only events of this type' }),
    start_date: dateBound(false).optional(),
    end_date: dateBound(true).optional(),
  })
  .refine((q) => !q.start_date || !q.end_date || q.start_date <= q.end_date, {
    path: ['end_date'],
    message: 'The :field field must be a date after or equal to the start date.',
  });
export type SubscriptionEventListQuery = z.output<typeof subscriptionEventListQuery>;

/** What each recorded event type says of its amounts; the 422 on `event_type` quotes the rule. */
export const EVENT_AMOUNT_RULES: Record<RecordedEventType, { rule: string; holds: (oldAmount: Decimal, newAmount: Decimal) => boolean }> = {
  created: { rule: 'old amount 0 and new amount above 0', holds: (o, n) => o.isZero() && n.gt(0) },
  upgrade: { rule: 'new amount greater than old amount', holds: (o, n) => n.gt(o) },
  downgrade: { rule: 'new amount above 0 and less than old amount', holds: (o, n) => n.gt(0) && n.lt(o) },
  cancel: { rule: 'old amount above 0 and new amount 0', holds: (o, n) => o.gt(0) && n.isZero() },
  reactivated: { rule: 'old amount 0 and new amount above 0', holds: (o, n) => o.isZero() && n.gt(0) },
};

/** A merchant's own id for a subscription (imports): unique per merchant. */
/** Part of a key: well-formed, so two ids never meet in one key (docs/subscriptions.md). */
const externalId = () => wellFormedText(1, 255);

/** POST /subscriptions/batch item: one imported subscription, cancelled when cancelled_at is given. */
export const subscriptionBatchItem = z
  .object({
    external_id: externalId(),
    customer_id: bodyId().nullish(),
    customer_email: email().nullish(),
    customer_name: plainText(255).nullish(),
    plan_name: plan(),
    mrr: mrr(),
    billing_cycle: z.enum(SUBSCRIPTION_CYCLES),
    currency: currency().nullish(),
    started_at: pastTimestamp().nullish(),
    current_period_start: timestamp().nullish(),
    cancelled_at: pastTimestamp().nullish(),
    cancel_reason: reasonText().nullish(),
    trial_ends_at: trialEndsAt(),
  })
  .superRefine((s, ctx) => {
    trialAfterStart(s, ctx);
    if (!s.customer_id && !s.customer_email) {
      ctx.addIssue({
        code: 'custom',
        path: ['customer_id'],
        message: 'The customer id field is required when customer email is not present.',
      });
    }
    if (s.cancelled_at && s.started_at && s.cancelled_at < s.started_at) {
      ctx.addIssue({
        code: 'custom',
        path: ['cancelled_at'],
        message: 'The cancelled at field must be a date after or equal to started at.',
      });
    }
  });
export type SubscriptionBatchInput = z.output<typeof subscriptionBatchItem>;
export const subscriptionBatchBody = z.object({ subscriptions: batchItems('SubscriptionBatchItem') });

/**
 * A recorded event: POST /subscriptions/events (customer_id required), or a batch item, which may
 * leave customer_id out when subscription_external_id names the subscription (its customer then).
 */
const recordedEvent = (customerRequired: boolean) =>
  z
    .object({
      customer_id: customerRequired
        ? bodyId()
        : bodyId().nullish().meta({
            description: "Required unless subscription_external_id names the subscription (its customer is then the subscription's)",
          }),
      subscription_id: bodyId().nullish(),
      subscription_external_id: externalId().nullish(),
      event_type: z.enum(RECORDED_EVENT_TYPES),
      old_amount: amount(),
      new_amount: amount(),
      old_plan: plan().nullish(),
      new_plan: plan().nullish(),
      occurred_at: pastTimestamp().nullish(),
    })
    .superRefine((e, ctx) => {
      const { rule, holds } = EVENT_AMOUNT_RULES[e.event_type];
      if (!holds(new Decimal(e.old_amount), new Decimal(e.new_amount))) {
        ctx.addIssue({ code: 'custom', path: ['event_type'], message: `The ${e.event_type} event type needs ${rule}.` });
      }
      if (!customerRequired && e.customer_id == null && !e.subscription_external_id) {
        ctx.addIssue({
          code: 'custom',
          path: ['customer_id'],
          message: 'The customer id field is required when subscription external id is not present.',
        });
      }
      if (e.subscription_id && e.subscription_external_id) {
        ctx.addIssue({
          code: 'custom',
          path: ['subscription_external_id'],
          message: 'The subscription external id field must not be present when subscription id is present.',
        });
      }
    });
/** POST /subscriptions/events/batch item. */
export const subscriptionEventBatchItem = recordedEvent(false);
export type SubscriptionEventBatchInput = z.output<typeof subscriptionEventBatchItem>;
/** POST /subscriptions/events: one recorded event. */
export const subscriptionEventCreateBody = recordedEvent(true);
export type SubscriptionEventCreate = SubscriptionEventBatchInput;
export const subscriptionEventBatchBody = z.object({ events: batchItems('SubscriptionEventBatchItem') });

export const subscriptionSchema = z
  .object({
    id: z.int(),
    customer_id: z.int(),
    external_id: z.string().nullable().meta({ description: "The merchant's own id (set by imports), null when none" }),
    status: z.enum(SUBSCRIPTION_STATUSES),
    plan_name: z.string(),
    mrr: z.string().meta({ example: '990.00' }),
    currency: z.string().meta({ description: 'ISO 4217; figures count only subscriptions in the reporting currency', example: 'TWD' }),
    billing_cycle: z.enum(SUBSCRIPTION_CYCLES),
    source: z.enum(SUBSCRIPTION_SOURCES),
    started_at: z.string(),
    current_period_start: z.string(),
    cancelled_at: z.string().nullable(),
    cancel_at: z
      .string()
      .nullable()
      .meta({ description: 'A scheduled cancellation (a future cancelled_at): counted until then, cancelled from then' }),
    paused_at: z.string().nullable(),
    cancel_reason: z.string().nullable(),
    trial_ends_at: z
      .string()
      .nullable()
      .meta({ description: 'The end of its trial (null: none): trialing until then, counting from then' }),
    failed_at: z.string().nullable().meta({ description: 'While past due: when the renewal failed' }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Subscription' });

/** A subscription as GET /subscriptions lists it: with its customer's email and name (deleted customers' too), as orders are. */
export const subscriptionListItemSchema = subscriptionSchema
  .extend({
    customer_email: z.string().nullable().meta({ description: "The customer's email (a deleted customer's too)" }),
    customer_name: z.string().nullable().meta({ description: "The customer's name; null when it has none" }),
  })
  .meta({ id: 'SubscriptionListItem' });

export const subscriptionEventSchema = z
  .object({
    id: z.int(),
    customer_id: z.int(),
    subscription_id: z.int().nullable(),
    event_type: z.enum(EVENT_TYPES),
    source: z.enum(SUBSCRIPTION_SOURCES),
    old_amount: z.string(),
    new_amount: z.string(),
    amount_change: z.string().meta({ example: '-100.00' }),
    old_plan: z.string().nullable(),
    new_plan: z.string().nullable(),
    occurred_at: z.string(),
    created_at: z.string(),
  })
  .meta({ id: 'SubscriptionEvent' });
