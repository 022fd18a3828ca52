import { describe, expect, it } from 'vitest';
import { checkAnswer, type Answer } from '../support/contract.ts';

/**
 * The check every behaviour test's answers pass through (test/support/api.ts): a mismatch with the
 * OpenAPI document fails with the operation, the status and the validator's errors.
 */
const headers = (extra: Record<string, string> = {}) =>
  new Headers({
    'content-type': 'application/json',
    'x-request-id': 'a-request',
    'x-ratelimit-limit': '60',
    'x-ratelimit-remaining': '59',
    'x-ratelimit-reset': '1700000000',
    ...extra,
  });
const answer = (a: Partial<Answer>): Answer => ({
  method: 'GET',
  path: '/customers/99',
  status: 404,
  headers: headers(),
  text: '{"message":"Resource not found"}',
  ...a,
});

describe('the contract check of every answer', () => {
  it('passes an answer the document describes', async () => {
    await expect(checkAnswer(answer({}))).resolves.toBeUndefined();
    await expect(
      checkAnswer(
        answer({
          path: '/customers?per_page=1',
          status: 200,
          text: JSON.stringify({
            data: [],
            meta: { current_page: 1, from: null, last_page: 1, per_page: 1, to: null, total: 0, next_cursor: null },
          }),
        }),
      ),
    ).resolves.toBeUndefined();
  });

  it('fails a body that does not match the status schema, naming the operation and the status', async () => {
    await expect(checkAnswer(answer({ text: '{"msg":"x"}' }))).rejects.toThrow(
      /GET \/customers\/99 → customersGet 404[\s\S]*must have required property 'message'/,
    );
    await expect(checkAnswer(answer({ path: '/customers', status: 200, text: '{"data":[{}],"meta":{}}' }))).rejects.toThrow(
      /customersList 200[\s\S]*\/data\/0 must have required property/,
    );
  });

  it('fails an undocumented status, media type or body', async () => {
    await expect(checkAnswer(answer({ status: 418 }))).rejects.toThrow(/status 418 is not documented/);
    await expect(checkAnswer(answer({ headers: headers({ 'content-type': 'text/csv' }), text: 'a,b' }))).rejects.toThrow(
      /media type "text\/csv" is not documented/,
    );
  });

  it('fails a missing required header and a header of the wrong type', async () => {
    await expect(checkAnswer(answer({ headers: new Headers({ 'content-type': 'application/json' }) }))).rejects.toThrow(
      /required header X-Request-Id is missing/,
    );
    await expect(checkAnswer(answer({ headers: headers({ 'x-ratelimit-limit': 'sixty' }) }))).rejects.toThrow(
      /x-ratelimit-limit must be integer/,
    );
  });

  it("holds requests no operation matches to the catch-all's 404 or 405 with Allow (or the front door's 403)", async () => {
    await expect(checkAnswer(answer({ path: '/nowhere' }))).resolves.toBeUndefined();
    await expect(checkAnswer(answer({ path: '/nowhere', status: 200, text: '{}' }))).rejects.toThrow(/\(catch-all\) 200/);
    await expect(
      checkAnswer(answer({ path: '/nowhere', status: 403, text: '{"message":"This action is unauthorized."}' })),
    ).resolves.toBeUndefined();
    await expect(
      checkAnswer(answer({ method: 'PATCH', path: '/orders', status: 405, text: '{"message":"Method not allowed."}' })),
    ).rejects.toThrow(/Allow/);
    await expect(
      checkAnswer(
        answer({
          method: 'PATCH',
          path: '/orders',
          status: 405,
          headers: headers({ allow: 'GET, POST' }),
          text: '{"message":"Method not allowed."}',
        }),
      ),
    ).resolves.toBeUndefined();
  });
});
