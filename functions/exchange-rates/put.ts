import { routes } from '#lib/exchange-rates/routes';
import { putExchangeRates } from '#lib/exchange-rates/service';
import { apiHandler } from '#lib/http/handler';

export const handler = apiHandler(routes.exchangeRatesPut, async ({ auth, params, body }) => ({
  status: 200,
  body: { data: await putExchangeRates(auth, params.currency, body.rates) },
}));
