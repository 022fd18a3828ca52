import { findCustomer } from '#lib/customers/store';
import { presentCustomer } from '#lib/customers/model';
import { notFound } from '#lib/http/errors';
import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/http/routes';

export const handler = apiHandler(routes.customersGet, async ({ auth, params }) => {
  const customer = await findCustomer(auth.merchantId, params.idOrExternalId);
  if (!customer) throw notFound();
  return { status: 200, body: { data: presentCustomer(customer, auth.reportingCurrency) } };
});
