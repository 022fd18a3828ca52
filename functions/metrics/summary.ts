import { csvApiHandler } from '#lib/api/csv-handler';
import { metricsSummary } from '#lib/metrics';
import { routes } from '#lib/metrics/routes';

export const handler = csvApiHandler(routes.metricsSummary, async ({ auth, query }) => {
  const data = await metricsSummary(auth.merchantId, auth, query);
  // What the figures leave out for want of an exchange rate, also at the answer's top level.
  return { status: 200, body: { data, unconverted: data.unconverted } };
});
