import { csvApiHandler } from '#lib/api/csv-handler';
import { routes } from '#lib/orders/routes';
import { orderStats } from '#lib/orders/service';

export const handler = csvApiHandler(routes.ordersStats, async ({ auth, query }) => ({
  status: 200,
  body: await orderStats(auth.merchantId, query.currency, auth),
}));
