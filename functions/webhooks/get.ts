import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/webhooks/routes';
import { getWebhookEndpoint } from '#lib/webhooks/service';

export const handler = apiHandler(routes.webhookEndpointsGet, async ({ auth, params }) => ({
  status: 200,
  body: { data: await getWebhookEndpoint(auth.merchantId, params.id) },
}));
