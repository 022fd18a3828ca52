import { importCustomers } from '#lib/customers/batch';
import { apiHandler } from '#lib/api/handler';
import { routes } from '#lib/customers/routes';
import { idempotentBatch } from '#lib/db/idempotency';

export const handler = apiHandler(routes.customersBatch, async (req) => {
  const { auth, body, query, headers } = req;
  // on_conflict is read from the body; the query string is accepted too.
  const onConflict = body.on_conflict ?? query.on_conflict ?? 'skip';
  return idempotentBatch(auth.merchantId, headers['x-idempotency-key'], { ...body, on_conflict: onConflict }, () =>
    importCustomers(auth.merchantId, body.customers, onConflict, req),
  );
});
