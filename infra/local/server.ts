import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { matchSegments, templateSegments } from '#lib/http/paths';
import { authKindOf, BASE_PATH, FUNCTION_TIMEOUT_SECONDS, type RouteDef } from '#lib/http/route';
import { NOT_FOUND_HANDLER, routeList } from '#lib/api/routes';
import { tallied } from '#lib/db/client';
import { useBackofficeVerifier } from '#lib/auth/backoffice-jwt';
import { WORKER_FUNCTIONS } from '#lib/shared/invocation';
import {
  LOCAL_BACKOFFICE_JWKS_PATH,
  localBackofficeJwks,
  localBackofficeVerifier,
  unauthorizedResponse,
  verifyLocalBackofficeAuthorization,
} from './backoffice-jwt.ts';
import { devReplayHandler, type DevReplayAnswer } from './dev-events.ts';
import { dashboardHandler, type DashboardOptions } from './dashboard.ts';

/**
 * The local API: an HTTP server that turns each request into the API Gateway (HTTP API, payload 2.0)
 * event the deployed function would get, and invokes the real handler from the route table.
 */
type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MAX_PAYLOAD = 10 * 1024 * 1024; // API Gateway's own limit; the pipeline enforces 1 MiB
/**
 * Request line plus headers. API Gateway HTTP APIs take 10,240 bytes of request line and header
 * values; Node also counts header names, so 16 KiB accepts everything API Gateway would (set here so
 * NODE_OPTIONS=--max-http-header-size cannot change it). Beyond it: a JSON 431 or 414 (clientError).
 */
export const MAX_HEADER_SIZE = 16 * 1024;

/** Imported on first use, like a Lambda cold start, and cached. */
const lazyHandler = (file: string): Handler => {
  let loaded: Promise<Handler> | undefined;
  return async (event, context) => {
    loaded ??= import(pathToFileURL(resolve(ROOT, file)).href).then((m) => m.handler as Handler);
    return (await loaded)(event, context);
  };
};

type Compiled = { route: RouteDef & { name: string }; segments: string[]; handler: Handler };

/** Static segments win over `{param}` ones, as in API Gateway. */
const specificity = (segments: string[]) => segments.map((s) => (s.startsWith('{') ? '1' : '0')).join('');

const match = (compiled: Compiled[], method: string, path: string) => {
  for (const c of compiled) {
    if (c.route.method !== method) continue;
    const params = matchSegments(c.segments, path);
    if (params) return { c, params };
  }
  return null;
};

const readBody = (req: IncomingMessage): Promise<Buffer | 'too-large'> =>
  new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_PAYLOAD) chunks.push(chunk);
    });
    req.on('end', () => resolveBody(size > MAX_PAYLOAD ? 'too-large' : Buffer.concat(chunks)));
    req.on('error', reject);
  });

const toEvent = (
  req: IncomingMessage,
  url: URL,
  body: Buffer,
  routeKey: string,
  params?: Record<string, string>,
): APIGatewayProxyEventV2 => {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
  }
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = k in query ? `${query[k]},${v}` : v;
  const requestId = randomUUID();
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.replace(/^\?/, ''),
    headers,
    queryStringParameters: Object.keys(query).length ? query : undefined,
    pathParameters: params && Object.keys(params).length ? params : undefined,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: url.host,
      domainPrefix: 'local',
      http: {
        method: req.method ?? 'GET',
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: (req.socket.remoteAddress ?? 'unknown').replace(/^::ffff:/, ''),
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey,
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
    },
    body: body.length ? body.toString('utf8') : undefined,
    isBase64Encoded: false,
  };
};

/** Milliseconds an invocation may run: the route's timeout (FUNCTION_TIMEOUT_SECONDS unless it names one), or LOCAL_FUNCTION_TIMEOUT_MS (read at each request). */
export const functionTimeoutMs = (env = process.env, timeoutSeconds = FUNCTION_TIMEOUT_SECONDS): number => {
  const override = Number(env.LOCAL_FUNCTION_TIMEOUT_MS);
  return env.LOCAL_FUNCTION_TIMEOUT_MS && Number.isFinite(override) && override > 0 ? override : timeoutSeconds * 1000;
};

/** The Lambda context of one invocation starting now: its deadline is the function timeout from now. */
export const lambdaContext = (name: string, requestId: string, startedAt = Date.now(), timeoutMs = functionTimeoutMs()): Context => {
  const deadline = startedAt + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${name}`,
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  } as Context;
};

const ERROR_MESSAGES: Record<number, string> = {
  400: 'The request is not valid HTTP.',
  408: 'The request took too long to arrive.',
  413: 'The request body is too large.',
  414: 'The request URI is too long.',
  431: 'Request header fields too large.',
};

/**
 * A request Node refuses before any handler runs (oversized head, malformed HTTP) still gets a JSON
 * body and an X-Request-Id (docs/api-conventions.md). No X-RateLimit-* headers: such a request is not counted.
 */
const answerClientError = (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  let status = 400;
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    // 414 when the chunk that overflowed starts a request whose request line alone is too long.
    const raw = err.rawPacket?.toString('latin1') ?? '';
    const lineEnd = raw.indexOf('\r\n');
    const startsRequest = /^[A-Z]+ /.test(raw);
    status = startsRequest && (lineEnd < 0 ? raw.length : lineEnd) > MAX_HEADER_SIZE ? 414 : 431;
  } else if (err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') status = 413;
  else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') status = 408;
  const body = JSON.stringify({ message: ERROR_MESSAGES[status] });
  socket.end(
    [
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${randomUUID()}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n'),
  );
  // The client may still be sending the rest of its head; the parser drains it. Close in any case.
  setTimeout(() => socket.destroy(), 5_000).unref();
};

/** Response headers carrying a request's own DynamoDB tally, for in-process measurement (tests, bench). */
export const TALLY_HEADERS = {
  requests: 'x-local-dynamodb-requests',
  capacity: 'x-local-dynamodb-capacity',
  commands: 'x-local-dynamodb-commands',
} as const;

export type LocalServerOptions = {
  /** Adds TALLY_HEADERS to every answer (never on by `npm start`): requests, capacity units, by command. */
  exposeRequestTally?: boolean;
  /** Serves the built web bundle outside /v1 (infra/local/dashboard.ts). */
  dashboard?: DashboardOptions;
  /**
   * Invokes a function by name (route name, or `notFound`) instead of importing its source: `npm
   * start -- --bundles` hands the event to the function's bundle under Node 22 (infra/local/bundle-runtime.ts).
   */
  invoke?: (name: string, event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;
  /** `POST /dev/events/replay` for `ops events replay`, from this machine only (infra/local/dev-events.ts). */
  devReplay?: (input: unknown) => Promise<DevReplayAnswer>;
};

/** Builds the server (not yet listening). Handlers are loaded once, up front. */
export const createLocalServer = async ({
  exposeRequestTally = false,
  dashboard: dashboardOptions,
  invoke,
  devReplay,
}: LocalServerOptions = {}): Promise<Server> => {
  // Dashboard routes verify back-office JWTs in the pipeline: here with the development key.
  useBackofficeVerifier(localBackofficeVerifier());
  const dashboard = dashboardOptions ? dashboardHandler(dashboardOptions) : null;
  const dev = devReplay ? devReplayHandler(devReplay) : null;
  const handlerOf = (name: string, file: string): Handler =>
    invoke ? (event, context) => invoke(name, event, context) : lazyHandler(file);
  const compiled: Compiled[] = routeList.map((route) => ({
    route,
    segments: templateSegments(route.path),
    handler: handlerOf(route.name, route.handler),
  }));
  compiled.sort((a, b) => specificity(a.segments).localeCompare(specificity(b.segments)));
  const notFound = handlerOf(WORKER_FUNCTIONS.notFound, NOT_FOUND_HANDLER);

  const server = createServer({ maxHeaderSize: MAX_HEADER_SIZE }, async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`);
      const body = await readBody(req);
      if (body === 'too-large') {
        res.writeHead(413, { 'Content-Type': 'application/json' }).end(JSON.stringify({ message: 'The request body is too large.' }));
        return;
      }
      const method = (req.method ?? 'GET').toUpperCase();
      const inBase = url.pathname === BASE_PATH || url.pathname.startsWith(`${BASE_PATH}/`);
      if (!inBase && method === 'GET' && url.pathname === LOCAL_BACKOFFICE_JWKS_PATH) {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(await localBackofficeJwks()));
        return;
      }
      if (!inBase && dev && (await dev(req, res, url, body.toString('utf8')))) return;
      if (!inBase && dashboard && (await dashboard(req, res, url))) return;
      const found = inBase ? match(compiled, method, url.pathname.slice(BASE_PATH.length)) : null;
      const routeKey = found ? `${found.c.route.method} ${BASE_PATH}${found.c.route.path}` : '$default';
      const event = toEvent(req, url, body, routeKey, found?.params);
      // Back-office routes sit behind API Gateway's JWT authorizer: it refuses a request without a
      // valid JWT before any function runs, else passes the JWT's claims in the event.
      if (found && authKindOf(found.c.route) === 'backoffice') {
        const verdict = await verifyLocalBackofficeAuthorization(event.headers.authorization);
        if (!verdict.ok) {
          const refused = unauthorizedResponse(verdict, event.requestContext.requestId);
          res.writeHead(refused.status, refused.headers).end(refused.body);
          return;
        }
        (event.requestContext as { authorizer?: unknown }).authorizer = { jwt: { claims: verdict.claims, scopes: null } };
      }
      const handler = found ? found.c.handler : notFound;
      const timeoutMs = functionTimeoutMs(process.env, found?.c.route.timeoutSeconds);
      const context = lambdaContext(found?.c.route.name ?? 'notFound', event.requestContext.requestId, Date.now(), timeoutMs);
      const { result, tally } = await tallied(() => handler(event, context));
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(result.headers ?? {})) headers[k] = String(v);
      // API Gateway (HTTP API) adds its request id to every answer; the function's is the same id.
      headers['apigw-requestid'] ??= event.requestContext.requestId;
      if (exposeRequestTally) {
        headers[TALLY_HEADERS.requests] = String(tally.total);
        headers[TALLY_HEADERS.capacity] = String(tally.capacityUnits);
        headers[TALLY_HEADERS.commands] = JSON.stringify(tally.byCommand);
      }
      res.writeHead(result.statusCode ?? 200, headers);
      res.end(result.body ?? '');
    } catch (err) {
      console.error('local server: handler failed', err);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ message: 'Server Error' }));
    }
  });
  // Node emits clientError for every further chunk of a refused request: answer the first only.
  const answered = new WeakSet<Duplex>();
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    answerClientError(err, socket);
  });
  return server;
};
