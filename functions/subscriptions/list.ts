import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/subscriptions/routes';
import { listSubscriptions } from '#lib/subscriptions/service';

export const handler = apiHandler(routes.subscriptionsList, async ({ auth, query }) => ({
  status: 200,
  body: await listSubscriptions(auth, query),
}));
