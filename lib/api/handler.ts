import { RECOUNT_PENDING } from '#lib/shared/recount-pending-header';
import middy from '@middy/core';
import httpHeaderNormalizer from '@middy/http-header-normalizer';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyEventV2WithJWTAuthorizer,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import type { z } from 'zod';
import type { Ability } from '#lib/auth/abilities';
import { authenticate, bearerToken, stampTokenUse, type AuthContext } from '#lib/auth/tokens';
import { readClaims, type BackofficeRole } from '#lib/auth/backoffice';
import { backofficeClaimsOf, looksLikeJwt } from '#lib/auth/backoffice-jwt';
import { hitBackoffice, hitIp, hitMerchant, rateHeaders, retryAfter, type RateState } from '#lib/auth/rate-limit';
import { delinquencyDaysOf, figuresZoneOf, generationOf, recountingOf, type Merchant } from '#lib/merchants/rules';
import { getMerchant } from '#lib/merchants/store';
import {
  toHttpError,
  validationFailed,
  forbidden,
  invalidJson,
  methodNotAllowed,
  notFound,
  serverError,
  tooLarge,
  tooManyAttempts,
  unauthenticated,
} from '#lib/http/errors';
import { parseOr422 } from '#lib/http/validation';
import { authKindOf, BASE_PATH, type RouteDef } from '#lib/http/route';
import { allowedMethods } from '#lib/http/paths';
import { isFrontDoorSecret, ORIGIN_VERIFY_HEADER, viewerIpOf } from '#lib/http/front-door';
import { config } from '#lib/config';
import { captureLambdaHandler, injectLambdaContext, logMetrics } from '#lib/powertools';
import { logger } from '#lib/logger';
import { DEADLINE_MARGIN_MS, retrying, withDeadline } from '#lib/db/retry';
import { currentTally, withTally } from '#lib/db/client';
import { asFunction, WORKER_FUNCTIONS } from '#lib/shared/invocation';
import { addRequestMetrics, metrics, tracer } from '#lib/observability';

/** What the pipeline hands a back-office handler: the caller's merchant (read by key) and role. */
export type BackofficeIdentity = { merchant: Merchant; role: BackofficeRole };

export type ApiResult = { status: number; body?: unknown; headers?: Record<string, string> };

type Out<S> = S extends z.ZodType ? z.output<S> : Record<string, never>;
export type ApiRequest<R extends RouteDef> = {
  auth: R['ability'] extends null ? AuthContext | null : AuthContext;
  /** The back-office caller (routes with `auth: 'backoffice'`), from the JWT authorizer's claims. */
  identity: R['auth'] extends 'backoffice' ? BackofficeIdentity : null;
  params: Out<NonNullable<R['request']>['params']>;
  query: Out<NonNullable<R['request']>['query']>;
  body: Out<NonNullable<R['request']>['body']>;
  headers: Out<NonNullable<R['request']>['headers']>;
  requestId: string;
};

type Event = APIGatewayProxyEventV2;
type Result = APIGatewayProxyStructuredResultV2;
type Request = middy.Request<Event, Result, Error, Context>;

/** Per-invocation pipeline state, kept beside the event. `clientIp` is the caller's, for the per-IP window. */
type State = {
  requestId: string;
  started: number;
  auth: AuthContext | null;
  identity: BackofficeIdentity | null;
  rate?: RateState;
  clientIp: string;
};
const states = new WeakMap<Event, State>();
const state = (request: Request): State => states.get(request.event)!;

export const MAX_BODY_BYTES = 1024 * 1024;

const baseHeaders = (s: State | undefined): Record<string, string> => ({
  'Content-Type': 'application/json',
  // Answers are a merchant's data, some of them tokens and signing secrets: no cache or proxy keeps one.
  'Cache-Control': 'no-store',
  ...(s ? { 'X-Request-Id': s.requestId } : {}),
  ...(s?.rate ? rateHeaders(s.rate) : {}),
});

/**
 * `Recount-Pending: true` on the answers of routes that declare it, while the caller's merchant has
 * a recount running (its token lookup says so): their figures are those of the settings before the
 * change (lib/metrics/recount.ts). A handler that knows better (the PUT that started one) sets it itself.
 */
const recountHeader = (route: RouteDef | null, s: State | undefined, status: number): Record<string, string> =>
  s?.auth?.recount !== undefined && route?.responses[status as keyof typeof route.responses]?.headers?.[RECOUNT_PENDING] !== undefined
    ? { [RECOUNT_PENDING]: 'true' }
    : {};

const routeKey = (route: RouteDef | null) => (route ? `${route.method} ${route.path}` : 'unmatched');

/**
 * One access-log line and the request's metrics (published after the response by `logMetrics`);
 * the logger's per-request keys end with it.
 */
const recordRequest = (route: RouteDef | null, request: Request, response: Result) => {
  const s = states.get(request.event);
  const status = response.statusCode ?? 200;
  logger.info('request', { method: request.event.requestContext?.http?.method, status, ms: s ? Date.now() - s.started : undefined });
  addRequestMetrics(routeKey(route), status, response.headers ?? {}, currentTally());
};

/** Request id and logging in, headers, error bodies and metrics out (docs/api-conventions.md). */
const responder = (route: RouteDef | null): middy.MiddlewareObj<Event, Result> => ({
  before: (request) => {
    const requestId = request.event.requestContext?.requestId ?? request.context.awsRequestId;
    const clientIp = request.event.requestContext?.http?.sourceIp ?? 'unknown';
    states.set(request.event, { requestId, started: Date.now(), auth: null, identity: null, clientIp });
    logger.appendKeys({ request_id: requestId, route: routeKey(route) });
  },
  after: (request) => {
    const s = state(request);
    const res = request.response ?? { statusCode: 204 };
    request.response = {
      ...res,
      headers: { ...baseHeaders(s), ...recountHeader(route, s, res.statusCode ?? 200), ...(res.headers ?? {}) },
    };
    recordRequest(route, request, request.response);
  },
  onError: (request) => {
    const s = states.get(request.event);
    const err = request.error;
    let http = toHttpError(err);
    if (!http) {
      logger.error('unhandled error', err as Error);
      http = serverError();
    }
    request.response = {
      statusCode: http.status,
      headers: { ...baseHeaders(s), ...http.headers },
      body: JSON.stringify(http.body),
    };
    recordRequest(route, request, request.response);
  },
});

/**
 * The front door (lib/http/front-door.ts): with a secret configured, a request without it did not
 * come through CloudFront and is refused (403, before it is counted or costs a read); one with it
 * is counted per IP under the viewer's address CloudFront gives (`viewerIpOf`). The header is dropped from the
 * event either way, so nothing after this reads or logs it.
 */
const frontDoor = (): middy.MiddlewareObj<Event, Result> => ({
  before: (request) => {
    const secret = config.originVerifySecret();
    const headers = request.event.headers ?? {};
    const presented = headers[ORIGIN_VERIFY_HEADER];
    delete headers[ORIGIN_VERIFY_HEADER];
    if (!secret) return;
    if (!isFrontDoorSecret(presented, secret)) {
      logger.warn('request without the front-door secret', { source_ip: request.event.requestContext?.http?.sourceIp });
      throw forbidden();
    }
    const viewer = viewerIpOf(headers, request.event.requestContext?.http?.sourceIp);
    if (viewer) state(request).clientIp = viewer;
  },
});

/** Counts a request that carries no valid identity against its source IP: 429 past the limit. */
const countAnonymous = async (s: State) => {
  s.rate = await retrying(() => hitIp(s.clientIp));
  if (s.rate.exceeded) throw tooManyAttempts(retryAfter(s.rate));
};

/**
 * API token routes (and unknown routes): token lookup, then the rate counter (and, at most once a
 * minute, the token's last_used_at), then the ability. Requests without a valid token are counted per
 * source IP and get 429 past that limit instead of 401.
 */
const tokenAuth = async (route: RouteDef | null, request: Request, s: State) => {
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(request.event.headers?.authorization ?? '')?.[1];
  if (route?.dashboard && presented && looksLikeJwt(presented)) return dashboardAuth(route, presented, s);
  const token = bearerToken(request.event.headers?.authorization);
  const auth = token ? await retrying(() => authenticate(token)) : null;
  if (!auth) {
    await countAnonymous(s);
    if (route && authKindOf(route) === 'token') throw unauthenticated();
    return;
  }
  s.auth = auth;
  [s.rate] = await Promise.all([retrying(() => hitMerchant(auth.merchantId)), stampTokenUse(auth)]);
  if (s.rate.exceeded) throw tooManyAttempts(retryAfter(s.rate));
  if (route?.ability && !auth.abilities.includes(route.ability)) throw forbidden();
};

/**
 * A back-office caller, from verified claims: its merchant (no merchant claim, or a merchant that does
 * not exist: 401, counted per source IP), then the window it counts in, then its role (403).
 */
const backofficeCaller = async (
  claims: Record<string, unknown> | null | undefined,
  roles: readonly BackofficeRole[] | undefined,
  countIn: (merchantId: string) => Promise<RateState>,
  s: State,
): Promise<Merchant> => {
  const { merchantId, role } = readClaims(claims);
  const merchant = merchantId ? await retrying(() => getMerchant(merchantId)) : null;
  if (!merchant) {
    await countAnonymous(s);
    throw unauthenticated();
  }
  s.rate = await retrying(() => countIn(merchant.merchant_id));
  if (s.rate.exceeded) throw tooManyAttempts(retryAfter(s.rate));
  if (!role || !roles?.includes(role)) throw forbidden();
  s.identity = { merchant, role };
  return merchant;
};

/**
 * Back-office routes: the identity API Gateway's JWT authorizer verified (claims in the event; the
 * Authorization header itself is never read here), counted in the merchant's back-office window.
 */
const backofficeAuth = async (route: RouteDef, request: Request, s: State) => {
  const claims = (request.event as unknown as APIGatewayProxyEventV2WithJWTAuthorizer).requestContext?.authorizer?.jwt?.claims;
  await backofficeCaller(claims, route.roles, hitBackoffice, s);
};

/**
 * What every dashboard role reads anyway through routes open to it (`GET /orders`, `GET
 * /subscriptions`, both `dashboardRead`): a read that carries such a resource inside another (a
 * webhook delivery's body) shows it to the dashboard as those routes would. The route table is held
 * to it in `test/webhooks/payload-access.test.ts`.
 */
export const DASHBOARD_READS: readonly Ability[] = ['orders:read', 'subscriptions:read'];

/**
 * Token routes open to the dashboard, called with a back-office JWT: the pipeline verifies it (no
 * authorizer on the route), counts it in the merchant's hourly window as for its token, and checks
 * the role in place of the ability. The caller acts as its merchant with this route's ability only
 * (and DASHBOARD_READS, which decide what a response shows, never which route may be called).
 */
const dashboardAuth = async (route: RouteDef, jwt: string, s: State) => {
  const merchant = await backofficeCaller(await backofficeClaimsOf(jwt), route.dashboard?.roles, hitMerchant, s);
  s.auth = {
    merchantId: merchant.merchant_id,
    abilities: [route.ability!, ...DASHBOARD_READS],
    reportingCurrency: merchant.reporting_currency,
    timezone: figuresZoneOf(merchant),
    generation: generationOf(merchant),
    ...(recountingOf(merchant) === undefined ? {} : { recount: recountingOf(merchant) }),
    delinquencyDays: delinquencyDaysOf(merchant),
  };
};

/** Who is calling, by the route's auth kind (`none` and unknown routes still count a presented token). */
const authAndRateLimit = (route: RouteDef | null): middy.MiddlewareObj<Event, Result> => ({
  before: async (request) => {
    const s = state(request);
    if (route && authKindOf(route) === 'backoffice') await backofficeAuth(route, request, s);
    else await tokenAuth(route, request, s);
  },
});

/** JSON bodies (middy's parser), with docs/api-conventions.md's 400 and 413; empty bodies read as `{}`. */
const jsonBody = (route: RouteDef): middy.MiddlewareObj<Event, Result> => {
  // Any content type is read as JSON; the option exists at runtime but not in the package's typings.
  const parser = httpJsonBodyParser({ disableContentTypeCheck: true } as Parameters<typeof httpJsonBodyParser>[0]);
  return {
    before: async (request) => {
      if (!route.request?.body) return;
      const raw = request.event.body ?? '';
      const size = request.event.isBase64Encoded ? Math.floor((raw.length * 3) / 4) : Buffer.byteLength(raw);
      if (size > MAX_BODY_BYTES) throw tooLarge();
      if (raw.trim() === '') {
        (request.event as { body: unknown }).body = {};
        return;
      }
      try {
        await parser.before!(request as never);
      } catch {
        throw invalidJson();
      }
    },
  };
};

/** Headers validated by the route's schema; a 422 names `X-Idempotency-Key` as `idempotency_key`. */
const parseHeaders = (schema: z.ZodObject, headers: Record<string, string | undefined>) => {
  try {
    return parseOr422(schema, headers);
  } catch (err) {
    const http = toHttpError(err);
    const errors = http?.body.errors as Record<string, string[]> | undefined;
    if (!http || !errors) throw err;
    const field = (h: string) => h.replace(/^x-/, '').replace(/-/g, '_');
    throw validationFailed(
      Object.fromEntries(
        Object.entries(errors).map(([k, v]) => [field(k), v.map((m) => m.replace(k.replace(/_/g, ' '), field(k).replace(/_/g, ' ')))]),
      ),
    );
  }
};

/** API Gateway HTTP APIs hand path parameters over already URL-decoded; they are used as given. */
const pathParams = (params: Record<string, string | undefined> | undefined): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(params ?? {})) if (v !== undefined) out[k] = v;
  return out;
};

/**
 * The middlewares every invocation goes through, outermost first: Powertools adds the Lambda
 * context to every log line (and drops the request's keys after it), publishes the request's
 * metrics as one EMF line after everything else has run, and, when tracing is on, records the
 * invocation as a subsegment (never its response: bodies carry tokens and personal data); then
 * the responder, headers, the front door, and who is calling.
 */
const pipeline = (route: RouteDef | null) => {
  const chain = middy<Event, Result>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics(), { captureColdStartMetric: true }));
  if (tracer) chain.use(captureLambdaHandler(tracer, { captureResponse: false }));
  return chain.use(responder(route)).use(httpHeaderNormalizer()).use(frontDoor()).use(authAndRateLimit(route));
};

/**
 * Another form of a route's answer than JSON (lib/api/csv-handler.ts): a middleware that reads what
 * the caller asks for, and the answer in that form (null: JSON as usual). Only the routes that
 * offer it carry its code.
 */
export type AnswerForm = { negotiate: middy.MiddlewareObj<Event, Result>; render: (result: ApiResult, context: Context) => Result | null };

/**
 * The query parameters as the route's schema reads them: API Gateway's (a repeat joined with
 * commas), except the route's repeatable ones given more than once, which are the list of their
 * values from the raw query string.
 */
const queryOf = (
  event: { queryStringParameters?: Record<string, string | undefined> | null; rawQueryString?: string },
  repeatable: readonly string[] | undefined,
): Record<string, unknown> => {
  const query: Record<string, unknown> = { ...(event.queryStringParameters ?? {}) };
  if (!repeatable?.length || !event.rawQueryString) return query;
  const raw = new URLSearchParams(event.rawQueryString);
  for (const name of new Set(raw.keys())) {
    if (!repeatable.some((r) => (r.endsWith('.') ? name.startsWith(r) : name === r))) continue;
    const values = raw.getAll(name);
    if (values.length > 1) query[name] = values;
  }
  return query;
};

/**
 * Wraps a route's handler in the shared pipeline. The handler gets the validated params, query and
 * body, and returns a status and a body; everything HTTP lives here.
 */
export const apiHandler = <R extends RouteDef>(route: R, fn: (req: ApiRequest<R>) => Promise<ApiResult>, form?: AnswerForm) =>
  withInvocationDeadline(
    route.handler,
    pipeline(route)
      .use(form ? [jsonBody(route), form.negotiate] : [jsonBody(route)])
      .handler(async (event, context) => {
        const s = states.get(event)!;
        const req = {
          auth: s.auth,
          identity: s.identity,
          params: route.request?.params ? parseOr422(route.request.params, pathParams(event.pathParameters)) : {},
          query: route.request?.query ? parseOr422(route.request.query, queryOf(event, route.request.repeatable)) : {},
          body: route.request?.body ? parseOr422(route.request.body, event.body) : {},
          headers: route.request?.headers ? parseHeaders(route.request.headers, event.headers ?? {}) : {},
          requestId: s.requestId,
        } as ApiRequest<R>;
        const result = await fn(req);
        const rendered = form?.render(result, context);
        if (rendered) return rendered;
        return {
          statusCode: result.status,
          headers: result.headers,
          body: result.body === undefined ? '' : JSON.stringify(result.body),
        };
      }),
  );

/**
 * The catch-all for requests no route takes: counted like any request, then 405 with `Allow` when
 * the path is known (only the method is wrong), else 404.
 */
export const notFoundHandler = (routes: readonly { method: string; path: string }[]) =>
  withInvocationDeadline(
    WORKER_FUNCTIONS.notFound,
    pipeline(null).handler(async (event) => {
      const path = event.rawPath ?? '';
      const inBase = path === BASE_PATH || path.startsWith(`${BASE_PATH}/`);
      const allow = inBase ? allowedMethods(routes, path.slice(BASE_PATH.length)) : [];
      throw allow.length ? methodNotAllowed(allow) : notFound();
    }),
  );

/**
 * Every DynamoDB retry of the invocation (lib/db/retry.ts) stops in time to answer: the deadline is
 * the Lambda's remaining time less a margin for the answer and its log line. The invocation keeps
 * its own DynamoDB request tally (lib/db/client.ts), right under concurrency.
 */
const withInvocationDeadline = (name: string, handler: (event: Event, context: Context) => Promise<Result>) =>
  asFunction(
    name,
    (event: Event, context: Context): Promise<Result> =>
      withTally(() => withDeadline(Date.now() + context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS, () => handler(event, context))),
  );
