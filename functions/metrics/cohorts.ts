import { csvApiHandler } from '#lib/api/csv-handler';
import { cohorts } from '#lib/metrics';
import { routes } from '#lib/metrics/routes';

export const handler = csvApiHandler(routes.metricsCohorts, async ({ auth, query }) => ({
  status: 200,
  body: { data: await cohorts(auth.merchantId, auth, query) },
}));
