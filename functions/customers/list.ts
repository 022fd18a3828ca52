import { listCustomers } from '#lib/customers/service';
import { presentCustomer } from '#lib/customers/model';
import { apiHandler } from '#lib/http/handler';
import { paginated } from '#lib/shared/pagination';
import { routes } from '#lib/http/routes';

export const handler = apiHandler(routes.customersList, async ({ auth, query }) => {
  const { items, total } = await listCustomers(auth.merchantId, query);
  const data = items.map((c) => presentCustomer(c, auth.reportingCurrency));
  return { status: 200, body: paginated(data, query.page, query.per_page, total) };
});
