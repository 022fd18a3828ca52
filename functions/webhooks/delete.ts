import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/webhooks/routes';
import { deleteWebhookEndpoint } from '#lib/webhooks/service';

export const handler = apiHandler(routes.webhookEndpointsDelete, async ({ auth, params }) => {
  await deleteWebhookEndpoint(auth.merchantId, params.id);
  return { status: 204 };
});
