import { csvApiHandler } from '#lib/api/csv-handler';
import { routes } from '#lib/webhooks/routes';
import { listEndpointDeliveries } from '#lib/webhooks/service';

export const handler = csvApiHandler(routes.webhookEndpointsDeliveries, async ({ auth, params, query }) => ({
  status: 200,
  body: await listEndpointDeliveries(auth.merchantId, params.id, query, auth.abilities),
}));
