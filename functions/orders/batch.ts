import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/http/routes';
import { importOrders } from '#lib/orders/batch';
import { idempotentBatch } from '#lib/shared/idempotency';

export const handler = apiHandler(routes.ordersBatch, async ({ auth, body, headers }) =>
  idempotentBatch(auth.merchantId, headers['x-idempotency-key'], body, () => importOrders(auth, body.orders)),
);
