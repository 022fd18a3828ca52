import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/http/routes';
import { parseOr422 } from '#lib/http/validation';
import { createOrder } from '#lib/orders/create';
import { idempotencyKeyHeader } from '#lib/orders/schemas';

export const handler = apiHandler(routes.ordersCreate, async ({ auth, body, headers }) => {
  const { idempotency_key } = parseOr422(idempotencyKeyHeader, { idempotency_key: headers['x-idempotency-key'] });
  const result = await createOrder(auth, body, { idempotencyKey: idempotency_key });
  return {
    status: result.status,
    body: result.body,
    headers: result.replayed ? { 'Idempotent-Replayed': 'true' } : undefined,
  };
});
