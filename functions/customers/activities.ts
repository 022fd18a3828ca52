import { customerActivities } from '#lib/customers/service';
import { csvApiHandler } from '#lib/api/csv-handler';
import { routes } from '#lib/customers/routes';

export const handler = csvApiHandler(routes.customersActivities, async ({ auth, params, query }) => {
  const { items, meta } = await customerActivities(auth.merchantId, auth, params.idOrExternalId, query);
  return { status: 200, body: { data: items, meta } };
});
