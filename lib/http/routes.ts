import * as z from 'zod';
import {
  customerBatchBody,
  customerBatchQuery,
  customerCreateBody,
  customerListQuery,
  customerPathParams,
  customerSchema,
  customerUpdateBody,
} from '#lib/customers/schemas';
import {
  orderBatchBody,
  orderCreateBody,
  orderCreateHeaders,
  orderListQuery,
  orderPatchBody,
  orderPathParams,
  orderSchema,
  orderStatsQuery,
  orderStatsSchema,
} from '#lib/orders/schemas';
import {
  subscriptionPauseBody,
  subscriptionReactivateBody,
  subscriptionCancelBody,
  subscriptionCreateBody,
  subscriptionEventCreateBody,
  subscriptionBatchBody,
  subscriptionEventBatchBody,
  subscriptionEventListQuery,
  subscriptionEventSchema,
  subscriptionListQuery,
  subscriptionPathParams,
  subscriptionSchema,
  subscriptionUpdateBody,
} from '#lib/subscriptions/schemas';
import {
  webhookEndpointCreateBody,
  webhookEndpointListQuery,
  webhookEndpointPathParams,
  webhookEndpointSchema,
  webhookEndpointUpdateBody,
  webhookEndpointWithSecretSchema,
  webhookDeliveriesListQuery,
  webhookDeliveriesPathParams,
  webhookDeliveryRetryPathParams,
  webhookDeliverySchema,
} from '#lib/webhooks/schemas';
import { apiTokenIssuedSchema, apiTokenSchema, backofficeSessionSchema } from '#lib/merchants/schemas';
import { DELIVERY_FUNCTION_TIMEOUT_SECONDS } from '#lib/webhooks/schedule';
import { cohortSchema, cohortsQuery, metricsSummarySchema, mrrQuery, mrrSeriesSchema } from '#lib/metrics/schemas';
import { activityEntrySchema, activityListQuery, activityPathParams, importRunHeaders } from '#lib/activity/schemas';
import { defineRoute, type RouteDef } from '#lib/http/route';
import { batchAnswer, batchResultSchema, dataOf, idempotencyHeaders, listOf, messageBody, validationBody } from '#lib/shared/schemas';

const errors = {
  401: { description: 'Unauthenticated', schema: messageBody },
  403: { description: 'Missing ability', schema: messageBody },
  429: { description: 'Too many requests', schema: messageBody },
};
/** Back-office routes: 401 without a merchant identity, 403 for a role that may not. */
const backofficeErrors = {
  401: { description: 'No back-office identity, or its merchant does not exist', schema: messageBody },
  403: { description: 'The role may not do this (`user` may only view)', schema: messageBody },
  429: { description: 'Too many requests', schema: messageBody },
};
/** Token routes the dashboard (web/) also calls with the back-office identity: reads for both roles, writes for admins. */
const dashboardRead = { roles: ['admin', 'user'] } as const;
const dashboardAdmin = { roles: ['admin'] } as const;
/** The batch endpoints' headers: an idempotency key, and the import run the activity entry names. */
const batchHeaders = idempotencyHeaders.extend(importRunHeaders);
const notFound = { 404: { description: 'Resource not found', schema: messageBody } };
const invalid = { 422: { description: 'Validation failed', schema: validationBody } };

/**
 * The route table: the single source for the CDK API (one function per entry), the local server
 * and the OpenAPI document. Adding an endpoint is one entry here plus its handler module.
 */
export const routes = {
  openapi: defineRoute({
    method: 'GET',
    path: '/openapi.json',
    handler: 'functions/system/openapi.ts',
    ability: null,
    writes: false,
    summary: 'This OpenAPI document',
    description:
      'The OpenAPI 3.1 document of this API, generated from the same route table the functions are built from. Public: no token needed; it counts against the per-IP limit of unauthenticated requests.',
    tags: ['system'],
    responses: { 200: { description: 'OpenAPI 3.1 document' } },
  }),

  // The back office (docs/authentication-and-limits.md): the merchant's API token, for back-office users (Cognito).
  backofficeTokenView: defineRoute({
    method: 'GET',
    path: '/backoffice/api-token',
    handler: 'functions/backoffice/view.ts',
    ability: null,
    auth: 'backoffice',
    roles: ['admin', 'user'],
    writes: false,
    summary: "View the merchant's API token (prefix, last four characters, abilities, times)",
    description:
      'Shows the merchant\'s valid API token without its secret: its prefix, last four characters, abilities and times. For the back-office user signed in to the dashboard (docs/backoffice-and-dashboard.md).',
    tags: ['backoffice'],
    responses: { 200: { description: 'The valid token', schema: dataOf(apiTokenSchema) }, ...backofficeErrors, 404: { description: 'The merchant has no valid token', schema: messageBody } },
  }),
  backofficeMe: defineRoute({
    method: 'GET',
    path: '/backoffice/me',
    handler: 'functions/backoffice/me.ts',
    ability: null,
    auth: 'backoffice',
    roles: ['admin', 'user'],
    writes: false,
    summary: 'The signed-in back-office user: merchant, its reporting currency, and role (the dashboard starts here)',
    description:
      'Who the signed-in back-office user is: the merchant it acts for, that merchant\'s reporting currency, and the user\'s role. The dashboard calls it first.',
    tags: ['backoffice'],
    responses: { 200: { description: 'The caller', schema: dataOf(backofficeSessionSchema) }, ...backofficeErrors },
  }),
  backofficeTokenCreate: defineRoute({
    method: 'POST',
    path: '/backoffice/api-token',
    handler: 'functions/backoffice/create.ts',
    ability: null,
    auth: 'backoffice',
    roles: ['admin'],
    writes: true,
    summary: 'Create the API token (every ability); refused while a valid one exists',
    description:
      'Issues the merchant\'s API token with every ability. The secret is in this answer only. A merchant has at most one valid token: while one exists the answer is 409 (revoke or regenerate it instead). Admins only.',
    tags: ['backoffice'],
    responses: {
      201: { description: 'The new token, shown this once', schema: dataOf(apiTokenIssuedSchema) },
      ...backofficeErrors,
      409: { description: 'A valid token exists: revoke it first', schema: messageBody },
    },
  }),
  backofficeTokenRegenerate: defineRoute({
    method: 'POST',
    path: '/backoffice/api-token/regenerate',
    handler: 'functions/backoffice/regenerate.ts',
    ability: null,
    auth: 'backoffice',
    roles: ['admin'],
    writes: true,
    summary: 'Replace the valid token: the old one is refused from the next request',
    description:
      'Replaces the valid token with a new one (same abilities); the old one is refused from the next request. The new secret is in this answer only. Admins only.',
    tags: ['backoffice'],
    responses: {
      200: { description: 'The new token (same abilities), shown this once', schema: dataOf(apiTokenIssuedSchema) },
      ...backofficeErrors,
      404: { description: 'The merchant has no valid token', schema: messageBody },
    },
  }),
  backofficeTokenRevoke: defineRoute({
    method: 'DELETE',
    path: '/backoffice/api-token',
    handler: 'functions/backoffice/revoke.ts',
    ability: null,
    auth: 'backoffice',
    roles: ['admin'],
    writes: true,
    summary: 'Revoke the valid token, immediately and irreversibly',
    description:
      'Revokes the valid token at once; it cannot be undone. Create a new one afterwards. Admins only.',
    tags: ['backoffice'],
    responses: { 204: { description: 'Revoked' }, ...backofficeErrors, 404: { description: 'The merchant has no valid token', schema: messageBody } },
  }),

  customersList: defineRoute({
    method: 'GET',
    path: '/customers',
    handler: 'functions/customers/list.ts',
    ability: 'customers:read',
    writes: false,
    summary: 'List customers, newest first',
    description:
      'Lists live customers, newest first (created_at, then id). With `search`, the customers whose email or name contains the term, case-insensitively. Pages by number or by cursor (docs/api-conventions.md); `meta.total` counts every match (docs/customers.md).',
    tags: ['customers'],
    request: { query: customerListQuery },
    responses: { 200: { description: 'A page of customers', schema: listOf(customerSchema) }, ...errors, ...invalid },
  }),
  customersCreate: defineRoute({
    method: 'POST',
    path: '/customers',
    handler: 'functions/customers/create.ts',
    ability: 'customers:write',
    writes: true,
    summary: 'Create a customer',
    description:
      'Creates a customer. The email is unique per merchant (case-insensitively) and so is `external_id` when given: a taken one is a 422 on that field. Figures (`ltv`, `order_count`, payment times) start empty and follow the customer\'s orders (docs/customers.md).',
    tags: ['customers'],
    request: { body: customerCreateBody },
    responses: { 201: { description: 'Created', schema: dataOf(customerSchema) }, ...errors, ...invalid },
  }),
  customersBatch: defineRoute({
    method: 'POST',
    path: '/customers/batch',
    handler: 'functions/customers/batch.ts',
    ability: 'customers:write',
    writes: true,
    summary: 'Import up to 100 customers',
    description:
      'Imports up to 100 customers in one request, each validated and stored on its own: the answer says per item whether it was created, updated, skipped or refused, and why. `on_conflict` decides what an existing email or external_id does. With X-Idempotency-Key a retry replays the first answer (docs/customers.md, docs/importing-history.md).',
    tags: ['customers'],
    request: { body: customerBatchBody, query: customerBatchQuery, headers: batchHeaders },
    responses: { 200: batchAnswer(), ...errors, ...invalid },
  }),
  customersGet: defineRoute({
    method: 'GET',
    path: '/customers/{idOrExternalId}',
    handler: 'functions/customers/get.ts',
    ability: 'customers:read',
    writes: false,
    summary: 'Get a customer by id or external_id',
    description:
      'One customer, by its numeric id or by its `external_id` (a path segment of digits only is an id). Deleted customers are not found (docs/customers.md).',
    tags: ['customers'],
    request: { params: customerPathParams },
    responses: { 200: { description: 'The customer', schema: dataOf(customerSchema) }, ...errors, ...notFound },
  }),
  customersUpdate: defineRoute({
    method: 'PUT',
    path: '/customers/{idOrExternalId}',
    handler: 'functions/customers/update.ts',
    ability: 'customers:write',
    writes: true,
    summary: 'Update a customer',
    description:
      'Changes a customer\'s email, name, external_id or metadata; fields left out stay. Uniqueness rules are those of create. Figures are not writable: they follow the orders (docs/customers.md).',
    tags: ['customers'],
    request: { params: customerPathParams, body: customerUpdateBody },
    responses: { 200: { description: 'The customer', schema: dataOf(customerSchema) }, ...errors, ...notFound, ...invalid },
  }),
  customersDelete: defineRoute({
    method: 'DELETE',
    path: '/customers/{idOrExternalId}',
    handler: 'functions/customers/delete.ts',
    ability: 'customers:write',
    writes: true,
    summary: 'Soft-delete a customer',
    description:
      'Soft-deletes a customer: it leaves lists, search and reads, its email and external_id become free, and its orders and figures stay in every metric (deleting a customer changes no figure).',
    tags: ['customers'],
    request: { params: customerPathParams },
    responses: { 204: { description: 'Deleted' }, ...errors, ...notFound },
  }),

  ordersList: defineRoute({
    method: 'GET',
    path: '/orders',
    handler: 'functions/orders/list.ts',
    ability: 'orders:read',
    dashboard: dashboardRead,
    writes: false,
    summary: 'List orders, newest first',
    description:
      'Lists orders newest first (created_at, then id), optionally by status, by customer (id or email) and by a created_at range (dates inclusive). Pages by number or cursor; `meta.total` comes from counters, so every page costs the same (docs/orders.md).',
    tags: ['orders'],
    request: { query: orderListQuery },
    responses: { 200: { description: 'A page of orders', schema: listOf(orderSchema) }, ...errors, ...invalid },
  }),
  ordersCreate: defineRoute({
    method: 'POST',
    path: '/orders',
    handler: 'functions/orders/create.ts',
    ability: 'orders:write',
    writes: true,
    summary: 'Create an order (idempotent with X-Idempotency-Key)',
    description:
      'Creates an order for a customer named by email (created when new). `order_no` is unique per merchant. Amounts are exact decimals with at most the currency\'s fraction digits. A paid order moves the customer\'s figures and the stats. Send X-Idempotency-Key to make a retry safe: the first answer is replayed for 24 hours (docs/orders.md).',
    tags: ['orders'],
    request: { body: orderCreateBody, headers: orderCreateHeaders },
    responses: {
      201: {
        description: 'Created (or, with a repeated X-Idempotency-Key, the first response replayed)',
        schema: dataOf(orderSchema),
        headers: { 'Idempotent-Replayed': '"true" when this is the replay of an earlier response' },
      },
      ...errors,
      ...invalid,
    },
  }),
  ordersBatch: defineRoute({
    method: 'POST',
    path: '/orders/batch',
    handler: 'functions/orders/batch.ts',
    ability: 'orders:write',
    writes: true,
    summary: 'Import up to 100 orders (upsert by order_no)',
    description:
      'Creates or updates up to 100 orders by `order_no`, each validated and stored on its own; the answer reports each item. Importing history: each order keeps the times it is given (docs/orders.md, docs/importing-history.md).',
    tags: ['orders'],
    request: { body: orderBatchBody, headers: batchHeaders },
    responses: { 200: batchAnswer(), ...errors, ...invalid },
  }),
  ordersStats: defineRoute({
    method: 'GET',
    path: '/orders/stats',
    handler: 'functions/orders/stats.ts',
    ability: 'orders:read',
    dashboard: dashboardRead,
    writes: false,
    summary: "Today's and this month's figures (UTC)",
    description:
      'Today\'s and this month\'s figures in UTC: revenue of paid orders in the reporting currency (or `currency`), the number of orders created today and the share of them paid. Read from counters: three requests however many orders there are (docs/orders.md).',
    tags: ['orders'],
    request: { query: orderStatsQuery },
    responses: { 200: { description: 'Stats', schema: dataOf(orderStatsSchema) }, ...errors, ...invalid },
  }),
  ordersGet: defineRoute({
    method: 'GET',
    path: '/orders/{orderNo}',
    handler: 'functions/orders/get.ts',
    ability: 'orders:read',
    writes: false,
    summary: 'Get an order by order_no',
    description:
      'One order by its `order_no`, with its customer\'s email and name (docs/orders.md).',
    tags: ['orders'],
    request: { params: orderPathParams },
    responses: { 200: { description: 'The order', schema: dataOf(orderSchema) }, ...errors, ...notFound },
  }),
  ordersUpdateStatus: defineRoute({
    method: 'PATCH',
    path: '/orders/{orderNo}',
    handler: 'functions/orders/update-status.ts',
    ability: 'orders:write',
    writes: true,
    summary: 'Change an order status',
    description:
      'Moves an order to another status along the allowed transitions (a refused move is a 422 naming it), with the time of the change if given. Figures follow: an order that stops counting as paid leaves every figure as if it had never counted (docs/orders.md).',
    tags: ['orders'],
    request: { params: orderPathParams, body: orderPatchBody },
    responses: { 200: { description: 'The order', schema: dataOf(orderSchema) }, ...errors, ...notFound, ...invalid },
  }),

  subscriptionsList: defineRoute({
    method: 'GET',
    path: '/subscriptions',
    handler: 'functions/subscriptions/list.ts',
    ability: 'subscriptions:read',
    writes: false,
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

  webhookEndpointsList: defineRoute({
    method: 'GET',
    path: '/webhook-endpoints',
    handler: 'functions/webhooks/list.ts',
    ability: 'webhooks:read',
    dashboard: dashboardRead,
    writes: false,
    summary: 'List webhook endpoints, newest first (no secrets)',
    description:
      'Lists the merchant\'s webhook endpoints newest first, without secrets (docs/webhook-endpoints.md).',
    tags: ['webhooks'],
    request: { query: webhookEndpointListQuery },
    responses: { 200: { description: 'A page of webhook endpoints', schema: listOf(webhookEndpointSchema) }, ...errors, ...invalid },
  }),
  webhookEndpointsCreate: defineRoute({
    method: 'POST',
    path: '/webhook-endpoints',
    handler: 'functions/webhooks/create.ts',
    ability: 'webhooks:write',
    writes: true,
    secrets: 'encrypt',
    summary: 'Register a webhook endpoint (https, public addresses only); the signing secret is returned here only',
    description:
      'Registers an https URL on a public address for the event types listed (or `*`). The signing secret (`whsec_…`) is in this answer only; deliveries are signed with it as Standard Webhooks describe. A merchant has at most 20 endpoints (docs/webhook-endpoints.md).',
    tags: ['webhooks'],
    request: { body: webhookEndpointCreateBody },
    responses: {
      201: { description: 'Created, with its signing secret (shown once)', schema: dataOf(webhookEndpointWithSecretSchema) },
      409: { description: 'The merchant already has the maximum number of endpoints', schema: messageBody },
      ...errors,
      ...invalid,
    },
  }),
  webhookEndpointsGet: defineRoute({
    method: 'GET',
    path: '/webhook-endpoints/{id}',
    handler: 'functions/webhooks/get.ts',
    ability: 'webhooks:read',
    writes: false,
    summary: 'Get a webhook endpoint (no secret)',
    description:
      'One webhook endpoint, without its secret (docs/webhook-endpoints.md).',
    tags: ['webhooks'],
    request: { params: webhookEndpointPathParams },
    responses: { 200: { description: 'The webhook endpoint', schema: dataOf(webhookEndpointSchema) }, ...errors, ...notFound },
  }),
  webhookEndpointsUpdate: defineRoute({
    method: 'PATCH',
    path: '/webhook-endpoints/{id}',
    handler: 'functions/webhooks/update.ts',
    ability: 'webhooks:write',
    writes: true,
    summary: 'Change url, events, description or status (enabled / disabled)',
    description:
      'Changes the URL (checked again), the event types, the description or the status (`enabled` / `disabled`); fields left out stay (docs/webhook-endpoints.md).',
    tags: ['webhooks'],
    request: { params: webhookEndpointPathParams, body: webhookEndpointUpdateBody },
    responses: { 200: { description: 'The webhook endpoint', schema: dataOf(webhookEndpointSchema) }, ...errors, ...notFound, ...invalid },
  }),
  webhookEndpointsDelete: defineRoute({
    method: 'DELETE',
    path: '/webhook-endpoints/{id}',
    handler: 'functions/webhooks/delete.ts',
    ability: 'webhooks:write',
    writes: true,
    summary: 'Delete a webhook endpoint (its deliveries stop)',
    description:
      'Deletes an endpoint with its secrets; deliveries to it stop (docs/webhook-endpoints.md).',
    tags: ['webhooks'],
    request: { params: webhookEndpointPathParams },
    responses: { 204: { description: 'Deleted' }, ...errors, ...notFound },
  }),
  metricsMrr: defineRoute({
    method: 'GET',
    path: '/metrics/mrr',
    handler: 'functions/metrics/mrr.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    summary: 'MRR and its movements per day, week (Monday, UTC) or month, with the range summary',
    description:
      'MRR per interval (day, week from Monday, or month; UTC) between `start_date` and `end_date`, with each point\'s movements (new, expansion, contraction, churn, reactivation) and a summary of the range. Every figure equals a recomputation over the raw records (docs/metrics.md).',
    tags: ['metrics'],
    request: { query: mrrQuery },
    responses: { 200: { description: 'The MRR series', schema: mrrSeriesSchema }, ...errors, ...invalid },
  }),
  metricsSummary: defineRoute({
    method: 'GET',
    path: '/metrics/summary',
    handler: 'functions/metrics/summary.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    summary: 'Current MRR, ARR, ARPA, active counts, and the last 30 days: churn rates, quick ratio, LTV',
    description:
      'The figures of today: MRR, ARR, ARPA, active subscriptions and customers, and over the last 30 days the customer and MRR churn rates, quick ratio and LTV (docs/metrics.md).',
    tags: ['metrics'],
    responses: { 200: { description: 'The summary', schema: dataOf(metricsSummarySchema) }, ...errors },
  }),
  metricsCohorts: defineRoute({
    method: 'GET',
    path: '/metrics/cohorts',
    handler: 'functions/metrics/cohorts.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    summary: 'Monthly cohorts (first month with MRR) with customer and MRR retention',
    description:
      'Customers grouped by the month their MRR first went above zero, with customer and MRR retention at the end of each later month; the first element is 100 / 100 (docs/metrics.md).',
    tags: ['metrics'],
    request: { query: cohortsQuery },
    responses: { 200: { description: 'Cohorts', schema: z.object({ data: z.array(cohortSchema) }) }, ...errors, ...invalid },
  }),

  webhookEndpointsRotateSecret: defineRoute({
    method: 'POST',
    path: '/webhook-endpoints/{id}/rotate-secret',
    handler: 'functions/webhooks/rotate-secret.ts',
    ability: 'webhooks:write',
    writes: true,
    secrets: 'encrypt',
    summary: 'Rotate the signing secret (returned once); the previous one keeps signing for 24 hours',
    description:
      'Issues a new signing secret, shown in this answer only. The previous one keeps signing beside it for 24 hours, so a receiver can switch without missing a delivery (docs/webhook-endpoints.md).',
    tags: ['webhooks'],
    request: { params: webhookEndpointPathParams },
    responses: { 200: { description: 'The webhook endpoint with its new secret', schema: dataOf(webhookEndpointWithSecretSchema) }, ...errors, ...notFound },
  }),
  webhookEndpointsTest: defineRoute({
    method: 'POST',
    path: '/webhook-endpoints/{id}/test',
    handler: 'functions/webhooks/test.ts',
    ability: 'webhooks:write',
    dashboard: dashboardAdmin,
    writes: true,
    secrets: 'decrypt',
    timeoutSeconds: DELIVERY_FUNCTION_TIMEOUT_SECONDS,
    summary: 'Send a signed `webhook.test` event to this endpoint now (enabled or not) and answer the attempt',
    description:
      'Sends a signed `webhook.test` event to the endpoint now, enabled or not, and answers with the attempt: status code, duration and error if any (docs/webhooks.md).',
    tags: ['webhooks'],
    request: { params: webhookEndpointPathParams },
    responses: { 200: { description: 'The attempt (also in the delivery log)', schema: dataOf(webhookDeliverySchema) }, ...errors, ...notFound },
  }),
  webhookEndpointsDeliveries: defineRoute({
    method: 'GET',
    path: '/webhook-endpoints/{id}/deliveries',
    handler: 'functions/webhooks/deliveries.ts',
    ability: 'webhooks:read',
    dashboard: dashboardRead,
    writes: false,
    summary: "The endpoint's delivery attempts of the last 30 days, newest first",
    description:
      'The endpoint\'s delivery attempts of the last 30 days, newest first, with their status code, error and next retry time (docs/webhooks.md).',
    tags: ['webhooks'],
    request: { params: webhookDeliveriesPathParams, query: webhookDeliveriesListQuery },
    responses: { 200: { description: 'A page of delivery attempts', schema: listOf(webhookDeliverySchema) }, ...errors, ...notFound, ...invalid },
  }),
  webhookEndpointsRetryDelivery: defineRoute({
    method: 'POST',
    path: '/webhook-endpoints/{id}/deliveries/{event_id}/retry',
    handler: 'functions/webhooks/retry.ts',
    ability: 'webhooks:write',
    writes: true,
    secrets: 'decrypt',
    timeoutSeconds: DELIVERY_FUNCTION_TIMEOUT_SECONDS,
    summary: 'Send one event (delivered to this endpoint in the last 30 days) again now, and answer the attempt',
    description:
      'Delivers one event again now to this endpoint (one it was sent in the last 30 days) and answers with the attempt (docs/webhooks.md).',
    tags: ['webhooks'],
    request: { params: webhookDeliveryRetryPathParams },
    responses: { 200: { description: 'The attempt (also in the delivery log)', schema: dataOf(webhookDeliverySchema) }, ...errors, ...notFound },
  }),
  activityList: defineRoute({
    method: 'GET',
    path: '/activity',
    handler: 'functions/activity/list.ts',
    ability: 'activity:read',
    dashboard: dashboardRead,
    writes: false,
    summary: 'The activity log: one entry per batch request, newest first, kept for the 13 whole months after the month it ran in',
    description:
      'The activity log: one entry per batch request (what was sent, how many items were created, updated, skipped or refused), newest first, optionally by type, import run or date range. Entries are kept for the 13 whole months after their month (docs/activity-log.md).',
    tags: ['activity'],
    request: { query: activityListQuery },
    responses: { 200: { description: 'A page of activity entries (`meta.next_cursor` reads the next one)', schema: listOf(activityEntrySchema) }, ...errors, ...invalid },
  }),
  activityGet: defineRoute({
    method: 'GET',
    path: '/activity/{id}',
    handler: 'functions/activity/get.ts',
    ability: 'activity:read',
    dashboard: dashboardRead,
    writes: false,
    summary: 'One activity entry (404 once it is no longer kept)',
    description:
      'One activity-log entry, while it is kept (docs/activity-log.md).',
    tags: ['activity'],
    request: { params: activityPathParams },
    responses: { 200: { description: 'The entry', schema: dataOf(activityEntrySchema) }, ...errors, ...notFound },
  }),
};

export type RouteName = keyof typeof routes;
export const routeList: (RouteDef & { name: RouteName })[] = Object.entries(routes).map(([name, route]) => ({
  name: name as RouteName,
  ...(route as RouteDef),
}));

/** The catch-all handler for unknown paths (API Gateway `$default`). */
export const NOT_FOUND_HANDLER = 'functions/system/not-found.ts';

