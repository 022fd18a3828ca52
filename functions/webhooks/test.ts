import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/webhooks/routes';
import { sendTestWebhook } from '#lib/webhooks/service';

export const handler = apiHandler(routes.webhookEndpointsTest, async ({ auth, params }) => ({
  status: 200,
  body: { data: await sendTestWebhook(auth.merchantId, params.id, auth.abilities) },
}));
