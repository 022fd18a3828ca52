import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { idempotentBatch } from '#lib/db/idempotency';
import { importSubscriptionEvents } from '#lib/subscriptions/recorded';

export const handler = apiHandler(routes.subscriptionEventsBatch, async (req) => {
  const key = req.headers['x-idempotency-key'];
  return idempotentBatch(req.auth.merchantId, key, req.body, () => importSubscriptionEvents(req.auth, req.body.events, key, req));
});
