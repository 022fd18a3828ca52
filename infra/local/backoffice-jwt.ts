import { randomUUID } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT, errors, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { CLAIMS, type BackofficeRole } from '#lib/auth/backoffice';
import { BACKOFFICE_JWT_ALG, verifyBackofficeJwt, type BackofficeVerifier } from '#lib/auth/backoffice-jwt';
import { localStateFile } from './stack-file.ts';

/**
 * LOCAL ONLY: the local stand-in for Cognito and API Gateway's JWT authorizer. `npm run ops --
 * backoffice-token` signs ID-token-like JWTs with a development key pair kept in `.local/` (created
 * on first use, readable by anyone with the checkout); the local server verifies them here and
 * passes their claims to the handlers the way API Gateway does. Deployed stacks never read this
 * file: there Cognito signs and API Gateway verifies.
 */
export const LOCAL_BACKOFFICE_ISSUER = 'http://localhost/local-backoffice';
export const LOCAL_BACKOFFICE_AUDIENCE = 'revenue-analytics-local-backoffice';
const ALG = BACKOFFICE_JWT_ALG;
const KID = 'local-backoffice-1';

const keyFile = () => process.env.LOCAL_BACKOFFICE_KEY_FILE ?? localStateFile('backoffice-jwt-key.json');

type KeyPair = { privateKey: CryptoKey; publicKey: CryptoKey };
type StoredKey = { kid: string; private: JWK; public: JWK };

const readStored = (file: string): StoredKey => JSON.parse(readFileSync(file, 'utf8')) as StoredKey;

/** Creates the key file once: written aside, then linked into place (a concurrent creator's file wins). */
const createStored = async (file: string): Promise<StoredKey> => {
  const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
  const stored: StoredKey = { kid: KID, private: await exportJWK(privateKey), public: await exportJWK(publicKey) };
  mkdirSync(dirname(file), { recursive: true });
  const aside = `${file}.${randomUUID()}`;
  writeFileSync(aside, JSON.stringify(stored), { mode: 0o600 });
  try {
    linkSync(aside, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(aside, { force: true });
  }
  return readStored(file);
};

const keys = new Map<string, Promise<KeyPair>>();
const keyPair = (): Promise<KeyPair> => {
  const file = keyFile();
  let pair = keys.get(file);
  if (!pair) {
    pair = (async () => {
      let stored: StoredKey;
      try {
        stored = readStored(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        stored = await createStored(file);
      }
      return {
        privateKey: (await importJWK(stored.private, ALG)) as CryptoKey,
        publicKey: (await importJWK(stored.public, ALG)) as CryptoKey,
      };
    })();
    pair.catch(() => keys.delete(file));
    keys.set(file, pair);
  }
  return pair;
};

export type LocalTokenRequest = {
  merchantId: string;
  role: BackofficeRole;
  /** Lifetime in seconds (Cognito's ID tokens: 1 hour by default). */
  ttlSeconds?: number;
  email?: string;
};

/**
 * Signs claims with the local key, for the local issuer and audience unless told otherwise (tests
 * use the overrides to make tokens the authorizer must refuse).
 */
export const signLocalJwt = async (
  claims: JWTPayload,
  { ttlSeconds = 3600, issuer = LOCAL_BACKOFFICE_ISSUER, audience = LOCAL_BACKOFFICE_AUDIENCE } = {},
) => {
  const { privateKey } = await keyPair();
  const issuedAt = Math.floor(Date.now() / 1000);
  const expiresAt = issuedAt + ttlSeconds;
  const token = await new SignJWT(claims)
    .setProtectedHeader({ alg: ALG, kid: KID, typ: 'JWT' })
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt(issuedAt)
    .setExpirationTime(expiresAt)
    .sign(privateKey);
  return { token, expires_at: `${new Date(expiresAt * 1000).toISOString().slice(0, 19)}Z` };
};

/** A JWT shaped like a Cognito ID token of a back-office user, signed with the local key. */
export const issueLocalBackofficeToken = ({ merchantId, role, ttlSeconds, email }: LocalTokenRequest) =>
  signLocalJwt(
    {
      sub: `local|${email ?? `${role}@${merchantId}`}`,
      [CLAIMS.merchant]: merchantId,
      [CLAIMS.groups]: [role],
      token_use: 'id',
      ...(email ? { email } : {}),
    },
    { ttlSeconds },
  );

/**
 * Claims as API Gateway hands them to the function (payload 2.0): every value a string, arrays
 * written `[a b]` (so `cognito:groups` arrives as "[admin]").
 */
export const toGatewayClaims = (payload: JWTPayload): Record<string, string> =>
  Object.fromEntries(
    Object.entries(payload).map(([k, v]) => [
      k,
      Array.isArray(v) ? `[${v.join(' ')}]` : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v),
    ]),
  );

/**
 * Where the local server serves the development key's public half as a JWKS (`{ keys: [...] }`, as
 * Cognito serves its pool's): the function bundles of `npm start -- --bundles` fetch it as they fetch
 * Cognito's on AWS (their `BACKOFFICE_JWKS_URL`), since nothing answers at the local issuer's address.
 */
export const LOCAL_BACKOFFICE_JWKS_PATH = '/local-backoffice/.well-known/jwks.json';

/** The JWKS of the development key: its public key only. */
export const localBackofficeJwks = async (): Promise<{ keys: JWK[] }> => {
  await keyPair();
  const { kty, n, e } = readStored(keyFile()).public;
  return { keys: [{ kty, n, e, kid: KID, alg: ALG, use: 'sig' }] };
};

/** The development key as a key source of the one verifier (lib/auth/backoffice-jwt.ts). */
export const localBackofficeVerifier = (): BackofficeVerifier => ({
  issuer: LOCAL_BACKOFFICE_ISSUER,
  audience: [LOCAL_BACKOFFICE_AUDIENCE],
  keys: async (protectedHeader) => {
    if (protectedHeader.kid !== KID) throw new errors.JWKSNoMatchingKey();
    return (await keyPair()).publicKey;
  },
});

export type Verdict = { ok: true; claims: Record<string, string> } | { ok: false; description: string | null };

/** Why a token was refused, in the words API Gateway's `www-authenticate` header uses. */
const describe = (err: unknown): string => {
  if (err instanceof errors.JWTExpired) return 'the token has expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return 'the token does not have a valid audience';
    if (err.claim === 'iss') return 'the token does not have a valid issuer';
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the token signature is invalid';
  return 'the token is not valid';
};

/**
 * The local JWT authorizer: the Authorization header (`Bearer <jwt>` or the bare JWT, as API
 * Gateway takes it) must hold a JWT signed by the local key (RS256, its key id), not expired, for
 * the local issuer and audience. Anything else is refused, as API Gateway refuses it.
 */
export const verifyLocalBackofficeAuthorization = async (header: string | undefined): Promise<Verdict> => {
  const jwt = header?.trim().replace(/^Bearer\s+/i, '');
  if (!jwt) return { ok: false, description: null };
  try {
    const payload = await verifyBackofficeJwt(jwt, localBackofficeVerifier());
    return { ok: true, claims: toGatewayClaims(payload) };
  } catch (err) {
    if (err instanceof errors.JOSEError) return { ok: false, description: describe(err) };
    throw err;
  }
};

/** API Gateway's own answer when its JWT authorizer refuses a request (the function never runs). */
export const unauthorizedResponse = (verdict: Extract<Verdict, { ok: false }>, requestId: string) => ({
  status: 401,
  headers: {
    'Content-Type': 'application/json',
    'apigw-requestid': requestId,
    ...(verdict.description
      ? { 'www-authenticate': `Bearer scope="" error="invalid_token" error_description="${verdict.description}"` }
      : {}),
  },
  body: JSON.stringify({ message: 'Unauthorized' }),
});
