import { csvApiHandler } from '#lib/api/csv-handler';
import { routes } from '#lib/orders/routes';
import { listOrders } from '#lib/orders/service';

export const handler = csvApiHandler(routes.ordersList, async ({ auth, query }) => ({
  status: 200,
  body: await listOrders(auth.merchantId, query),
}));
