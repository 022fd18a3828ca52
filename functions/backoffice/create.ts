import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/merchants/routes';
import { createToken, presentIssued } from '#lib/merchants/store';

export const handler = apiHandler(routes.backofficeTokenCreate, async ({ identity }) => ({
  status: 201,
  body: { data: presentIssued(await createToken(identity.merchant)) },
}));
