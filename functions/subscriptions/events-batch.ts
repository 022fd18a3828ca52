import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/http/routes';
import { idempotentBatch } from '#lib/shared/idempotency';
import { importSubscriptionEvents } from '#lib/subscriptions/recorded';

export const handler = apiHandler(routes.subscriptionEventsBatch, async ({ auth, body, headers }) => {
  const key = headers['x-idempotency-key'];
  return idempotentBatch(auth.merchantId, key, body, () => importSubscriptionEvents(auth, body.events, key));
});
