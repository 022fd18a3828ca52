import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/metrics/routes';
import { cohorts } from '#lib/metrics/read';

export const handler = apiHandler(routes.metricsCohorts, async ({ auth, query }) => ({ status: 200, body: { data: await cohorts(auth.merchantId, query) } }));
