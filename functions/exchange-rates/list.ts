import { routes } from '#lib/exchange-rates/routes';
import { readExchangeRates } from '#lib/exchange-rates/service';
import { apiHandler } from '#lib/api/handler';
import { recountPendingHeader } from '#lib/shared/recount-pending-header';

export const handler = apiHandler(routes.exchangeRatesList, async ({ auth }) => {
  const { data, pending } = await readExchangeRates(auth);
  return { status: 200, body: { data }, headers: recountPendingHeader(pending) };
});
