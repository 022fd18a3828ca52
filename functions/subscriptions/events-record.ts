import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { recordSubscriptionEvent } from '#lib/subscriptions/recorded';

export const handler = apiHandler(routes.subscriptionEventsCreate, async ({ auth, body }) => ({
  status: 201,
  body: { data: await recordSubscriptionEvent(auth, body) },
}));
