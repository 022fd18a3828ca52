import { routes } from '#lib/exchange-rates/routes';
import { listExchangeRates } from '#lib/exchange-rates/service';
import { apiHandler } from '#lib/http/handler';

export const handler = apiHandler(routes.exchangeRatesList, async ({ auth }) => ({
  status: 200,
  body: { data: await listExchangeRates(auth) },
}));
