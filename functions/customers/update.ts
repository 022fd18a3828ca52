import { customerFigures, updateCustomer } from '#lib/customers/service';
import { presentCustomer } from '#lib/customers/model';
import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/customers/routes';

export const handler = apiHandler(routes.customersUpdate, async ({ auth, params, body }) => {
  const customer = await updateCustomer(auth.merchantId, params.idOrExternalId, body);
  const figures = await customerFigures(auth.merchantId, auth, [customer]);
  return { status: 200, body: { data: presentCustomer(customer, auth.reportingCurrency, figures.get(customer.id)) } };
});
