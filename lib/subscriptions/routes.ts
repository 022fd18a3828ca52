import { subscriptionPauseBody, subscriptionReactivateBody, subscriptionCancelBody, subscriptionCreateBody, subscriptionEventCreateBody, subscriptionBatchBody, subscriptionEventBatchBody, subscriptionEventListQuery, subscriptionEventSchema, subscriptionListQuery, subscriptionPathParams, subscriptionSchema, subscriptionUpdateBody } from '#lib/subscriptions/schemas';
import { defineRoute } from '#lib/http/route';
import { batchAnswer, dataOf, listOf } from '#lib/shared/schemas';
import { errors, dashboardRead, batchHeaders, notFound, invalid } from '#lib/http/route-parts';

/** The subscriptions routes (their handlers import only these; lib/http/routes.ts is the union). */
export const routes = {

  subscriptionsList: defineRoute({
    method: 'GET',
    path: '/subscriptions',
    handler: 'functions/subscriptions/list.ts',
    ability: 'subscriptions:read',
    writes: false,
    csv: true,
    summary: 'List subscriptions, newest first',
    description:
      'Lists subscriptions newest first, optionally by customer, status or plan name. Pages by number or cursor (docs/subscriptions.md).',
    tags: ['subscriptions'],
    request: { query: subscriptionListQuery },
    responses: { 200: { description: 'A page of subscriptions', schema: listOf(subscriptionSchema) }, ...errors, ...invalid },
  }),
  subscriptionsCreate: defineRoute({
    method: 'POST',
    path: '/subscriptions',
    handler: 'functions/subscriptions/create.ts',
    ability: 'subscriptions:write',
    writes: true,
    summary: 'Create a subscription (one active or paused per customer)',
    description:
      'Creates a subscription for a customer, with its plan, MRR (above zero) and billing cycle; it starts at `started_at` (default now, may be in the past). A customer has at most one active or paused subscription. Records a `created` event and moves MRR from its start (docs/subscriptions.md).',
    tags: ['subscriptions'],
    request: { body: subscriptionCreateBody },
    responses: { 201: { description: 'Created, with its `created` event', schema: dataOf(subscriptionSchema) }, ...errors, ...invalid },
  }),
  subscriptionEventsList: defineRoute({
    method: 'GET',
    path: '/subscriptions/events',
    handler: 'functions/subscriptions/events-list.ts',
    ability: 'subscriptions:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'List subscription events, newest first by occurred_at',
    description:
      'Lists subscription events (created, upgrade, downgrade, cancel, reactivated) newest first by occurred_at, then id, optionally by customer, subscription or type (docs/subscriptions.md).',
    tags: ['subscriptions'],
    request: { query: subscriptionEventListQuery },
    responses: { 200: { description: 'A page of subscription events', schema: listOf(subscriptionEventSchema) }, ...errors, ...invalid },
  }),
  subscriptionEventsCreate: defineRoute({
    method: 'POST',
    path: '/subscriptions/events',
    handler: 'functions/subscriptions/events-record.ts',
    ability: 'subscriptions:write',
    writes: true,
    summary: 'Record a historical subscription event (source import)',
    description:
      'Records one event of history that happened before the subscription was here (source `import`). The type must agree with the amounts, and `occurred_at` may not be in the future; the metrics are reclassified from that moment on (docs/importing-history.md).',
    tags: ['subscriptions'],
    request: { body: subscriptionEventCreateBody },
    responses: { 201: { description: 'Recorded', schema: dataOf(subscriptionEventSchema) }, ...errors, ...invalid },
  }),
  subscriptionsBatch: defineRoute({
    method: 'POST',
    path: '/subscriptions/batch',
    handler: 'functions/subscriptions/batch.ts',
    ability: 'subscriptions:write',
    writes: true,
    summary: 'Import up to 100 subscriptions (unique external_id; no webhooks)',
    description:
      'Imports up to 100 subscriptions, each on its own, unique by `external_id`; the answer reports each item. Imports send no webhooks (docs/importing-history.md).',
    tags: ['subscriptions'],
    request: { body: subscriptionBatchBody, headers: batchHeaders },
    responses: { 200: batchAnswer('Batch result; `identifier` is the external_id'), ...errors, ...invalid },
  }),
  subscriptionEventsBatch: defineRoute({
    method: 'POST',
    path: '/subscriptions/events/batch',
    handler: 'functions/subscriptions/events-batch.ts',
    ability: 'subscriptions:write',
    writes: true,
    summary: 'Record up to 100 historical subscription events, in array order',
    description:
      'Records up to 100 historical events, applied in array order, each on its own; the answer reports each item (docs/importing-history.md).',
    tags: ['subscriptions'],
    request: { body: subscriptionEventBatchBody, headers: batchHeaders },
    responses: { 200: batchAnswer("Batch result; `identifier` is the subscription's external id, else the customer id"), ...errors, ...invalid },
  }),
  subscriptionsGet: defineRoute({
    method: 'GET',
    path: '/subscriptions/{id}',
    handler: 'functions/subscriptions/get.ts',
    ability: 'subscriptions:read',
    writes: false,
    summary: 'Get a subscription',
    description:
      'One subscription, with its status as of now (a scheduled cancellation that is due reads as cancelled) (docs/subscriptions.md).',
    tags: ['subscriptions'],
    request: { params: subscriptionPathParams },
    responses: { 200: { description: 'The subscription', schema: dataOf(subscriptionSchema) }, ...errors, ...notFound },
  }),
  subscriptionsUpdate: defineRoute({
    method: 'PUT',
    path: '/subscriptions/{id}',
    handler: 'functions/subscriptions/update.ts',
    ability: 'subscriptions:write',
    writes: true,
    summary: 'Change plan, mrr or period (upgrade / downgrade event when mrr moves)',
    description:
      'Changes plan name, MRR or billing period from `effective_at` (default now; not before the start or the latest change). A change of MRR records an upgrade or downgrade event; `cancel_at: null` clears a scheduled cancellation (docs/subscriptions.md).',
    tags: ['subscriptions'],
    request: { params: subscriptionPathParams, body: subscriptionUpdateBody },
    responses: { 200: { description: 'The subscription', schema: dataOf(subscriptionSchema) }, ...errors, ...notFound, ...invalid },
  }),
  subscriptionsCancel: defineRoute({
    method: 'PUT',
    path: '/subscriptions/{id}/cancel',
    handler: 'functions/subscriptions/cancel.ts',
    ability: 'subscriptions:write',
    writes: true,
    summary: 'Cancel a subscription (cancel event)',
    description:
      'Cancels at `cancelled_at` (default now): its MRR leaves the figures and a cancel event is recorded. A future `cancelled_at` schedules it instead: the subscription keeps counting until then. A body is optional (docs/subscriptions.md).',
    tags: ['subscriptions'],
    request: { params: subscriptionPathParams, body: subscriptionCancelBody },
    responses: { 200: { description: 'The subscription', schema: dataOf(subscriptionSchema) }, ...errors, ...notFound, ...invalid },
  }),
  subscriptionsPause: defineRoute({
    method: 'PUT',
    path: '/subscriptions/{id}/pause',
    handler: 'functions/subscriptions/pause.ts',
    ability: 'subscriptions:write',
    writes: true,
    summary: 'Pause an active subscription (its mrr stops counting)',
    description:
      'Pauses an active subscription at `paused_at` (default now): its MRR stops counting. No event is recorded. A body is optional (docs/subscriptions.md).',
    tags: ['subscriptions'],
    request: { params: subscriptionPathParams, body: subscriptionPauseBody },
    responses: { 200: { description: 'The subscription', schema: dataOf(subscriptionSchema) }, ...errors, ...notFound, ...invalid },
  }),
  subscriptionsReactivate: defineRoute({
    method: 'PUT',
    path: '/subscriptions/{id}/reactivate',
    handler: 'functions/subscriptions/reactivate.ts',
    ability: 'subscriptions:write',
    writes: true,
    summary: 'Reactivate a paused or cancelled subscription (reactivated event)',
    description:
      'Reactivates a paused or cancelled subscription at `reactivated_at` (default now) and records a reactivated event; a scheduled cancellation is cleared. A body is optional (docs/subscriptions.md).',
    tags: ['subscriptions'],
    request: { params: subscriptionPathParams, body: subscriptionReactivateBody },
    responses: { 200: { description: 'The subscription', schema: dataOf(subscriptionSchema) }, ...errors, ...notFound, ...invalid },
  }),
  subscriptionsDelete: defineRoute({
    method: 'DELETE',
    path: '/subscriptions/{id}',
    handler: 'functions/subscriptions/delete.ts',
    ability: 'subscriptions:write',
    writes: true,
    summary: 'Soft-delete a subscription (its events stay)',
    description:
      'Removes a subscription entered by mistake: afterwards every figure equals a recomputation without it (no churn is booked). Its events stay listed (docs/subscriptions.md).',
    tags: ['subscriptions'],
    request: { params: subscriptionPathParams },
    responses: { 204: { description: 'Deleted' }, ...errors, ...notFound },
  }),
};
