import { csvApiHandler } from '#lib/api/csv-handler';
import { planFigures } from '#lib/metrics';
import { routes } from '#lib/metrics/routes';

export const handler = csvApiHandler(routes.metricsPlans, async ({ auth, query }) => ({
  status: 200,
  body: await planFigures(auth.merchantId, auth, query),
}));
