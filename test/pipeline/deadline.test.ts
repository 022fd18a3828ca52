import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { db } from '#lib/db/client';
import { newMerchant, useApi } from '../support/api.ts';
import { createOrder } from '../orders/helpers.ts';

/**
 * An invocation that runs out of time (a dependency slower than the function's timeout) answers
 * 503 with Retry-After, like throttling: the client retries (idempotently), never a 500.
 */
const api = useApi();
beforeAll(() => void (process.env.LOCAL_FUNCTION_TIMEOUT_MS = '2500'));
afterAll(() => void delete process.env.LOCAL_FUNCTION_TIMEOUT_MS);

const NAME = 'test:slow-order-reads';
afterEach(() => void db().middlewareStack.remove(NAME));

describe('invocation deadline', () => {
  it('a read slower than the function timeout: 503 {message} with Retry-After, not 500', async () => {
    const { token } = await newMerchant();
    const order = await createOrder(api, token);
    db().middlewareStack.add(
      (next, context) => async (args) => {
        // The order's read (GetItem or BatchGetItem) is slow; the token and rate reads are not.
        if (/^(Get|BatchGet)Item/.test(context.commandName ?? '') && JSON.stringify(args.input).includes('#ORDER#')) {
          await new Promise((r) => setTimeout(r, 4_000));
        }
        return next(args);
      },
      { step: 'initialize', name: NAME },
    );
    const r = await api.get(`/orders/${order.order_no}`, token);
    expect(r.status, JSON.stringify(r.body)).toBe(503);
    expect(r.body).toEqual({ message: 'The service is busy. Try again shortly.' });
    expect(r.headers.get('retry-after')).toBe('1');
    expect(r.headers.get('x-request-id')).toBeTruthy();
  });
});
