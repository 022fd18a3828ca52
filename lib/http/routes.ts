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
import { defineRoute, type RouteDef } from '#lib/http/route';
import { batchResultSchema, dataOf, listOf, messageBody, validationBody } from '#lib/shared/schemas';

const errors = {
  401: { description: 'Unauthenticated', schema: messageBody },
  403: { description: 'Missing ability', schema: messageBody },
  429: { description: 'Too many requests', schema: messageBody },
};
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
    tags: ['system'],
    responses: { 200: { description: 'OpenAPI 3.1 document' } },
  }),

  customersList: defineRoute({
    method: 'GET',
    path: '/customers',
    handler: 'functions/customers/list.ts',
    ability: 'customers:read',
    writes: false,
    summary: 'List customers, newest first',
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
    tags: ['customers'],
    request: { body: customerBatchBody, query: customerBatchQuery },
    responses: { 200: { description: 'Batch result', schema: dataOf(batchResultSchema) }, ...errors, ...invalid },
  }),
  customersGet: defineRoute({
    method: 'GET',
    path: '/customers/{idOrExternalId}',
    handler: 'functions/customers/get.ts',
    ability: 'customers:read',
    writes: false,
    summary: 'Get a customer by id or external_id',
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
    tags: ['customers'],
    request: { params: customerPathParams },
    responses: { 204: { description: 'Deleted' }, ...errors, ...notFound },
  }),

  ordersList: defineRoute({
    method: 'GET',
    path: '/orders',
    handler: 'functions/orders/list.ts',
    ability: 'orders:read',
    writes: false,
    summary: 'List orders, newest first',
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
    tags: ['orders'],
    request: { body: orderBatchBody },
    responses: { 200: { description: 'Batch result', schema: dataOf(batchResultSchema) }, ...errors, ...invalid },
  }),
  ordersStats: defineRoute({
    method: 'GET',
    path: '/orders/stats',
    handler: 'functions/orders/stats.ts',
    ability: 'orders:read',
    writes: false,
    summary: "Today's and this month's figures (UTC)",
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
    tags: ['orders'],
    request: { params: orderPathParams, body: orderPatchBody },
    responses: { 200: { description: 'The order', schema: dataOf(orderSchema) }, ...errors, ...notFound, ...invalid },
  }),
};

export type RouteName = keyof typeof routes;
export const routeList: (RouteDef & { name: RouteName })[] = Object.entries(routes).map(([name, route]) => ({
  name: name as RouteName,
  ...(route as RouteDef),
}));

/** The catch-all handler for unknown paths (API Gateway `$default`). */
export const NOT_FOUND_HANDLER = 'functions/system/not-found.ts';

