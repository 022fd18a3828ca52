import { csvApiHandler } from '#lib/api/csv-handler';
import { purchaseCohorts } from '#lib/sales';
import { routes } from '#lib/sales/routes';

export const handler = csvApiHandler(routes.metricsPurchaseCohorts, async ({ auth, query }) => ({
  status: 200,
  body: await purchaseCohorts(auth.merchantId, auth, query),
}));
