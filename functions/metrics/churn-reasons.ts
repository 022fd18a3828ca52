import { csvApiHandler } from '#lib/http/csv-handler';
import { routes } from '#lib/metrics/routes';
import { churnReasons } from '#lib/metrics/service';

export const handler = csvApiHandler(routes.metricsChurnReasons, async ({ auth, query }) => ({
  status: 200,
  body: { data: await churnReasons(auth.merchantId, auth, query) },
}));
