import { findCustomer, customerFigures } from '#lib/customers/service';
import { presentCustomer } from '#lib/customers/model';
import { NotFoundError } from '#lib/errors';
import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/customers/routes';

export const handler = apiHandler(routes.customersGet, async ({ auth, params }) => {
  const customer = await findCustomer(auth.merchantId, params.idOrExternalId);
  if (!customer) throw new NotFoundError();
  const figures = await customerFigures(auth.merchantId, auth, [customer]);
  return { status: 200, body: { data: presentCustomer(customer, auth.reportingCurrency, figures.get(customer.id)) } };
});
