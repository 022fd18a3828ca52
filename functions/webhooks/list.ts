import { csvApiHandler } from '#lib/api/csv-handler';
import { routes } from '#lib/webhooks/routes';
import { listWebhookEndpoints } from '#lib/webhooks/service';

export const handler = csvApiHandler(routes.webhookEndpointsList, async ({ auth, query }) => ({
  status: 200,
  body: await listWebhookEndpoints(auth.merchantId, query),
}));
