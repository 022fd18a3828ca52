import { csvApiHandler } from '#lib/api/csv-handler';
import { mrrMovements } from '#lib/metrics';
import { routes } from '#lib/metrics/routes';

export const handler = csvApiHandler(routes.metricsMovements, async ({ auth, query }) => {
  const { items, meta } = await mrrMovements(auth.merchantId, auth, query);
  return { status: 200, body: { data: items, meta } };
});
