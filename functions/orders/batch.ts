import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/http/routes';
import { importOrders } from '#lib/orders/batch';

export const handler = apiHandler(routes.ordersBatch, async ({ auth, body }) => ({
  status: 200,
  body: { data: await importOrders(auth, body.orders) },
}));
