import { csvApiHandler } from '#lib/api/csv-handler';
import { churnReasons } from '#lib/metrics';
import { routes } from '#lib/metrics/routes';

export const handler = csvApiHandler(routes.metricsChurnReasons, async ({ auth, query }) => ({
  status: 200,
  body: { data: await churnReasons(auth.merchantId, auth, query) },
}));
