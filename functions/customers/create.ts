import { createCustomer } from '#lib/customers/service';
import { presentCustomer } from '#lib/customers/model';
import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/customers/routes';

export const handler = apiHandler(routes.customersCreate, async ({ auth, body }) => {
  const customer = await createCustomer(auth.merchantId, body);
  return { status: 201, body: { data: presentCustomer(customer, auth.reportingCurrency) } };
});
