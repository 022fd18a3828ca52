import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/settings/routes';
import { readSettings } from '#lib/settings/service';
import { recountPendingHeader } from '#lib/shared/recount-pending-header';

// The token lookup (or the back office's merchant read) already carries both settings.
export const handler = apiHandler(routes.settingsGet, async ({ auth }) => {
  const { settings, pending } = await readSettings(auth);
  return { status: 200, body: { data: settings }, headers: recountPendingHeader(pending) };
});
