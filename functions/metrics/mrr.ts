import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/metrics/routes';
import { mrrSeries } from '#lib/metrics/read';

export const handler = apiHandler(routes.metricsMrr, async ({ auth, query }) => ({ status: 200, body: await mrrSeries(auth.merchantId, query) }));
