import { webhookEndpointCreateBody, webhookEndpointListQuery, webhookEndpointPathParams, webhookEndpointSchema, webhookEndpointUpdateBody, webhookEndpointWithSecretSchema, webhookDeliveriesListQuery, webhookDeliveriesPathParams, webhookDeliveryRetryPathParams, webhookDeliverySchema } from '#lib/webhooks/schemas';
import { DELIVERY_FUNCTION_TIMEOUT_SECONDS } from '#lib/webhooks/schedule';
import { defineRoute } from '#lib/http/route';
import { dataOf, listOf, messageBody } from '#lib/shared/schemas';
import { errors, dashboardRead, dashboardAdmin, notFound, invalid } from '#lib/http/route-parts';

/** The webhooks routes (their handlers import only these; lib/http/routes.ts is the union). */
export const routes = {

  webhookEndpointsList: defineRoute({
    method: 'GET',
    path: '/webhook-endpoints',
    handler: 'functions/webhooks/list.ts',
    ability: 'webhooks:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
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
    csv: true,
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
};
