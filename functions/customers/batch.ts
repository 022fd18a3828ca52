import { importCustomers } from '#lib/customers/batch';
import { apiHandler } from '#lib/http/handler';
import { routes } from '#lib/http/routes';

export const handler = apiHandler(routes.customersBatch, async ({ auth, body, query }) => {
  // decisions §5: on_conflict is read from the body; the query string is accepted too.
  const onConflict = body.on_conflict ?? query.on_conflict ?? 'skip';
  const result = await importCustomers(auth.merchantId, body.customers, onConflict);
  return { status: 200, body: { data: result } };
});
