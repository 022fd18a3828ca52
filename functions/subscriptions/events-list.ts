import { csvApiHandler } from '#lib/api/csv-handler';
import { routes } from '#lib/subscriptions/routes';
import { listSubscriptionEvents } from '#lib/subscriptions/events';

export const handler = csvApiHandler(routes.subscriptionEventsList, async ({ auth, query }) => ({
  status: 200,
  body: await listSubscriptionEvents(auth.merchantId, query),
}));
