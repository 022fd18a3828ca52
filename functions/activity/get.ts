import { getActivity } from '#lib/activity/service';
import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/activity/routes';

export const handler = apiHandler(routes.activityGet, async ({ auth, params }) => ({
  status: 200,
  body: { data: await getActivity(auth.merchantId, params.id) },
}));
