import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/merchants/routes';

// The token lookup (or the back office's merchant read) already carries both settings.
export const handler = apiHandler(routes.settingsGet, async ({ auth }) => ({
  status: 200,
  body: { data: { timezone: auth.timezone, reporting_currency: auth.reportingCurrency } },
}));
