import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/subscriptions/routes';
import { listSubscriptionEvents } from '#lib/subscriptions/events';

export const handler = apiHandler(routes.subscriptionEventsList, async ({ auth, query }) => ({
  status: 200,
  body: await listSubscriptionEvents(auth.merchantId, query),
}));
