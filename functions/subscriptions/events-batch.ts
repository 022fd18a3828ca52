import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/http/routes';
import { importSubscriptionEvents } from '#lib/subscriptions/recorded';

export const handler = apiHandler(routes.subscriptionEventsBatch, async ({ auth, body }) => ({
  status: 200,
  body: { data: await importSubscriptionEvents(auth, body.events) },
}));
