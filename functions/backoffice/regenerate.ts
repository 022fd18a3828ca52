import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/merchants/routes';
import { presentIssued } from '#lib/merchants/rules';
import { regenerateToken } from '#lib/merchants/service';

export const handler = apiHandler(routes.backofficeTokenRegenerate, async ({ identity }) => ({
  status: 200,
  body: { data: presentIssued(await regenerateToken(identity.merchant)) },
}));
