import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/merchants/routes';
import { putSettings } from '#lib/merchants/settings';

export const handler = apiHandler(routes.settingsPut, async ({ identity, body }) => ({
  status: 200,
  body: { data: await putSettings(identity.merchant, body) },
}));
