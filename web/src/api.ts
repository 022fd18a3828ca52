import { forgetSession, idToken, type DashboardConfig } from './auth';

import type { components, paths } from '../../clients/typescript/schema';

/**
 * The API's answers the dashboard reads: the typed client's types, generated from the OpenAPI
 * document (clients/typescript/schema.ts), so a change of the document that breaks a view fails
 * `npm run typecheck`. Type-only: nothing of the client lands in the bundle.
 */
type Schemas = components['schemas'];
/** A list's answer, as GET /activity gives it (every list has the same meta). */
export type ActivityPage = paths['/activity']['get']['responses'][200]['content']['application/json'];
export type Meta = Omit<ActivityPage['meta'], 'next_cursor'>;
export type Page<T> = { data: T[]; meta: Meta };
export type Me = Schemas['BackofficeSession'];
export type Stats = Schemas['OrderStats'];
export type MrrEntry = Schemas['MrrEntry'];
export type MrrSeries = { data: MrrEntry[]; summary: Schemas['MrrRangeSummary'] };
export type Summary = Schemas['MetricsSummary'];
export type Cohort = Schemas['Cohort'];
export type Order = Schemas['Order'];
export type SubscriptionEvent = Schemas['SubscriptionEvent'];
export type Endpoint = Schemas['WebhookEndpoint'];
export type Delivery = Schemas['WebhookDelivery'];
export type ApiToken = Schemas['ApiToken'];
export type IssuedToken = Schemas['ApiTokenIssued'];
export type ActivityEntry = Schemas['ActivityEntry'];
export type ActivityType = ActivityEntry['type'];
/** A skipped or failed item of a batch, as the batch answered it (identifier and message cut to 200 bytes). */
export type ItemReport = ActivityEntry['results']['failed'][number];

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const loadConfig = async (): Promise<DashboardConfig> => {
  const res = await fetch('/config.json', { cache: 'no-store' });
  if (!res.ok) throw new Error(`The dashboard's configuration is missing (${res.status}).`);
  return (await res.json()) as DashboardConfig;
};

/** Query string from the set values only. */
export const query = (params: Record<string, string | number | undefined>) => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
};

/** One API call with the back-office identity; a 401 gets one fresh sign-in, then is an error. */
export const createApi = (config: DashboardConfig) => {
  const call = async <T>(method: string, path: string, retried = false): Promise<T> => {
    const token = await idToken(config, { renew: retried });
    const res = await fetch(`${config.apiBase}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
    });
    if (res.status === 401 && !retried) {
      forgetSession();
      return call<T>(method, path, true);
    }
    const text = await res.text();
    const body = text ? (JSON.parse(text) as { message?: string }) : undefined;
    if (!res.ok) throw new ApiError(res.status, body?.message ?? `HTTP ${res.status}`);
    return body as T;
  };
  return {
    get: <T>(path: string) => call<T>('GET', path),
    post: <T>(path: string) => call<T>('POST', path),
    del: (path: string) => call<void>('DELETE', path),
  };
};
export type Api = ReturnType<typeof createApi>;
