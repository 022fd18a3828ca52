import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { getSubscription } from '#lib/subscriptions/service';

export const handler = apiHandler(routes.subscriptionsGet, async ({ auth, params }) => ({
  status: 200,
  body: { data: await getSubscription(auth, params.id) },
}));
