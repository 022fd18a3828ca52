import { listActivity } from '#lib/activity/service';
import { csvApiHandler } from '#lib/api/csv-handler';
import { routes } from '#lib/activity/routes';

export const handler = csvApiHandler(routes.activityList, async ({ auth, query }) => ({
  status: 200,
  body: await listActivity(auth.merchantId, query),
}));
