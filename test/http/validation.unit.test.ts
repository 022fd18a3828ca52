import { INVALID_DATA } from '#lib/errors';
import { describe, expect, it } from 'vitest';
import { HttpError } from '#lib/http/errors';
import { parseOr422 } from '#lib/http/validation';
import { mrrQuery } from '#lib/metrics/schemas';
import { orderBatchBody, orderCreateBody } from '#lib/orders/schemas';
import { subscriptionPauseBody } from '#lib/subscriptions/schemas';

/** Request validation: the 422 bodies a client reads (docs/api-conventions.md), in memory. */
const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    return { status: (err as HttpError).status, body: (err as HttpError).body as { message: string; errors: Record<string, string[]> } };
  }
  throw new Error('expected a 422');
};

describe('request validation', () => {
  it('names the allowed values of an enumeration', () => {
    expect(refusal(() => parseOr422(mrrQuery, { interval: 'fortnight' }))).toMatchObject({
      status: 422,
      body: {
        message: INVALID_DATA,
        errors: { interval: [expect.stringMatching(/^The selected interval is invalid\. Allowed: day, week, month, quarter, year/)] },
      },
    });
  });

  it('says an empty batch needs an item, and takes any item (each is checked on its own)', () => {
    expect(refusal(() => parseOr422(orderBatchBody, { orders: [] })).body.errors).toEqual({
      orders: ['The orders field must contain at least 1 item.'],
    });
    expect(parseOr422(orderBatchBody, { orders: [{}, 'not an order'] }).orders).toHaveLength(2);
  });

  it('reports every refused field of a body at once', () => {
    const { body } = refusal(() => parseOr422(orderCreateBody, { order_no: 'A/1', amount: '1.234', customer_email: 'nope' }));
    expect(Object.keys(body.errors).sort()).toEqual(['amount', 'customer_email', 'order_no']);
    expect(body.errors.amount).toEqual(['The amount field must have at most 2 decimal places.']);
  });

  it('reads a date-time without seconds, and an absent body as empty', () => {
    expect(parseOr422(subscriptionPauseBody, { paused_at: '2026-11-24T08:00Z' }).paused_at).toBe('2026-11-24T08:00:00Z');
    expect(parseOr422(subscriptionPauseBody, {})).toEqual({});
  });
});
