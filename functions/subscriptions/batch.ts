import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { idempotentBatch } from '#lib/db/idempotency';
import { importSubscriptions } from '#lib/subscriptions/batch';

export const handler = apiHandler(routes.subscriptionsBatch, async (req) =>
  idempotentBatch(req.auth.merchantId, req.headers['x-idempotency-key'], req.body, () =>
    importSubscriptions(req.auth, req.body.subscriptions, req),
  ),
);
