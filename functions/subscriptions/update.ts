import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { updateSubscription } from '#lib/subscriptions/service';

export const handler = apiHandler(routes.subscriptionsUpdate, async ({ auth, params, body }) => ({
  status: 200,
  body: { data: await updateSubscription(auth, params.id, body) },
}));
