/**
 * The usage example of docs/typed-client.md, type-checked by `tsc` (npm run typecheck) so that it
 * keeps compiling as the document changes.
 */
import { ApiError, createApiClient, paginate } from './index.ts';

export const example = async (baseUrl: string, token: string) => {
  const api = createApiClient({ baseUrl, token, retry: { attempts: 5, maxDelayMs: 20_000 } });

  // One customer: `data` is typed by the document; `error` is the typed error body.
  const { data: created, error } = await api.POST('/customers', { body: { email: 'ada@example.com', name: 'Ada Lovelace' } });
  if (error) throw new Error(error.message);
  const customerId = created.data.id;

  // An order: the client adds an X-Idempotency-Key, so its retries never create twice.
  const order = await api.POST('/orders', {
    body: { order_no: 'A-1001', customer_email: created.data.email, amount: '49.00', currency: 'EUR', status: 'paid' },
  });
  if (order.response.status === 201) console.log(`order ${order.data?.data.id}`);

  // Every customer whose email or name contains "example", page after page by meta.next_cursor.
  for await (const customer of paginate(api, '/customers', { params: { query: { search: 'example', per_page: 100 } } })) {
    console.log(customer.id, customer.email);
  }

  // Errors as exceptions, where that reads better.
  const { data, response } = await api.GET('/customers/{idOrExternalId}', { params: { path: { idOrExternalId: String(customerId) } } });
  if (!data) throw new ApiError(response.status, undefined, response.headers.get('x-request-id'));
  return data.data;
};
