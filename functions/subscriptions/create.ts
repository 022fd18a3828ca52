import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { createSubscription } from '#lib/subscriptions/service';

export const handler = apiHandler(routes.subscriptionsCreate, async ({ auth, body }) => ({
  status: 201,
  body: { data: await createSubscription(auth, body) },
}));
