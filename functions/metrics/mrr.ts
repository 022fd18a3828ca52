import { csvApiHandler } from '#lib/http/csv-handler';
import { routes } from '#lib/metrics/routes';
import { mrrSeries } from '#lib/metrics/service';
import { restatePendingHeader } from '#lib/shared/restate-pending-header';

export const handler = csvApiHandler(routes.metricsMrr, async ({ auth, query }) => {
  const { answer, restating } = await mrrSeries(auth.merchantId, auth, query);
  return { status: 200, body: answer, headers: restatePendingHeader(restating) };
});
