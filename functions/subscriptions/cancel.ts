import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { cancelSubscription } from '#lib/subscriptions/service';

export const handler = apiHandler(routes.subscriptionsCancel, async ({ auth, params, body }) => ({
  status: 200,
  body: { data: await cancelSubscription(auth, params.id, body) },
}));
