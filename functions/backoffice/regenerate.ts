import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/merchants/routes';
import { presentIssued, regenerateToken } from '#lib/merchants/store';

export const handler = apiHandler(routes.backofficeTokenRegenerate, async ({ identity }) => ({
  status: 200,
  body: { data: presentIssued(await regenerateToken(identity.merchant)) },
}));
