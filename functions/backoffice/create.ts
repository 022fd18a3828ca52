import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/merchants/routes';
import { presentIssued } from '#lib/merchants/rules';
import { createToken } from '#lib/merchants/service';

export const handler = apiHandler(routes.backofficeTokenCreate, async ({ identity }) => ({
  status: 201,
  body: { data: presentIssued(await createToken(identity.merchant)) },
}));
