import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/orders/routes';
import { createOrder } from '#lib/orders/service';

export const handler = apiHandler(routes.ordersCreate, async ({ auth, body, headers }) => {
  const result = await createOrder(auth, body, { idempotencyKey: headers['x-idempotency-key'] });
  return {
    status: result.status,
    body: result.body,
    headers: result.replayed ? { 'Idempotent-Replayed': 'true' } : undefined,
  };
});
