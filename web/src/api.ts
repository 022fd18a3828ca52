import { forgetSession, idToken, type DashboardConfig } from './auth';

import { type ApiClient, type components, createApiClient, type paths } from '../../clients/typescript';

/**
 * The API's answers the dashboard reads: the typed client's types, generated from the OpenAPI
 * document (clients/typescript/schema.ts), so a change of the document that breaks a view fails
 * `npm run typecheck`. The calls go through the same client (`createApiClient`, openapi-fetch).
 */
type Schemas = components['schemas'];
/** A list's answer, as GET /activity gives it (every list has the same meta). */
export type ActivityPage = paths['/activity']['get']['responses'][200]['content']['application/json'];
export type Meta = Omit<ActivityPage['meta'], 'next_cursor'>;
export type Page<T> = { data: T[]; meta: Meta };
export type Me = Schemas['BackofficeSession'];
export type MrrEntry = Schemas['MrrEntry'];
/** GET /metrics/forecast: the committed MRR at each month end ahead, apart from the actuals. */
export type Forecast = paths['/metrics/forecast']['get']['responses'][200]['content']['application/json'];
export type OrderStatus = Schemas['Order']['status'];
export type SubscriptionEvent = Schemas['SubscriptionEvent'];
export type EventType = SubscriptionEvent['event_type'];
export type Endpoint = Schemas['WebhookEndpoint'];
export type EndpointWithSecret = Schemas['WebhookEndpointWithSecret'];
export type EndpointInput = paths['/webhook-endpoints']['post']['requestBody']['content']['application/json'];
export type WebhookEventType = EndpointInput['events'][number];
export type Delivery = Schemas['WebhookDelivery'];
export type Order = Schemas['Order'];
export type Customer = Schemas['Customer'];
export type CustomerActivity = Schemas['CustomerActivity'];
export type MetricsMovement = Schemas['MetricsMovement'];
export type MovementType = MetricsMovement['type'];
export type Subscription = Schemas['Subscription'];
export type SubscriptionStatus = Subscription['status'];
/** A subscription as GET /subscriptions lists it, with its customer's name and email. */
export type SubscriptionListItem = Schemas['SubscriptionListItem'];
export type ActivityEntry = Schemas['ActivityEntry'];
/** One currency's monthly rates into the reporting currency, oldest month first. */
export type ExchangeRates = Schemas['ExchangeRates'];
export type ActivityType = ActivityEntry['type'];
/** A skipped or failed item of a batch, as the batch answered it (identifier and message cut to 200 bytes). */
export type ItemReport = ActivityEntry['results']['failed'][number];

/** A failed call: its status and the server's message as it stands (the client's own ApiError prefixes both); a 422's messages per field. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: Record<string, string[]> = {},
  ) {
    super(message);
  }
}

export const loadConfig = async (): Promise<DashboardConfig> => {
  const res = await fetch('/config.json', { cache: 'no-store' });
  if (!res.ok) throw new Error(`The dashboard's configuration is missing (${res.status}).`);
  return (await res.json()) as DashboardConfig;
};

/** The set values only: an empty filter ('') means none, as undefined does. */
export const query = <Q extends Record<string, unknown>>(params: Q) =>
  Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined && v !== '')) as { [K in keyof Q]?: Exclude<Q[K], ''> };

/** A 401 gets one fresh sign-in and is sent again; a second 401 is the caller's error. */
const renewingOn401 =
  (config: DashboardConfig) =>
  async (request: Request): Promise<Response> => {
    const res = await fetch(request.clone());
    if (res.status !== 401) return res;
    forgetSession();
    request.headers.set('authorization', `Bearer ${await idToken(config, { renew: true })}`);
    return fetch(request);
  };

/** The typed client with the back-office identity as the bearer. */
export const createApi = (config: DashboardConfig): Api =>
  createApiClient({
    baseUrl: config.apiBase,
    token: () => idToken(config),
    // No retries of 429/503: a panel shows the error at once, with its own "Try again".
    retry: false,
    headers: { Accept: 'application/json' },
    fetch: renewingOn401(config),
  });
export type Api = ApiClient;

/** The body of a success; any other answer is an ApiError with the server's message. */
export const ok = async <D>(call: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> => {
  const { data, error, response } = await call;
  if (response.ok) return data as D;
  const body = error as { message?: string; errors?: Record<string, string[]> } | null | undefined;
  throw new ApiError(response.status, body?.message ?? `HTTP ${response.status}`, body?.errors);
};

/** A list read as the API's own CSV (`Accept: text/csv`): spread into the call's options. */
export const AS_CSV = { parseAs: 'text', headers: { Accept: 'text/csv' } } as const;

/** One page of a list as CSV text, and the next page's cursor (X-Next-Cursor: a CSV answer has no meta). */
export const csvPage = async (call: Promise<{ data?: string; error?: unknown; response: Response }>) => {
  const answer = await call;
  return { text: await ok(Promise.resolve(answer)), next: answer.response.headers.get('x-next-cursor') };
};
