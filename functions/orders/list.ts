import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/orders/routes';
import { listOrders } from '#lib/orders/read';

export const handler = apiHandler(routes.ordersList, async ({ auth, query }) => ({
  status: 200,
  body: await listOrders(auth.merchantId, query),
}));
