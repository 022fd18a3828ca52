import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/webhooks/routes';
import { rotateWebhookSecret } from '#lib/webhooks/service';

export const handler = apiHandler(routes.webhookEndpointsRotateSecret, async ({ auth, params }) => ({
  status: 200,
  body: { data: await rotateWebhookSecret(auth.merchantId, params.id) },
}));
