import type { z } from 'zod';
import { ABILITIES, type Ability } from '#lib/auth/abilities';
import type { BackofficeRole } from '#lib/auth/backoffice';

export { ABILITIES, type Ability, type BackofficeRole };

/**
 * Who may call a route, and how the caller is identified:
 * - `token`: the merchant's API token (`Authorization: Bearer ras_…`), which must carry `ability`;
 * - `backoffice`: a back-office user, identified by the JWT authorizer's claims (Cognito in AWS, the
 *   local server's development key locally), whose role must be one of `roles`;
 * - `none`: public (the OpenAPI document).
 */
export type AuthKind = 'token' | 'backoffice' | 'none';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One API endpoint: the single source for the CDK API, the local server and the OpenAPI document. */
export type RouteDef = {
  method: HttpMethod;
  /** Path below the `/v1` base, with `{param}` segments as API Gateway writes them. */
  path: string;
  /** Handler module, relative to the project root; it exports `handler`. */
  handler: string;
  /** Ability the token must carry; `null` for public and back-office routes (no API token). */
  ability: Ability | null;
  /** Absent: `token` when the route names an ability, `none` when not (see `authKindOf`). */
  auth?: AuthKind;
  /** Back-office routes: the roles (Cognito groups) allowed to call it. */
  roles?: readonly BackofficeRole[];
  /**
   * Token routes the merchant dashboard (web/) also calls with the back-office identity: a JWT
   * instead of the API token, verified by the pipeline itself (the route keeps no API Gateway
   * authorizer), acting for its `merchant_id` claim's merchant; the roles that may.
   */
  dashboard?: { roles: readonly BackofficeRole[] };
  summary: string;
  /** What the operation does, its rules in a sentence or three, and the docs/ page that has them all. */
  description: string;
  tags: string[];
  /** Whether the function writes data (drives its IAM grant). */
  writes: boolean;
  /**
   * The function encrypts webhook signing secrets (`lib/webhooks/secrets.ts`): in AWS it gets the
   * secrets key's id (`WEBHOOK_KMS_KEY_ID`) and kms:Encrypt on that key, nothing more; or it
   * decrypts them to sign a delivery: kms:Decrypt on that key, nothing more.
   */
  secrets?: 'encrypt' | 'decrypt';
  /** Function timeout when not FUNCTION_TIMEOUT_SECONDS (routes that call a merchant's webhook URL). */
  timeoutSeconds?: number;
  /**
   * The route's change starts a recount of the figures (lib/metrics/recount.ts): its function also
   * puts the next generation's settings items with BatchWriteItem, and the token's copy of the
   * figures' state.
   */
  recounts?: true;
  /** The route issues, replaces or revokes API tokens: the one kind of write route that may write token items. */
  tokens?: true;
  request?: {
    params?: z.ZodObject;
    query?: z.ZodObject;
    /**
     * Query parameters that may be given more than once (a name ending in `.` names a prefix, such
     * as `metadata.`): repeated, they reach the schema as an array of their values, read from the
     * raw query string (API Gateway joins repeats with commas, which a value may hold itself).
     */
    repeatable?: readonly string[];
    body?: z.ZodType;
    /** Request headers by lower-case name; a 422 names the field `x-foo-bar` → `foo_bar`. */
    headers?: z.ZodObject;
  };
  /** A metrics read or a list: `Accept: text/csv` gets its `data` as CSV (lib/http/csv.ts). */
  csv?: boolean;
  /** Responses the handler gives; `headers` are extra response headers (name → description). */
  responses: Record<number, { description: string; schema?: z.ZodType; headers?: Record<string, string> }>;
};

export const defineRoute = <R extends RouteDef>(route: R): R => {
  const kind = authKindOf(route);
  if ((kind === 'backoffice') !== Boolean(route.roles?.length) || (kind === 'backoffice' && route.ability !== null)) {
    throw new Error(`route ${route.method} ${route.path}: back-office routes name roles and no ability; other routes no roles`);
  }
  if (route.dashboard && (kind !== 'token' || !route.dashboard.roles.length)) {
    throw new Error(`route ${route.method} ${route.path}: only token routes open to the dashboard, for at least one role`);
  }
  return route;
};

/** The route's auth kind: the one it declares, else `token` with an ability and `none` without. */
export const authKindOf = (route: Pick<RouteDef, 'auth' | 'ability'>): AuthKind =>
  route.auth ?? (route.ability === null ? 'none' : 'token');

export const BASE_PATH = '/v1';

/** Every API function's timeout (CDK) and the deadline the local server gives each invocation. */
export const FUNCTION_TIMEOUT_SECONDS = 10;
