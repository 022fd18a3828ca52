import { NotFoundError } from '#lib/errors';
import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/orders/routes';
import { findOrder } from '#lib/orders/service';

export const handler = apiHandler(routes.ordersGet, async ({ auth, params }) => {
  const order = await findOrder(auth.merchantId, params.orderNo);
  if (!order) throw new NotFoundError();
  return { status: 200, body: { data: order } };
});
