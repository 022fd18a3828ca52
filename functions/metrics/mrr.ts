import { csvApiHandler } from '#lib/api/csv-handler';
import { mrrSeries } from '#lib/metrics';
import { routes } from '#lib/metrics/routes';

export const handler = csvApiHandler(routes.metricsMrr, async ({ auth, query }) => ({
  status: 200,
  body: await mrrSeries(auth.merchantId, auth, query),
}));
