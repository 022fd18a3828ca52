import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/merchants/routes';
import { zoneOf } from '#lib/merchants/rules';

export const handler = apiHandler(routes.backofficeMe, async ({ identity: { merchant, role } }) => ({
  status: 200,
  body: {
    data: {
      merchant_id: merchant.merchant_id,
      name: merchant.name,
      reporting_currency: merchant.reporting_currency,
      timezone: zoneOf(merchant),
      role,
    },
  },
}));
