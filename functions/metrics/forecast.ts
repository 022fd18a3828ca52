import { csvApiHandler } from '#lib/api/csv-handler';
import { forecast } from '#lib/metrics';
import { routes } from '#lib/metrics/routes';

export const handler = csvApiHandler(routes.metricsForecast, async ({ auth, query }) => ({
  status: 200,
  body: await forecast(auth.merchantId, auth, query),
}));
