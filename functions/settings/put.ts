import { apiHandler } from '#lib/api/handler';
import { recountPendingHeader } from '#lib/shared/recount-pending-header';
import { routes } from '#lib/settings/routes';
import { putSettings } from '#lib/settings/service';

export const handler = apiHandler(routes.settingsPut, async ({ identity, body }) => {
  const { settings, pending } = await putSettings(identity.merchant, body);
  return { status: 200, body: { data: settings }, headers: recountPendingHeader(pending) };
});
