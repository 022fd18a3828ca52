import { describe, expect, it } from 'vitest';
import { useApi } from '../support/api.ts';
import { isolatedClock } from '../pipeline/support.ts';

/** The OpenAPI document names both security schemes and which operations use which. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
isolatedClock();
const api = useApi();

describe('OpenAPI security schemes', () => {
  it('declares the API token and the back-office JWT; back-office operations use the JWT and name their roles', async () => {
    const { body: doc } = await api.get('/openapi.json');
    expect(doc.components.securitySchemes).toEqual({
      bearerAuth: { type: 'http', scheme: 'bearer', description: expect.stringContaining('ras_') },
      backofficeJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: expect.stringContaining('Cognito') },
    });
    const token = doc.paths['/backoffice/api-token'];
    expect(token.get).toMatchObject({
      security: [{ backofficeJwt: ['admin', 'user'] }],
      'x-backoffice-roles': ['admin', 'user'],
      tags: ['backoffice'],
    });
    expect(token.post).toMatchObject({ security: [{ backofficeJwt: ['admin'] }], 'x-backoffice-roles': ['admin'] });
    expect(token.delete).toMatchObject({ security: [{ backofficeJwt: ['admin'] }], 'x-backoffice-roles': ['admin'] });
    expect(doc.paths['/backoffice/api-token/regenerate'].post).toMatchObject({
      security: [{ backofficeJwt: ['admin'] }],
      'x-backoffice-roles': ['admin'],
    });
    for (const op of [token.get, token.post, token.delete]) {
      expect(op['x-required-ability']).toBeUndefined();
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '403', '429']));
    }
    expect(Object.keys(token.post.responses)).toEqual(expect.arrayContaining(['201', '409']));
    expect(Object.keys(token.delete.responses)).toEqual(expect.arrayContaining(['204', '404']));
    // The shown token: only in the 201 and regenerate answers, never in the view.
    const schema = (ref: string) => doc.components.schemas[ref.split('/').pop()!];
    const view = schema(token.get.responses['200'].content['application/json'].schema.properties.data.$ref);
    expect(Object.keys(view.properties).sort()).toEqual(['abilities', 'created_at', 'last_four', 'last_used_at', 'prefix']);
    const issued = schema(token.post.responses['201'].content['application/json'].schema.properties.data.$ref);
    expect(Object.keys(issued.properties)).toContain('token');
    // Token routes keep the bearer token and their ability.
    expect(doc.paths['/customers'].post).toMatchObject({
      security: [{ bearerAuth: ['customers:write'] }],
      'x-required-ability': 'customers:write',
    });
    expect(doc.paths['/openapi.json'].get.security).toEqual([]);
  });

  it("says what API Gateway answers itself: a back-office 401 may come without the API's headers; a write's 409 carries Retry-After", async () => {
    const { body: doc } = await api.get('/openapi.json');
    const token = doc.paths['/backoffice/api-token'];
    for (const op of [
      token.get,
      token.post,
      token.delete,
      doc.paths['/backoffice/api-token/regenerate'].post,
      doc.paths['/backoffice/me'].get,
    ]) {
      const unauthorized = op.responses['401'];
      expect(unauthorized.description).toContain('{"message": "Unauthorized"}');
      expect(unauthorized.headers['apigw-requestid'].required).toBe(true);
      for (const name of ['X-Request-Id', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'WWW-Authenticate']) {
        expect(unauthorized.headers[name].required, name).toBe(false);
      }
      // Every other answer is the function's, with the API's headers.
      expect(op.responses['403'].headers['X-Request-Id']).toEqual({ $ref: '#/components/headers/XRequestId' });
    }
    // Token routes are authorised by the function: their 401 keeps the API's headers.
    expect(doc.paths['/customers'].get.responses['401']?.headers?.['apigw-requestid']).toBeUndefined();
    // Regenerate and revoke answer a lost race 409 with Retry-After (test/backoffice/lifecycle.test.ts); create's 409 is a state, without.
    for (const op of [doc.paths['/backoffice/api-token/regenerate'].post, token.delete]) {
      expect(op.responses['409'].headers['Retry-After']).toEqual({ $ref: '#/components/headers/RetryAfter' });
    }
    expect(token.post.responses['409'].headers['Retry-After']).toBeUndefined();
    expect(doc.components.headers.RetryAfter.required).toBe(true);
  });
});
