import { csvApiHandler } from '#lib/http/csv-handler';
import { routes } from '#lib/metrics/routes';
import { metricsSummary } from '#lib/metrics/service';

export const handler = csvApiHandler(routes.metricsSummary, async ({ auth, query }) => ({
  status: 200,
  body: { data: await metricsSummary(auth.merchantId, auth, query) },
}));
