import { INVALID_DATA } from '#lib/errors';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { newMerchant, useApi } from '../support/api.ts';
import { db } from '#lib/db/client';
import { indexPartitions } from '#lib/db/keys';
import { MAX_QUERY_LIMIT, queryPage } from '#lib/db/query';
import { HttpError } from '#lib/http/errors';
import { idParam, MAX_PAGE, pageQuery } from '#lib/shared/fields';
import { pageMeta, paginated } from '#lib/shared/pagination';
import { parseOr422 } from '#lib/http/validation';

/** docs/api-conventions.md: the list envelope's meta, and page / per_page validation. */
describe('pageMeta', () => {
  it('empty list: one last page, from and to null', () => {
    expect(pageMeta(1, 20, 0, 0)).toEqual({ current_page: 1, from: null, last_page: 1, per_page: 20, to: null, total: 0 });
  });

  it('a full first page, a partial last page', () => {
    expect(pageMeta(1, 20, 45, 20)).toEqual({ current_page: 1, from: 1, last_page: 3, per_page: 20, to: 20, total: 45 });
    expect(pageMeta(3, 20, 45, 5)).toEqual({ current_page: 3, from: 41, last_page: 3, per_page: 20, to: 45, total: 45 });
  });

  it('a total that is an exact multiple of per_page adds no empty page', () => {
    expect(pageMeta(2, 10, 20, 10)).toEqual({ current_page: 2, from: 11, last_page: 2, per_page: 10, to: 20, total: 20 });
    expect(pageMeta(1, 100, 100, 100).last_page).toBe(1);
    expect(pageMeta(1, 1, 1, 1)).toEqual({ current_page: 1, from: 1, last_page: 1, per_page: 1, to: 1, total: 1 });
  });

  it('a page past the end keeps current_page and total, with from and to null', () => {
    expect(pageMeta(7, 10, 20, 0)).toEqual({ current_page: 7, from: null, last_page: 2, per_page: 10, to: null, total: 20 });
  });

  it('paginated wraps data with the meta of its length', () => {
    expect(paginated(['a', 'b'], 2, 2, 4)).toEqual({
      data: ['a', 'b'],
      meta: { current_page: 2, from: 3, last_page: 2, per_page: 2, to: 4, total: 4, next_cursor: null },
    });
    expect(paginated([], 3, 2, 4)).toEqual({
      data: [],
      meta: { current_page: 3, from: null, last_page: 2, per_page: 2, to: null, total: 4, next_cursor: null },
    });
  });
});

describe('pageQuery', () => {
  const schema = z.object(pageQuery);
  const errorsOf = (query: Record<string, string>) => {
    try {
      parseOr422(schema, query);
    } catch (err) {
      expect(err).toBeInstanceOf(HttpError);
      expect((err as HttpError).status).toBe(422);
      return (err as HttpError).body.errors;
    }
    throw new Error(`accepted ${JSON.stringify(query)}`);
  };

  it('defaults to page 1 of 20 and accepts the bounds', () => {
    expect(parseOr422(schema, {})).toEqual({ page: 1, per_page: 20 });
    expect(parseOr422(schema, { page: '1', per_page: '1' })).toEqual({ page: 1, per_page: 1 });
    expect(parseOr422(schema, { page: '123456', per_page: '100' })).toEqual({ page: 123456, per_page: 100 });
  });

  it('refuses out-of-range and non-integer values with a 422 on that parameter', () => {
    expect(errorsOf({ page: '0' })).toEqual({ page: ['The page field must be at least 1.'] });
    expect(errorsOf({ page: '-1' })).toEqual({ page: ['The page field must be an integer.'] });
    expect(errorsOf({ per_page: '0' })).toEqual({ per_page: ['The per page field must be between 1 and 100.'] });
    expect(errorsOf({ per_page: '101' })).toEqual({ per_page: ['The per page field must be between 1 and 100.'] });
    expect(errorsOf({ per_page: '-1' })).toEqual({ per_page: ['The per page field must be an integer.'] });
    for (const bad of ['1.5', 'abc', '', ' 2', '1e2', '0x10', '2,3']) {
      expect(errorsOf({ page: bad }), bad).toEqual({ page: ['The page field must be an integer.'] });
      expect(errorsOf({ per_page: bad }), bad).toEqual({ per_page: ['The per page field must be an integer.'] });
    }
    expect(errorsOf({ page: 'abc', per_page: '101' })).toEqual({
      page: ['The page field must be an integer.'],
      per_page: ['The per page field must be between 1 and 100.'],
    });
  });

  it('a number too large for a double is "not greater than" its maximum, not "at least 1"', () => {
    expect(MAX_PAGE).toBe(2 ** 31 - 1);
    // The deepest offset stays an exact integer.
    expect(Number.isSafeInteger((MAX_PAGE - 1) * 100)).toBe(true);
    expect(parseOr422(schema, { page: String(MAX_PAGE), per_page: '100' })).toEqual({ page: MAX_PAGE, per_page: 100 });
    for (const huge of [String(MAX_PAGE + 1), '99999999999999999999', '9'.repeat(400)]) {
      expect(errorsOf({ page: huge }), huge).toEqual({ page: ['The page field must not be greater than 2147483647.'] });
      expect(errorsOf({ per_page: huge }), huge).toEqual({ per_page: ['The per page field must be between 1 and 100.'] });
    }
  });

  it('an id filter beyond the exact integers is "not greater than", not "a positive integer"', () => {
    const ids = z.object({ customer_id: idParam().optional() });
    const idErrors = (v: string) => {
      try {
        parseOr422(ids, { customer_id: v });
      } catch (err) {
        return (err as HttpError).body.errors;
      }
      throw new Error(`accepted ${v}`);
    };
    expect(parseOr422(ids, { customer_id: String(Number.MAX_SAFE_INTEGER) })).toEqual({ customer_id: Number.MAX_SAFE_INTEGER });
    for (const huge of ['9007199254740992', '99999999999999999999', '9'.repeat(400)]) {
      expect(idErrors(huge), huge).toEqual({ customer_id: ['The customer id field must not be greater than 9007199254740991.'] });
    }
    for (const bad of ['0', '-1', 'abc', '01', '1.5', '']) {
      expect(idErrors(bad), bad).toEqual({ customer_id: ['The customer id field must be a positive integer.'] });
    }
  });
});

describe('over HTTP', () => {
  const api = useApi();

  it('GET /customers answers 422 on the parameter, and a page past the end with empty data', async () => {
    const { token } = await newMerchant();
    const bad = await api.get('/customers?page=0&per_page=abc', token);
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({
      message: INVALID_DATA,
      errors: { page: ['The page field must be at least 1.'], per_page: ['The per page field must be an integer.'] },
    });
    // A repeated parameter arrives joined ("1,2"), as API Gateway sends it, and is refused.
    expect((await api.get('/customers?page=1&page=2', token)).body.errors).toEqual({ page: ['The page field must be an integer.'] });
    const empty = await api.get('/customers?page=5&per_page=10', token);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({
      data: [],
      meta: { current_page: 5, from: null, last_page: 1, per_page: 10, to: null, total: 0, next_cursor: null },
    });
  });
});

describe('queryPage', () => {
  const api = useApi();

  it('never sends a Limit DynamoDB refuses (≥ 2^31), however deep the offset', async () => {
    const { token, merchantId } = await newMerchant();
    for (let i = 1; i <= 3; i++) expect((await api.post('/customers', token, { email: `q${i}@example.com` })).status).toBe(201);
    const limits: number[] = [];
    const stack = db().middlewareStack;
    stack.add(
      (next, context) => async (args) => {
        const limit = (args.input as { Limit?: number }).Limit;
        if (context.commandName === 'QueryCommand' && limit !== undefined) limits.push(limit);
        return next(args);
      },
      { step: 'initialize', name: 'queryLimitSpy' },
    );
    try {
      const q = { index: 'gsi1' as const, partition: indexPartitions.customers(merchantId) };
      for (const offset of [2 ** 31 - 1, 2 ** 31, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
        expect(await queryPage(q, offset, 100), String(offset)).toEqual([]);
      }
      const page = await queryPage<{ email: string }>(q, 1, 100);
      expect(page.map((c) => c.email)).toEqual(['q2@example.com', 'q1@example.com']);
      expect(await queryPage(q, 3, 100)).toEqual([]);
    } finally {
      stack.remove('queryLimitSpy');
    }
    expect(limits.length).toBeGreaterThan(0);
    expect(Math.max(...limits)).toBeLessThanOrEqual(MAX_QUERY_LIMIT);
    expect(MAX_QUERY_LIMIT).toBeLessThan(2 ** 31);
  });
});
