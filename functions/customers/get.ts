import { readCustomer } from '#lib/customers/service';
import { presentCustomer } from '#lib/customers/model';
import { NotFoundError } from '#lib/errors';
import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/customers/routes';

export const handler = apiHandler(routes.customersGet, async ({ auth, params }) => {
  const read = await readCustomer(auth.merchantId, auth, params.idOrExternalId);
  if (!read) throw new NotFoundError();
  return { status: 200, body: { data: presentCustomer(read.customer, auth.reportingCurrency, read.figures) } };
});
