import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/http/routes';
import { importSubscriptions } from '#lib/subscriptions/batch';

export const handler = apiHandler(routes.subscriptionsBatch, async ({ auth, body }) => ({
  status: 200,
  body: { data: await importSubscriptions(auth, body.subscriptions) },
}));
