import { createDocument, createSchema, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
import { routeList } from '#lib/api/routes';
import { authKindOf, BASE_PATH, type RouteDef } from '#lib/http/route';
import { customerBatchItem } from '#lib/customers/schemas';
import { orderBatchItem } from '#lib/orders/schemas';
import { messageBody } from '#lib/shared/schemas';
import { subscriptionBatchItem, subscriptionEventBatchItem } from '#lib/subscriptions/schemas';

/** Headers every response carries (docs/api-conventions.md), declared once and referenced by each response. */
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const integerHeader = (description: string) => ({ description, required: true, schema: { type: 'integer' as const } });
const commonHeaders = {
  'X-Request-Id': headerRef('XRequestId'),
  'X-RateLimit-Limit': headerRef('XRateLimitLimit'),
  'X-RateLimit-Remaining': headerRef('XRateLimitRemaining'),
  'X-RateLimit-Reset': headerRef('XRateLimitReset'),
};

const rateLimitedHeaders = { ...commonHeaders, 'Retry-After': headerRef('RetryAfter') };
/** What the X-RateLimit-* headers say, wherever they are declared. */
const RATE_LIMIT_HEADERS = {
  limit: 'Requests allowed in the current window',
  remaining: 'Requests left in the current window',
  reset: 'Unix time at which the current window ends',
};

/**
 * A 500 or 503 can come before the request was counted (DynamoDB throttled or failed the token
 * lookup or the rate counter itself), and so does the front door's 403: then it carries no
 * X-RateLimit-* headers.
 */
const ifCounted = (description: string) => ({
  description: `${description}; absent if the request was not counted`,
  required: false,
  schema: { type: 'integer' as const },
});
const failureHeaders = {
  'X-Request-Id': headerRef('XRequestId'),
  'X-RateLimit-Limit': ifCounted(RATE_LIMIT_HEADERS.limit),
  'X-RateLimit-Remaining': ifCounted(RATE_LIMIT_HEADERS.remaining),
  'X-RateLimit-Reset': ifCounted(RATE_LIMIT_HEADERS.reset),
};

type ResponseHeaders = Record<string, ReturnType<typeof headerRef> | ReturnType<typeof ifCounted>>;
const message = (description: string, headers: ResponseHeaders = commonHeaders) => ({
  description,
  headers,
  content: { 'application/json': { schema: messageBody } },
});

/**
 * The front door (docs/deployment-and-protection.md): a stack deployed behind CloudFront refuses a
 * request that did not come through it (sent to the execute-api address instead of the API's URL),
 * before anything else, on every route.
 */
const FRONT_DOOR_403 = 'Behind CloudFront, a request sent round it (to the execute-api address) is refused first, uncounted';

/** Errors any operation can answer, whatever its route declares. */
const pipelineResponses = (route: RouteDef) => ({
  ...(route.request?.body
    ? { 400: message('The request body is not valid JSON'), 413: message('The request body is larger than 1 MiB') }
    : {}),
  429: message('Too many requests', rateLimitedHeaders),
  ...(route.writes
    ? {
        409: message(
          "Concurrent requests kept changing the resource until the deadline, or the merchant's figures are being recounted for a settings change; nothing was stored, retry after Retry-After seconds (conflicts of state, such as a valid token existing, carry no Retry-After)",
          rateLimitedHeaders,
        ),
      }
    : {}),
  403: message(FRONT_DOOR_403, failureHeaders),
  500: message('Server error', failureHeaders),
  503: message(
    'DynamoDB kept throttling until the deadline (nothing was stored), or did not answer (a timeout: the outcome is unknown, retry idempotently); retry after Retry-After seconds',
    {
      ...failureHeaders,
      'Retry-After': headerRef('RetryAfter'),
    },
  ),
});

/**
 * Who may call: the API token with the route's ability, or a back-office JWT with one of its roles
 * (OpenAPI 3.1 lets any scheme list the roles it needs, as OAuth lists scopes); none when public.
 * The `x-` extensions say the same for tools that read them.
 */
const security = (route: RouteDef): { security: Record<string, string[]>[]; [extension: `x-${string}`]: unknown } => {
  switch (authKindOf(route)) {
    case 'token':
      // Alternatives: the API token, or (dashboard routes) a back-office JWT whose role is listed.
      return route.dashboard
        ? {
            security: [{ bearerAuth: [route.ability!] }, { backofficeJwt: [...route.dashboard.roles] }],
            'x-required-ability': route.ability,
            'x-backoffice-roles': route.dashboard.roles,
          }
        : { security: [{ bearerAuth: [route.ability!] }], 'x-required-ability': route.ability };
    case 'backoffice':
      return { security: [{ backofficeJwt: [...route.roles!] }], 'x-backoffice-roles': route.roles };
    case 'none':
      return { security: [] };
  }
};

/** The description, with who may call it spelled out. */
const describe = (route: RouteDef): string => {
  const who =
    authKindOf(route) === 'token'
      ? `Requires an API token with the \`${route.ability}\` ability${route.dashboard ? `, or a back-office ID token (role ${route.dashboard.roles.join(' or ')})` : ''}.`
      : authKindOf(route) === 'backoffice'
        ? `Back office: an ID token of role ${route.roles!.join(' or ')}.`
        : 'Public.';
  return `${route.description}\n\n${who}`;
};

/** Routes whose body may be left out: the pipeline reads a missing body as `{}`. */
const bodyRequired = (body: NonNullable<NonNullable<RouteDef['request']>['body']>): boolean => !body.safeParse({}).success;

const optionalString = (description: string) => ({ description, required: false, schema: { type: 'string' as const } });
/**
 * A back-office route's 401 comes from one of two places. API Gateway's JWT authorizer answers a
 * missing or invalid ID token itself, before any function runs: `{"message": "Unauthorized"}` with
 * `WWW-Authenticate` and API Gateway's own `apigw-requestid`, and none of the API's headers (an HTTP
 * API cannot add headers to its own answers). The function answers a valid token whose merchant
 * does not exist, with every header. So the API's headers are declared optional here.
 */
const gatewayUnauthorizedHeaders = {
  'apigw-requestid': {
    description: "API Gateway's id of the request, on every answer (equal to X-Request-Id when the function answered)",
    required: true,
    schema: { type: 'string' as const },
  },
  'WWW-Authenticate': optionalString("Only on the authorizer's answer: `Bearer` and the reason the ID token was refused"),
  'X-Request-Id': optionalString('Only when the function answered (the merchant does not exist)'),
  'X-RateLimit-Limit': optionalString('Only when the function answered'),
  'X-RateLimit-Remaining': optionalString('Only when the function answered'),
  'X-RateLimit-Reset': optionalString('Only when the function answered'),
};
const GATEWAY_UNAUTHORIZED_NOTE =
  ' API Gateway\'s JWT authorizer answers a missing or invalid ID token itself: {"message": "Unauthorized"}, with WWW-Authenticate and apigw-requestid but without X-Request-Id or X-RateLimit-*.';

/** A CSV answer (`Accept: text/csv`, docs/api-conventions.md): `data` as rows; a list's paging in headers. */
const csvContent = {
  'text/csv': {
    schema: {
      type: 'string' as const,
      description: 'UTF-8 CSV: a header row (the fields of `data`), then one row per item; with Accept: text/csv',
    },
  },
};
const csvHeaders = {
  'X-Total-Count': optionalString('CSV answers of a list: `meta.total`'),
  'X-Next-Cursor': optionalString('CSV answers of a list: `meta.next_cursor`, when there is a next page'),
};

/**
 * OpenAPI links from each create to the read of what it created: the new resource's key, taken from
 * the 201 body, fills the read's path parameter (tools follow them; test/pipeline/openapi.test.ts
 * checks each names a real operation, its path parameters and a field of the answer).
 */
export const CREATE_LINKS: Record<
  string,
  Record<string, { operationId: string; parameters: Record<string, string>; description: string }>
> = {
  customersCreate: {
    GetCustomer: {
      operationId: 'customersGet',
      parameters: { idOrExternalId: '$response.body#/data/id' },
      description: 'The created customer, by its id',
    },
  },
  ordersCreate: {
    GetOrder: {
      operationId: 'ordersGet',
      parameters: { orderNo: '$response.body#/data/order_no' },
      description: 'The created order, by its order_no',
    },
  },
  subscriptionsCreate: {
    GetSubscription: {
      operationId: 'subscriptionsGet',
      parameters: { id: '$response.body#/data/id' },
      description: 'The created subscription, by its id',
    },
  },
  webhookEndpointsCreate: {
    GetWebhookEndpoint: {
      operationId: 'webhookEndpointsGet',
      parameters: { id: '$response.body#/data/id' },
      description: 'The created webhook endpoint, by its id',
    },
  },
};

const operation = (route: RouteDef & { name: string }): ZodOpenApiOperationObject => {
  const gateway401 = authKindOf(route) === 'backoffice';
  const declared = Object.fromEntries(
    Object.entries(route.responses).map(([status, r]) => [
      status,
      {
        description:
          gateway401 && status === '401'
            ? `${r.description}.${GATEWAY_UNAUTHORIZED_NOTE}`
            : status === '403'
              ? `${r.description}. Or: ${FRONT_DOOR_403}.`
              : r.description,
        headers: {
          ...(gateway401 && status === '401'
            ? gatewayUnauthorizedHeaders
            : status === '429'
              ? rateLimitedHeaders
              : status === '403'
                ? failureHeaders
                : commonHeaders),
          ...Object.fromEntries(
            Object.entries(r.headers ?? {}).map(([name, description]) => [name, { description, schema: { type: 'string' as const } }]),
          ),
          ...(route.csv && status === '200' ? csvHeaders : {}),
        },
        ...(r.schema
          ? { content: { 'application/json': { schema: r.schema }, ...(route.csv && status === '200' ? csvContent : {}) } }
          : {}),
        ...(status === '201' && CREATE_LINKS[route.name] ? { links: CREATE_LINKS[route.name] } : {}),
      },
    ]),
  );
  return {
    operationId: route.name,
    summary: route.summary,
    description: describe(route),
    tags: route.tags,
    ...security(route),
    requestParams: {
      ...(route.request?.params ? { path: route.request.params } : {}),
      ...(route.request?.query ? { query: route.request.query } : {}),
      ...(route.request?.headers ? { header: route.request.headers } : {}),
    },
    ...(route.request?.body
      ? { requestBody: { required: bodyRequired(route.request.body), content: { 'application/json': { schema: route.request.body } } } }
      : {}),
    responses: { ...pipelineResponses(route), ...declared },
  };
};

/**
 * The item schemas batch bodies refer to (`batchItems`), rendered as request input (their
 * transforms are what the server does with an item, not part of what a client sends).
 */
const batchItemSchemas = () => {
  const items = {
    CustomerBatchItem: customerBatchItem,
    OrderBatchItem: orderBatchItem,
    SubscriptionBatchItem: subscriptionBatchItem,
    SubscriptionEventBatchItem: subscriptionEventBatchItem,
  };
  const out: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(items)) {
    const { schema: json, components } = createSchema(schema, { io: 'input', schemaRefPath: '#/components/schemas/' });
    Object.assign(out, components, { [name]: json });
  }
  return out as NonNullable<NonNullable<Parameters<typeof createDocument>[0]['components']>['schemas']>;
};

/** The OpenAPI 3.1 document, generated from the route table's zod schemas. */
export const openApiDocument = () => {
  const paths: ZodOpenApiPathsObject = {};
  for (const route of routeList as (RouteDef & { name: string })[]) {
    const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
    (paths[route.path] ??= {})[method] = operation(route);
  }
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Revenue Analytics API',
      version: '1.0.0',
      license: { name: 'Proprietary, all rights reserved', identifier: 'LicenseRef-Proprietary' },
      contact: { name: 'The Revenue Analytics API maintainers (docs/ in the repository)' },
      description:
        'Every response carries X-Request-Id, and X-RateLimit-* once the request was counted. Requests no operation matches: an unknown path 404 {"message": "Resource not found"}; a method the path does not serve 405 {"message": "Method not allowed."} with Allow. ' +
        FRONT_DOOR_403 +
        ', on any path: 403 {"message": "This action is unauthorized."}.',
    },
    servers: [{ url: BASE_PATH }],
    components: {
      schemas: batchItemSchemas(),
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'API token: ras_ followed by 40+ base62 characters' },
        backofficeJwt: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'Back-office routes: the ID token of a back-office user of the stack\'s Cognito user pool (group admin or user, attribute custom:merchant_id), verified by API Gateway\'s JWT authorizer, which answers 401 {"message": "Unauthorized"} itself to a missing or invalid one. Locally: `npm run ops -- backoffice-token`. Operations that list both schemes (the dashboard\'s reads and webhook test) take it in place of the API token, verified by the function (an invalid one: 401 {"message": "Unauthenticated."}); `x-backoffice-roles` names the roles that may.',
        },
      },
      headers: {
        XRequestId: {
          description: 'Identifier of this request (quote it when reporting a problem)',
          required: true,
          schema: { type: 'string' },
        },
        XRateLimitLimit: integerHeader(RATE_LIMIT_HEADERS.limit),
        XRateLimitRemaining: integerHeader(RATE_LIMIT_HEADERS.remaining),
        XRateLimitReset: integerHeader(RATE_LIMIT_HEADERS.reset),
        RetryAfter: integerHeader('Seconds to wait before retrying'),
      },
    },
    paths,
  });
};
