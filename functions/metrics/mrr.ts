import { csvApiHandler } from '#lib/http/csv-handler';
import { routes } from '#lib/metrics/routes';
import { mrrSeries } from '#lib/metrics/service';

export const handler = csvApiHandler(routes.metricsMrr, async ({ auth, query }) => ({
  status: 200,
  body: await mrrSeries(auth.merchantId, auth, query),
}));
