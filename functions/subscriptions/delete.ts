import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { deleteSubscription } from '#lib/subscriptions/service';

export const handler = apiHandler(routes.subscriptionsDelete, async ({ auth, params }) => {
  await deleteSubscription(auth, params.id);
  return { status: 204 };
});
