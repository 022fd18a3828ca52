import { listActivity } from '#lib/activity/read';
import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/activity/routes';

export const handler = apiHandler(routes.activityList, async ({ auth, query }) => ({ status: 200, body: await listActivity(auth.merchantId, query) }));
