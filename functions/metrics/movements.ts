import { csvApiHandler } from '#lib/http/csv-handler';
import { routes } from '#lib/metrics/routes';
import { mrrMovements } from '#lib/metrics/service';

export const handler = csvApiHandler(routes.metricsMovements, async ({ auth, query }) => {
  const { items, meta } = await mrrMovements(auth.merchantId, auth, query);
  return { status: 200, body: { data: items, meta } };
});
