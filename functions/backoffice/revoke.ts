import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/merchants/routes';
import { revokeToken } from '#lib/merchants/service';

export const handler = apiHandler(routes.backofficeTokenRevoke, async ({ identity }) => {
  await revokeToken(identity.merchant.merchant_id);
  return { status: 204 };
});
