import { listCustomers, customerFigures } from '#lib/customers/service';
import { presentCustomer } from '#lib/customers/model';
import { csvApiHandler } from '#lib/api/csv-handler';
import { routes } from '#lib/customers/routes';

export const handler = csvApiHandler(routes.customersList, async ({ auth, query }) => {
  const { items, meta, companions } = await listCustomers(auth.merchantId, query);
  // The page's timeline heads came with it (companions), except for a search's page.
  const figures = await customerFigures(auth.merchantId, auth, items, companions);
  return { status: 200, body: { data: items.map((c) => presentCustomer(c, auth.reportingCurrency, figures.get(c.id))), meta } };
});
