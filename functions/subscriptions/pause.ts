import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { pauseSubscription } from '#lib/subscriptions/service';

export const handler = apiHandler(routes.subscriptionsPause, async ({ auth, params, body }) => ({
  status: 200,
  body: { data: await pauseSubscription(auth, params.id, body) },
}));
