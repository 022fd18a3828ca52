import { csvApiHandler } from '#lib/api/csv-handler';
import { routes } from '#lib/subscriptions/routes';
import { listSubscriptions } from '#lib/subscriptions/service';

export const handler = csvApiHandler(routes.subscriptionsList, async ({ auth, query }) => ({
  status: 200,
  body: await listSubscriptions(auth, query),
}));
