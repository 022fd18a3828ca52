import { csvApiHandler } from '#lib/http/csv-handler';
import { routes } from '#lib/metrics/routes';
import { cohorts } from '#lib/metrics/service';

export const handler = csvApiHandler(routes.metricsCohorts, async ({ auth, query }) => ({
  status: 200,
  body: { data: await cohorts(auth.merchantId, auth, query) },
}));
