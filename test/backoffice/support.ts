import type { BackofficeRole } from '#lib/auth/backoffice';
import { generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { issueLocalBackofficeToken, LOCAL_BACKOFFICE_AUDIENCE, LOCAL_BACKOFFICE_ISSUER } from '../../infra/local/backoffice-jwt.ts';
import type { useApi } from '../support/api.ts';

type Api = ReturnType<typeof useApi>;

/** A back-office JWT from the local development key, as `npm run ops -- backoffice-token` issues it. */
export const backofficeJwt = async (merchantId: string, role: BackofficeRole) =>
  (await issueLocalBackofficeToken({ merchantId, role })).token;

/** The four back-office operations, as (method, path) pairs. */
export const OPERATIONS = {
  view: ['GET', '/backoffice/api-token'],
  create: ['POST', '/backoffice/api-token'],
  regenerate: ['POST', '/backoffice/api-token/regenerate'],
  revoke: ['DELETE', '/backoffice/api-token'],
} as const;
export type Operation = keyof typeof OPERATIONS;

/** Calls a back-office operation with `Authorization: Bearer <jwt>` (or with the headers given). */
export const backoffice = (api: Api, op: Operation, jwt: string | null, headers: Record<string, string> = {}) => {
  const [method, path] = OPERATIONS[op];
  return api.request(method, path, { headers: { ...(jwt ? { authorization: `Bearer ${jwt}` } : {}), ...headers } });
};

/** A JWT like the local key's (same kid, issuer, audience) but signed with another key. */
export const forgedJwt = async (claims: JWTPayload) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: 'local-backoffice-1' })
    .setIssuer(LOCAL_BACKOFFICE_ISSUER)
    .setAudience(LOCAL_BACKOFFICE_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign((await generateKeyPair('RS256')).privateKey);
