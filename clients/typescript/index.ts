import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from './schema.ts';

export type { components, operations, paths } from './schema.ts';

/**
 * The API's typed client: openapi-fetch over the types openapi-typescript generates from the
 * OpenAPI document (`schema.ts`, `npm run client:generate`), plus what the document cannot say:
 * the bearer token on every request, an idempotency key on every POST that takes one, retries of
 * 429 and 503 after their Retry-After (bounded), and iteration over a list's pages by
 * `meta.next_cursor`. docs/typed-client.md has the usage.
 */
export type ApiClient = Client<paths, 'application/json'>;

export type RetryOptions = {
  /** Attempts in all, the first included (default 4; 1 turns retries off). */
  attempts?: number;
  /** The longest pause before one retry, whatever Retry-After asks (default 30 s). */
  maxDelayMs?: number;
  /** The statuses retried (default 429 and 503). */
  statuses?: readonly number[];
  /** Whether a request that got no answer at all (a network error) is retried (default true). */
  networkErrors?: boolean;
  /** Told before each pause: the status (null: no answer) and how long. */
  onRetry?: (retry: { method: string; url: string; attempt: number; status: number | null; delayMs: number }) => void;
  /** How to wait (tests pass a fake). */
  sleep?: (ms: number) => Promise<void>;
};

export type ApiClientOptions = {
  /** The API's base URL, `/v1` included: `https://api.example.com/v1`, `http://127.0.0.1:3000/v1`. */
  baseUrl: string;
  /** An API token (`ras_…`) or a back-office ID token, or a function that gives the current one. */
  token?: string | (() => string | null | Promise<string | null>);
  /** Retries of 429/503 (and of requests without an answer); `false`: none. */
  retry?: RetryOptions | false;
  /** Makes the idempotency key of a POST that takes one and was given none (default: a random UUID). */
  idempotencyKey?: () => string;
  /** Headers sent on every request. */
  headers?: Record<string, string>;
  fetch?: (request: Request) => Promise<Response>;
};

/**
 * The POSTs that read `X-Idempotency-Key` (a repeat within 24 hours replays the first answer), so
 * a retry can never create twice. test/clients/typescript.test.ts holds this list to the document.
 */
export const IDEMPOTENT_POSTS: readonly string[] = [
  '/customers/batch',
  '/orders',
  '/orders/batch',
  '/subscriptions/batch',
  '/subscriptions/events/batch',
];

const IDEMPOTENCY_HEADER = 'x-idempotency-key';
/** Methods a retry cannot turn into a second change. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

/** Seconds (or an HTTP date) of a Retry-After header, as milliseconds; null when absent or unreadable. */
export const retryAfterMs = (value: string | null, now = Date.now()): number | null => {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
};

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A fetch that retries: a 429 always (the rate limit answers before anything is done), a 503 or a
 * lost answer only when repeating cannot change anything twice (a safe method, or a request with an
 * idempotency key). It waits Retry-After (else 0.5 s doubling), at most `maxDelayMs` each time.
 */
export const retryingFetch = (base: (request: Request) => Promise<Response>, options: RetryOptions = {}) => {
  const attempts = Math.max(1, options.attempts ?? 4);
  const maxDelayMs = options.maxDelayMs ?? 30_000;
  const statuses = new Set(options.statuses ?? [429, 503]);
  const sleep = options.sleep ?? defaultSleep;
  return async (request: Request): Promise<Response> => {
    const repeatable = SAFE_METHODS.has(request.method) || request.headers.has(IDEMPOTENCY_HEADER);
    for (let attempt = 1; ; attempt++) {
      const backoff = Math.min(maxDelayMs, 500 * 2 ** (attempt - 1));
      const last = attempt >= attempts;
      let response: Response;
      try {
        response = await base(last ? request : request.clone());
      } catch (err) {
        if (last || !repeatable || options.networkErrors === false) throw err;
        options.onRetry?.({ method: request.method, url: request.url, attempt, status: null, delayMs: backoff });
        await sleep(backoff);
        continue;
      }
      const retryable = statuses.has(response.status) && (response.status === 429 || repeatable);
      if (last || !retryable) return response;
      const delayMs = Math.min(maxDelayMs, retryAfterMs(response.headers.get('retry-after')) ?? backoff);
      options.onRetry?.({ method: request.method, url: request.url, attempt, status: response.status, delayMs });
      await response.body?.cancel();
      await sleep(delayMs);
    }
  };
};

const randomKey = () => globalThis.crypto.randomUUID();

/** The client. Each call answers `{ data, error, response }` (openapi-fetch): `error` is the typed error body. */
export const createApiClient = (options: ApiClientOptions): ApiClient => {
  const base = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: options.headers,
    fetch: options.retry === false ? base : retryingFetch(base, options.retry),
  });
  const newKey = options.idempotencyKey ?? randomKey;
  const prepare: Middleware = {
    async onRequest({ request, schemaPath }) {
      const token = typeof options.token === 'function' ? await options.token() : options.token;
      if (token && !request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${token}`);
      if (request.method === 'POST' && IDEMPOTENT_POSTS.includes(schemaPath) && !request.headers.has(IDEMPOTENCY_HEADER)) {
        request.headers.set(IDEMPOTENCY_HEADER, newKey());
      }
      return request;
    },
  };
  client.use(prepare);
  return client;
};

/** An answer that is not a success: its status, its body (`{message}`, a 422's `errors`) and request id. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly requestId: string | null,
  ) {
    const message =
      body && typeof body === 'object' && 'message' in body ? String((body as { message: unknown }).message) : `HTTP ${status}`;
    super(`${status} ${message}${requestId ? ` (request ${requestId})` : ''}`);
    this.name = 'ApiError';
  }
}

type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type ListGet<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q }; responses: { 200: infer R } } }
  ? NonNullable<Q> extends { cursor?: unknown }
    ? JsonOf<R> extends { data: unknown[]; meta: { next_cursor: string | null } }
      ? true
      : false
    : false
  : false;

/** The paths whose GET reads by `cursor` and answers `meta.next_cursor`. */
export type PagedPath = { [P in keyof paths]: ListGet<P> extends true ? P : never }[keyof paths];
type GetOf<P extends PagedPath> = paths[P] extends { get: infer O } ? O : never;
export type PageOf<P extends PagedPath> = GetOf<P> extends { responses: { 200: infer R } } ? JsonOf<R> : never;
export type ItemOf<P extends PagedPath> = PageOf<P> extends { data: (infer I)[] } ? I : never;
type ParamsOf<P extends PagedPath> = GetOf<P> extends { parameters: infer Params } ? Params : never;
export type PageInit<P extends PagedPath> = {
  params?: Omit<ParamsOf<P>, 'query'> & { query?: Omit<NonNullable<ParamsOf<P> extends { query?: infer Q } ? Q : never>, 'cursor'> };
};

/** Each page of a list, from the first (or `init`'s filters) to the one whose `next_cursor` is null. */
export async function* pages<P extends PagedPath>(client: ApiClient, path: P, init: PageInit<P> = {}): AsyncGenerator<PageOf<P>> {
  let cursor: string | null | undefined;
  do {
    const params = { ...init.params, query: { ...(init.params?.query ?? {}), ...(cursor ? { cursor } : {}) } };
    // The path is one of PagedPath's: openapi-fetch's overloads cannot see that through a type parameter.
    const { data, error, response } = await (
      client.GET as (path: string, init: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }>
    )(path, { params });
    if (!data) throw new ApiError(response.status, error, response.headers.get('x-request-id'));
    yield data as PageOf<P>;
    cursor = (data as { meta: { next_cursor: string | null } }).meta.next_cursor;
  } while (cursor);
}

/** Every item of a list, page after page by `meta.next_cursor` (one request per page, read as needed). */
export async function* paginate<P extends PagedPath>(client: ApiClient, path: P, init: PageInit<P> = {}): AsyncGenerator<ItemOf<P>> {
  for await (const page of pages(client, path, init)) yield* (page as { data: ItemOf<P>[] }).data;
}
