import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { pastDueSubscription } from '#lib/subscriptions/service';

export const handler = apiHandler(routes.subscriptionsPastDue, async ({ auth, params, body }) => ({
  status: 200,
  body: { data: await pastDueSubscription(auth, params.id, body) },
}));
