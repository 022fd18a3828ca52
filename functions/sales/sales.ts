import { csvApiHandler } from '#lib/api/csv-handler';
import { salesFigures } from '#lib/sales';
import { routes } from '#lib/sales/routes';

export const handler = csvApiHandler(routes.metricsSales, async ({ auth, query }) => ({
  status: 200,
  body: await salesFigures(auth.merchantId, auth, query),
}));
