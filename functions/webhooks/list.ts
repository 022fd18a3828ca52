import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/webhooks/routes';
import { listWebhookEndpoints } from '#lib/webhooks/service';

export const handler = apiHandler(routes.webhookEndpointsList, async ({ auth, query }) => ({
  status: 200,
  body: await listWebhookEndpoints(auth.merchantId, query),
}));
