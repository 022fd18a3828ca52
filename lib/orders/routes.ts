import { RECOUNT_PENDING_DOC } from '#lib/shared/recount-pending-header';
import {
  orderBatchBody,
  orderCreateBody,
  orderCreateHeaders,
  orderListQuery,
  orderPatchBody,
  orderPathParams,
  orderSchema,
  orderStatsQuery,
  orderStatsAnswer,
} from '#lib/orders/schemas';
import { defineRoute } from '#lib/http/route';
import { batchAnswer, dataOf, listOf } from '#lib/shared/schemas';
import { errors, dashboardRead, batchHeaders, notFound, invalid } from '#lib/http/route-parts';

/** The orders routes (their handlers import only these; lib/api/routes.ts is the union). */
export const routes = {
  ordersList: defineRoute({
    method: 'GET',
    path: '/orders',
    handler: 'functions/orders/list.ts',
    ability: 'orders:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
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
      "Creates an order for a customer named by email (created when new). `order_no` is unique per merchant. Amounts are exact decimals with at most the currency's fraction digits. A paid order moves the customer's figures and the stats. Send X-Idempotency-Key to make a retry safe: the first answer is replayed for 24 hours (docs/orders.md).",
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
    csv: true,
    summary: "Today's and this month's figures (in the merchant's time zone)",
    description:
      "Today's and this month's figures in the merchant's reporting time zone (`GET /settings`; UTC unless changed): revenue of paid orders in the reporting currency, other currencies converted at this month's exchange rate (or in `currency` alone, in it), the number of orders created today and the share of them paid. Read from counters: the same number of requests however many orders there are (docs/orders.md).",
    tags: ['orders'],
    request: { query: orderStatsQuery },
    responses: {
      200: { description: 'Stats', schema: orderStatsAnswer, headers: { 'Recount-Pending': RECOUNT_PENDING_DOC.read } },
      ...errors,
      ...invalid,
    },
  }),
  ordersGet: defineRoute({
    method: 'GET',
    path: '/orders/{orderNo}',
    handler: 'functions/orders/get.ts',
    ability: 'orders:read',
    writes: false,
    summary: 'Get an order by order_no',
    description: "One order by its `order_no`, with its customer's email and name (docs/orders.md).",
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
};
