import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { BASE_PATH, type RouteDef } from '#lib/http/route';
import { NOT_FOUND_HANDLER, routeList } from '#lib/http/routes';

/**
 * The local API: an HTTP server that turns each request into the API Gateway (HTTP API, payload 2.0)
 * event the deployed function would get, and invokes the real handler from the route table.
 */
type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MAX_PAYLOAD = 10 * 1024 * 1024; // API Gateway's own limit; the pipeline enforces 1 MiB

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

/** API Gateway (HTTP API) passes path parameters URL-decoded; a malformed escape is passed as sent. */
const decodeSegment = (segment: string): string => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

const match = (compiled: Compiled[], method: string, path: string) => {
  const parts = path.split('/').filter((p, i) => i > 0 || p !== '');
  for (const c of compiled) {
    if (c.route.method !== method || c.segments.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < parts.length && ok; i++) {
      const seg = c.segments[i];
      if (seg.startsWith('{')) {
        if (parts[i] === '') ok = false;
        else params[seg.slice(1, -1)] = decodeSegment(parts[i]);
      } else ok = seg === parts[i];
    }
    if (ok) return { c, params };
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

const toEvent = (req: IncomingMessage, url: URL, body: Buffer, routeKey: string, params?: Record<string, string>): APIGatewayProxyEventV2 => {
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

const lambdaContext = (name: string, requestId: string): Context =>
  ({
    callbackWaitsForEmptyEventLoop: false,
    functionName: name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${name}`,
    memoryLimitInMB: '256',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => 30_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  }) as Context;

/** Builds the server (not yet listening). Handlers are loaded once, up front. */
export const createLocalServer = async (): Promise<Server> => {
  const compiled: Compiled[] = routeList.map((route) => ({
    route,
    segments: route.path.split('/').slice(1),
    handler: lazyHandler(route.handler),
  }));
  compiled.sort((a, b) => specificity(a.segments).localeCompare(specificity(b.segments)));
  const notFound = lazyHandler(NOT_FOUND_HANDLER);

  return createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`);
      const body = await readBody(req);
      if (body === 'too-large') {
        res.writeHead(413, { 'Content-Type': 'application/json' }).end(JSON.stringify({ message: 'The request body is too large.' }));
        return;
      }
      const method = (req.method ?? 'GET').toUpperCase();
      const inBase = url.pathname === BASE_PATH || url.pathname.startsWith(`${BASE_PATH}/`);
      const found = inBase ? match(compiled, method, url.pathname.slice(BASE_PATH.length)) : null;
      const routeKey = found ? `${found.c.route.method} ${BASE_PATH}${found.c.route.path}` : '$default';
      const event = toEvent(req, url, body, routeKey, found?.params);
      const handler = found ? found.c.handler : notFound;
      const result = await handler(event, lambdaContext(found?.c.route.name ?? 'notFound', event.requestContext.requestId));
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(result.headers ?? {})) headers[k] = String(v);
      res.writeHead(result.statusCode ?? 200, headers);
      res.end(result.body ?? '');
    } catch (err) {
      console.error('local server: handler failed', err);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ message: 'Server Error' }));
    }
  });
};
