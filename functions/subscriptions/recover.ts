import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/subscriptions/routes';
import { recoverSubscription } from '#lib/subscriptions/service';

export const handler = apiHandler(routes.subscriptionsRecover, async ({ auth, params, body }) => ({
  status: 200,
  body: { data: await recoverSubscription(auth, params.id, body) },
}));
