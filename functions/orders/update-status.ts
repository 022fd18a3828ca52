import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/orders/routes';
import { changeOrderStatus } from '#lib/orders/service';

export const handler = apiHandler(routes.ordersUpdateStatus, async ({ auth, params, body }) => ({
  status: 200,
  body: { data: await changeOrderStatus(auth, params.orderNo, body) },
}));
