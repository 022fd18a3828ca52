import { standingsOf, updateCustomer } from '#lib/customers/service';
import { presentCustomer } from '#lib/customers/model';
import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/customers/routes';

export const handler = apiHandler(routes.customersUpdate, async ({ auth, params, body }) => {
  const customer = await updateCustomer(auth.merchantId, params.idOrExternalId, body);
  const standings = await standingsOf(auth.merchantId, auth.reportingCurrency, [customer]);
  return { status: 200, body: { data: presentCustomer(customer, auth.reportingCurrency, standings.get(customer.id)) } };
});
