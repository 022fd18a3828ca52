import { csvApiHandler } from '#lib/api/csv-handler';
import { paymentMethods } from '#lib/sales';
import { routes } from '#lib/sales/routes';

export const handler = csvApiHandler(routes.metricsPaymentMethods, async ({ auth, query }) => ({
  status: 200,
  body: await paymentMethods(auth.merchantId, auth, query),
}));
