import type { JWTPayload } from 'jose';
import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { isolatedClock, withEnv } from '../pipeline/support.ts';
import { LOCAL_BACKOFFICE_AUDIENCE, LOCAL_BACKOFFICE_ISSUER, signLocalJwt } from '../../infra/local/backoffice-jwt.ts';
import { backoffice, backofficeJwt, forgedJwt, OPERATIONS, type Operation } from './support.ts';

/** Who may do what (docs/authentication-and-limits.md), and who is refused before or in the pipeline. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
isolatedClock();
const api = useApi();

const UNAUTHORIZED = { message: 'Unauthorized' }; // API Gateway's JWT authorizer (the function never runs)
const UNAUTHENTICATED = { message: 'Unauthenticated.' };
const FORBIDDEN = { message: 'This action is unauthorized.' };

describe('back-office roles', () => {
  it('admin may do all four operations; user may only view (403 otherwise, nothing changed)', async () => {
    const { merchantId, token } = await newMerchant();
    const admin = await backofficeJwt(merchantId, 'admin');
    const user = await backofficeJwt(merchantId, 'user');

    const viewed = await backoffice(api, 'view', user);
    expect(viewed.status).toBe(200);
    expect(viewed.body.data).toEqual({
      prefix: token.slice(0, 8),
      last_four: token.slice(-4),
      abilities: expect.arrayContaining(['customers:read', 'webhooks:write', 'analytics:read']),
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      last_used_at: null,
    });
    expect(JSON.stringify(viewed.body)).not.toContain(token);
    expect((await backoffice(api, 'view', admin)).body).toEqual(viewed.body);

    for (const op of ['create', 'regenerate', 'revoke'] as Operation[]) {
      const refused = await backoffice(api, op, user);
      expect(refused.status, op).toBe(403);
      expect(refused.body, op).toEqual(FORBIDDEN);
    }
    // The user's refused attempts changed nothing: the token still works.
    expect((await api.get('/customers/1', token)).status).toBe(404);

    const created = await backoffice(api, 'create', admin);
    expect(created.status).toBe(409);
    expect(created.body).toEqual({ message: 'A valid token already exists. Revoke it before creating a new one.' });
    const regenerated = await backoffice(api, 'regenerate', admin);
    expect(regenerated.status).toBe(200);
    expect(regenerated.body.data.token).toMatch(/^ras_[0-9A-Za-z]{40,}$/);
    expect((await backoffice(api, 'revoke', admin)).status).toBe(204);
    expect((await backoffice(api, 'create', admin)).status).toBe(201);
  });

  it('an operation the role may not do is 403 even when it would be a 404 or 409', async () => {
    const { merchantId } = await newMerchant();
    const user = await backofficeJwt(merchantId, 'user');
    await backoffice(api, 'revoke', await backofficeJwt(merchantId, 'admin'));
    expect((await backoffice(api, 'view', user)).status).toBe(404);
    for (const op of ['regenerate', 'revoke', 'create'] as Operation[])
      expect((await backoffice(api, op, user)).body, op).toEqual(FORBIDDEN);
  });
});

describe('back-office identity', () => {
  const claimsFor = (merchantId: string, groups: string[] = ['admin']) => ({
    sub: 'u-1',
    'custom:merchant_id': merchantId,
    'cognito:groups': groups,
    token_use: 'id',
  });

  it('refuses, as API Gateway does, a missing, forged, unsigned, expired, wrong-audience or wrong-issuer JWT', async () => {
    const { merchantId } = await newMerchant();
    const claims = claimsFor(merchantId);
    const forged = await forgedJwt(claims);
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const unsigned = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, iss: LOCAL_BACKOFFICE_ISSUER, aud: LOCAL_BACKOFFICE_AUDIENCE, iat: now, exp: now + 3600 })}.`;
    const cases: [string, string | null, string | null][] = [
      ['no Authorization header', null, null],
      ['not a JWT', `ras_${'a'.repeat(44)}`, 'the token is not valid'],
      ['forged (another key)', forged, 'the token signature is invalid'],
      ['unsigned (alg none)', unsigned, 'the token is not valid'],
      ['expired', (await signLocalJwt(claims, { ttlSeconds: -60 })).token, 'the token has expired'],
      ['wrong audience', (await signLocalJwt(claims, { audience: 'someone-else' })).token, 'the token does not have a valid audience'],
      ['wrong issuer', (await signLocalJwt(claims, { issuer: 'https://evil.example' })).token, 'the token does not have a valid issuer'],
    ];
    for (const op of Object.keys(OPERATIONS) as Operation[]) {
      for (const [label, jwt, description] of cases) {
        const res = await backoffice(api, op, jwt);
        expect(res.status, `${op}: ${label}`).toBe(401);
        expect(res.body, `${op}: ${label}`).toEqual(UNAUTHORIZED);
        expect(res.headers.get('www-authenticate'), label).toBe(
          description ? `Bearer scope="" error="invalid_token" error_description="${description}"` : null,
        );
      }
    }
  });

  it('a valid JWT without a merchant claim, or naming an unknown merchant, is 401; without a known group 403', async () => {
    const { merchantId } = await newMerchant();
    const sign = async (claims: JWTPayload) => (await signLocalJwt(claims)).token;
    const { 'custom:merchant_id': _m, ...noMerchant } = claimsFor(merchantId);
    for (const [label, claims] of [
      ['no merchant claim', noMerchant],
      ['unknown merchant', claimsFor('mer_doesnotexist0000')],
      ['malformed merchant claim', claimsFor('M#mer_x#TOKEN')],
    ] as const) {
      for (const op of ['view', 'create'] as Operation[]) {
        const res = await backoffice(api, op, await sign(claims));
        expect(res.status, label).toBe(401);
        expect(res.body, label).toEqual(UNAUTHENTICATED);
      }
    }
    const { 'cognito:groups': _g, ...noGroups } = claimsFor(merchantId);
    for (const [label, claims] of [
      ['no group', noGroups],
      ['unknown group', claimsFor(merchantId, ['owners'])],
      ['empty groups', claimsFor(merchantId, [])],
    ] as const) {
      for (const op of ['view', 'revoke'] as Operation[]) {
        const res = await backoffice(api, op, await sign(claims));
        expect(res.status, label).toBe(403);
        expect(res.body, label).toEqual(FORBIDDEN);
      }
    }
    // Both groups: the stronger role.
    expect((await backoffice(api, 'regenerate', await sign(claimsFor(merchantId, ['user', 'admin'])))).status).toBe(200);
  });

  it('the merchant comes from the verified claims only: X-Merchant-Id and similar headers change nothing', async () => {
    const mine = await newMerchant();
    const theirs = await newMerchant();
    const admin = await backofficeJwt(mine.merchantId, 'admin');
    const spoof = { 'x-merchant-id': theirs.merchantId, 'x-amzn-oidc-data': 'x', 'custom-merchant-id': theirs.merchantId };
    const viewed = await backoffice(api, 'view', admin, spoof);
    expect(viewed.body.data.last_four).toBe(mine.token.slice(-4));
    expect((await backoffice(api, 'revoke', admin, spoof)).status).toBe(204);
    expect((await api.get('/customers/1', mine.token)).status).toBe(401);
    expect((await api.get('/customers/1', theirs.token)).status).toBe(404); // untouched
    // Without a JWT, a merchant header is no identity at all.
    expect((await backoffice(api, 'view', null, { 'x-merchant-id': theirs.merchantId })).body).toEqual(UNAUTHORIZED);
  });

  it('an API token is no back-office identity, and a back-office JWT is no API token', async () => {
    const { merchantId, token } = await newMerchant();
    expect((await backoffice(api, 'view', token)).body).toEqual(UNAUTHORIZED);
    const admin = await backofficeJwt(merchantId, 'admin');
    const res = await api.request('GET', '/orders/X-1', { headers: { authorization: `Bearer ${admin}` } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHENTICATED);
  });

  it('answers carry X-Request-Id and the back-office rate window headers', async () => {
    const { merchantId } = await newMerchant();
    const res = await backoffice(api, 'view', await backofficeJwt(merchantId, 'user'));
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(res.headers.get('x-ratelimit-limit')).toBe('60');
    expect(Number(res.headers.get('x-ratelimit-remaining'))).toBe(59);
  });
});

describe('back-office rate limit', () => {
  it('a window per merchant per minute, apart from the API token window: a busy token never blocks a revoke', async () => {
    const { merchantId, token } = await newMerchant();
    const admin = await backofficeJwt(merchantId, 'admin');
    await withEnv({ RATE_LIMIT_PER_HOUR: '1' }, async () => {
      expect((await api.get('/customers', token)).status).toBe(200);
      expect((await api.get('/customers', token)).status).toBe(429); // the token's hour is used up
      await withEnv({ BACKOFFICE_RATE_LIMIT_PER_MINUTE: '2' }, async () => {
        expect((await backoffice(api, 'view', admin)).status).toBe(200);
        const revoked = await backoffice(api, 'revoke', admin);
        expect(revoked.status).toBe(204);
        expect(revoked.headers.get('x-ratelimit-remaining')).toBe('0');
        const over = await backoffice(api, 'view', admin);
        expect(over.status).toBe(429);
        expect(over.body).toEqual({ message: 'Too Many Attempts.' });
        expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
        // Another merchant's back office has its own window.
        const other = await newMerchant();
        expect((await backoffice(api, 'view', await backofficeJwt(other.merchantId, 'user'))).status).toBe(200);
      });
    });
  });
});
