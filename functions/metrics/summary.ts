import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/metrics/routes';
import { metricsSummary } from '#lib/metrics/read';

export const handler = apiHandler(routes.metricsSummary, async ({ auth }) => ({ status: 200, body: { data: await metricsSummary(auth.merchantId) } }));
