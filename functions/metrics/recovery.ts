import { csvApiHandler } from '#lib/api/csv-handler';
import { recoverySeriesOf } from '#lib/metrics';
import { routes } from '#lib/metrics/routes';

export const handler = csvApiHandler(routes.metricsRecovery, async ({ auth, query }) => ({
  status: 200,
  body: await recoverySeriesOf(auth.merchantId, auth, query),
}));
