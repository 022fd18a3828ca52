import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/http/routes';
import { idempotentBatch } from '#lib/shared/idempotency';
import { importSubscriptions } from '#lib/subscriptions/batch';

export const handler = apiHandler(routes.subscriptionsBatch, async ({ auth, body, headers }) =>
  idempotentBatch(auth.merchantId, headers['x-idempotency-key'], body, () => importSubscriptions(auth, body.subscriptions)),
);
