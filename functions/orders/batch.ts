import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/orders/routes';
import { importOrders } from '#lib/orders/batch';
import { idempotentBatch } from '#lib/db/idempotency';

export const handler = apiHandler(routes.ordersBatch, async (req) =>
  idempotentBatch(req.auth.merchantId, req.headers['x-idempotency-key'], req.body, () => importOrders(req.auth, req.body.orders, req)),
);
