import { csvApiHandler } from '#lib/http/csv-handler';
import { routes } from '#lib/metrics/routes';
import { planFigures } from '#lib/metrics/service';

export const handler = csvApiHandler(routes.metricsPlans, async ({ auth, query }) => ({
  status: 200,
  body: await planFigures(auth.merchantId, auth, query),
}));
