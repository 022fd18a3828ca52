import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/merchants/routes';
import { viewToken } from '#lib/merchants/service';

export const handler = apiHandler(routes.backofficeTokenView, async ({ identity }) => ({
  status: 200,
  body: { data: await viewToken(identity.merchant.merchant_id) },
}));
