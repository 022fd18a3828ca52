import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/webhooks/routes';
import { retryDelivery } from '#lib/webhooks/service';

export const handler = apiHandler(routes.webhookEndpointsRetryDelivery, async ({ auth, params }) => ({
  status: 200,
  body: { data: await retryDelivery(auth.merchantId, params.id, params.event_id, auth.abilities) },
}));
