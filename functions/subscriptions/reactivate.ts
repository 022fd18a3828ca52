import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { reactivateSubscription } from '#lib/subscriptions/service';

export const handler = apiHandler(routes.subscriptionsReactivate, async ({ auth, params, body }) => ({
  status: 200,
  body: { data: await reactivateSubscription(auth, params.id, body) },
}));
