import { deleteCustomer } from '#lib/customers/service';
import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/customers/routes';

export const handler = apiHandler(routes.customersDelete, async ({ auth, params }) => {
  await deleteCustomer(auth.merchantId, params.idOrExternalId);
  return { status: 204 };
});
