import { routes } from '#lib/exchange-rates/routes';
import { recountPendingHeader } from '#lib/shared/recount-pending-header';
import { putExchangeRates } from '#lib/exchange-rates/service';
import { apiHandler } from '#lib/api/handler';

export const handler = apiHandler(routes.exchangeRatesPut, async ({ auth, params, body }) => {
  const { rates, pending } = await putExchangeRates(auth, params.currency, body.rates);
  return { status: 200, body: { data: rates }, headers: recountPendingHeader(pending) };
});
