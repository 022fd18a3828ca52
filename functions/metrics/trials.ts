import { csvApiHandler } from '#lib/api/csv-handler';
import { trialsSeries } from '#lib/metrics';
import { routes } from '#lib/metrics/routes';

export const handler = csvApiHandler(routes.metricsTrials, async ({ auth, query }) => ({
  status: 200,
  body: await trialsSeries(auth.merchantId, auth, query),
}));
