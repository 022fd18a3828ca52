import { createRemoteJWKSet, jwtVerify, errors, type JWTPayload, type JWTVerifyGetKey } from 'jose';

/**
 * THE verifier of back-office JWTs where our own code checks them: the dashboard's calls to token
 * routes that also accept the back-office identity (RouteDef `dashboard`; API Gateway puts no
 * authorizer on them, since an HTTP API route has one) and the local stand-in for API Gateway's JWT
 * authorizer. Same checks everywhere; only the key source differs: in AWS the Cognito pool's JWKS
 * (`BACKOFFICE_JWT_ISSUER` + `/.well-known/jwks.json`, set by CDK), locally the development key
 * (`infra/local/backoffice-jwt.ts` registers it with `useBackofficeVerifier`).
 */
export type BackofficeVerifier = { issuer: string; audience: string[]; keys: JWTVerifyGetKey };

/** Cognito (and the local key) sign RS256; API Gateway's authorizer accepts RSA only. */
export const BACKOFFICE_JWT_ALG = 'RS256';

let registered: BackofficeVerifier | null = null;
let fromEnv: { key: string; verifier: BackofficeVerifier } | null = null;

/** Local stack and tests: the development key instead of a remote JWKS. */
export const useBackofficeVerifier = (verifier: BackofficeVerifier | null) => {
  registered = verifier;
};

/** The verifier in force: the registered one, else the one the environment names, else none. */
export const backofficeVerifier = (env = process.env): BackofficeVerifier | null => {
  if (registered) return registered;
  const issuer = env.BACKOFFICE_JWT_ISSUER;
  const audience = (env.BACKOFFICE_JWT_AUDIENCE ?? '').split(',').filter(Boolean);
  if (!issuer || !audience.length) return null;
  // The issuer's JWKS; `BACKOFFICE_JWKS_URL` only where the issuer's address serves none (`npm start -- --bundles`).
  const jwks = env.BACKOFFICE_JWKS_URL || `${issuer.replace(/\/$/, '')}/.well-known/jwks.json`;
  const key = `${issuer} ${audience.join(',')} ${jwks}`;
  // One JWKS cache per container: jose fetches the keys once and again only for an unknown kid.
  if (fromEnv?.key !== key) fromEnv = { key, verifier: { issuer, audience, keys: createRemoteJWKSet(new URL(jwks)) } };
  return fromEnv.verifier;
};

/**
 * Verifies signature (RS256, a key of the source), issuer, audience, `exp` and `iat`, and that it is
 * an ID token (Cognito access tokens carry neither the merchant attribute nor an `aud`). Throws
 * jose's errors, which say why.
 */
export const verifyBackofficeJwt = async (jwt: string, verifier: BackofficeVerifier): Promise<JWTPayload> => {
  const { payload } = await jwtVerify(jwt, verifier.keys, {
    issuer: verifier.issuer,
    audience: verifier.audience,
    algorithms: [BACKOFFICE_JWT_ALG],
    requiredClaims: ['exp', 'iat'],
  });
  if (payload.token_use !== undefined && payload.token_use !== 'id')
    throw new errors.JWTClaimValidationFailed('not an ID token', payload, 'token_use');
  return payload;
};

/** A compact JWS: three base64url parts (an API token `ras_…` never has dots). */
export const looksLikeJwt = (value: string) => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(value);

/** The payload of a valid back-office JWT, or null (invalid, expired, or no verifier configured). */
export const backofficeClaimsOf = async (jwt: string): Promise<JWTPayload | null> => {
  const verifier = backofficeVerifier();
  if (!verifier) return null;
  try {
    return await verifyBackofficeJwt(jwt, verifier);
  } catch (err) {
    if (err instanceof errors.JOSEError) return null;
    throw err;
  }
};
