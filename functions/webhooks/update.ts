import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/webhooks/routes';
import { updateWebhookEndpoint } from '#lib/webhooks/service';

export const handler = apiHandler(routes.webhookEndpointsUpdate, async ({ auth, params, body }) => ({
  status: 200,
  body: { data: await updateWebhookEndpoint(auth.merchantId, params.id, body) },
}));
