import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/webhooks/routes';
import { createWebhookEndpoint } from '#lib/webhooks/service';

export const handler = apiHandler(routes.webhookEndpointsCreate, async ({ auth, body }) => ({
  status: 201,
  body: { data: await createWebhookEndpoint(auth.merchantId, body) },
}));
