/**
 * Back-office callers (docs/authentication-and-limits.md): a user of the platform's identity provider whose group gives
 * the role and whose `merchant_id` attribute gives the merchant. In AWS the HTTP API's JWT
 * authorizer (Cognito) verifies the token and passes its claims in
 * `requestContext.authorizer.jwt.claims`; locally the local server does the same with its
 * development key. Handlers only read those claims, never a header the caller sets.
 */
export const BACKOFFICE_ROLES = ['admin', 'user'] as const;
export type BackofficeRole = (typeof BACKOFFICE_ROLES)[number];

/** Claim names of a Cognito ID token (access tokens carry no custom attributes). */
export const CLAIMS = { merchant: 'custom:merchant_id', groups: 'cognito:groups' } as const;

/** The claims as found in the event, before the merchant is looked up. */
export type BackofficeClaims = { merchantId: string | null; role: BackofficeRole | null };

/**
 * Groups as API Gateway passes an array claim: one string, `[admin user]` (space-separated in
 * brackets); a JSON array, a comma list or a real array are read too.
 */
export const groupsOf = (raw: unknown): string[] => {
  if (Array.isArray(raw)) return raw.map(String);
  if (typeof raw !== 'string') return [];
  const text = raw.trim();
  if (text.startsWith('[') && text.endsWith(']')) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (Array.isArray(parsed)) return parsed.map(String);
    } catch {
      /* API Gateway's own form: [a b] */
    }
    return text
      .slice(1, -1)
      .split(/[\s,]+/)
      .filter(Boolean);
  }
  return text.split(/[\s,]+/).filter(Boolean);
};

/** `admin` when the user is in the admin group, else `user` when in the user group, else none. */
export const roleOf = (groups: string[]): BackofficeRole | null =>
  groups.includes('admin') ? 'admin' : groups.includes('user') ? 'user' : null;

/** Reads merchant and role from the authorizer's claims; anything missing or malformed is null. */
export const readClaims = (claims: Record<string, unknown> | undefined | null): BackofficeClaims => {
  const merchant = claims?.[CLAIMS.merchant];
  return {
    merchantId: typeof merchant === 'string' && /^mer_[0-9A-Za-z_-]{1,64}$/.test(merchant) ? merchant : null,
    role: roleOf(groupsOf(claims?.[CLAIMS.groups])),
  };
};
