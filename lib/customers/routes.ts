import { RECOUNT_PENDING_DOC } from '#lib/shared/recount-pending-header';
import {
  customerActivitiesQuery,
  customerActivitySchema,
  customerBatchBody,
  customerBatchQuery,
  customerCreateBody,
  customerListQuery,
  customerPathParams,
  customerSchema,
  customerUpdateBody,
} from '#lib/customers/schemas';
import { defineRoute } from '#lib/http/route';
import { batchAnswer, dataOf, listOf } from '#lib/shared/schemas';
import { errors, dashboardRead, batchHeaders, notFound, invalid } from '#lib/http/route-parts';

/** The customers routes (their handlers import only these; lib/api/routes.ts is the union). */
export const routes = {
  customersList: defineRoute({
    method: 'GET',
    path: '/customers',
    handler: 'functions/customers/list.ts',
    ability: 'customers:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'List customers, newest first',
    description:
      'Lists live customers, newest first (created_at, then id). With `search`, the customers whose email or name contains the term, case-insensitively. Pages by number or by cursor (docs/api-conventions.md); `meta.total` counts every match (docs/customers.md).',
    tags: ['customers'],
    request: { query: customerListQuery },
    responses: {
      200: { description: 'A page of customers', schema: listOf(customerSchema), headers: { 'Recount-Pending': RECOUNT_PENDING_DOC.read } },
      ...errors,
      ...invalid,
    },
  }),
  customersCreate: defineRoute({
    method: 'POST',
    path: '/customers',
    handler: 'functions/customers/create.ts',
    ability: 'customers:write',
    writes: true,
    summary: 'Create a customer',
    description:
      "Creates a customer. The email is unique per merchant (case-insensitively) and so is `external_id` when given: a taken one is a 422 on that field. Figures (`ltv`, `order_count`, payment times) start empty and follow the customer's orders (docs/customers.md).",
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
    dashboard: dashboardRead,
    writes: false,
    summary: 'Get a customer by id or external_id',
    description:
      'One customer, by its numeric id or by its `external_id` (a path segment of digits only is an id). Deleted customers are not found (docs/customers.md).',
    tags: ['customers'],
    request: { params: customerPathParams },
    responses: {
      200: { description: 'The customer', schema: dataOf(customerSchema), headers: { 'Recount-Pending': RECOUNT_PENDING_DOC.read } },
      ...errors,
      ...notFound,
    },
  }),
  customersActivities: defineRoute({
    method: 'GET',
    path: '/customers/{idOrExternalId}/activities',
    handler: 'functions/customers/activities.ts',
    ability: 'customers:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: "List a customer's MRR movements, newest first",
    description:
      "The customer's MRR movements (new, expansion, contraction, churn, reactivation), newest first: when, how much, its MRR before and after, and the subscription or recurring order behind each. They are the movements the MRR metrics count for this customer (docs/customers.md). Pages by number or by cursor.",
    tags: ['customers'],
    request: { params: customerPathParams, query: customerActivitiesQuery },
    responses: {
      200: { description: 'A page of movements', schema: listOf(customerActivitySchema) },
      ...errors,
      ...notFound,
      ...invalid,
    },
  }),
  customersUpdate: defineRoute({
    method: 'PUT',
    path: '/customers/{idOrExternalId}',
    handler: 'functions/customers/update.ts',
    ability: 'customers:write',
    writes: true,
    summary: 'Update a customer',
    description:
      "Changes a customer's email, name, external_id or metadata; fields left out stay. Uniqueness rules are those of create. Figures are not writable: they follow the orders (docs/customers.md).",
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
};
