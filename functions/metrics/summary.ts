import { csvApiHandler } from '#lib/http/csv-handler';
import { routes } from '#lib/metrics/routes';
import { metricsSummary } from '#lib/metrics/service';
import { restatePendingHeader } from '#lib/shared/restate-pending-header';

export const handler = csvApiHandler(routes.metricsSummary, async ({ auth, query }) => {
  const { answer: data, restating } = await metricsSummary(auth.merchantId, auth, query);
  // What the figures leave out for want of an exchange rate, also at the answer's top level.
  return { status: 200, body: { data, unconverted: data.unconverted }, headers: restatePendingHeader(restating) };
});
