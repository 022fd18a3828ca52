import { forgetSession, idToken, type DashboardConfig } from './auth';

/** The API's answers the dashboard reads (see the OpenAPI document for the full shapes). */
export type Meta = { current_page: number; last_page: number; per_page: number; total: number; from: number | null; to: number | null };
export type Page<T> = { data: T[]; meta: Meta };
export type Me = { merchant_id: string; name: string; reporting_currency: string; role: 'admin' | 'user' };
export type Stats = { today_revenue: string; monthly_revenue: string; today_count: number; today_success_rate: number };
export type MrrEntry = {
  date: string;
  mrr: string;
  new: string;
  expansion: string;
  contraction: string;
  churn: string;
  reactivation: string;
  net_change: string;
  active_subscriptions: number;
  active_customers: number;
};
export type MrrSeries = { data: MrrEntry[]; summary: { current_mrr: string; arr: string; arpa: string | null; customer_churn_rate: number | null; mrr_churn_rate: number | null } };
export type Summary = {
  current_mrr: string;
  arr: string;
  arpa: string | null;
  active_subscriptions: number;
  active_customers: number;
  customer_churn_rate: number | null;
  mrr_churn_rate: number | null;
  net_mrr_churn_rate: number | null;
  quick_ratio: number | null;
  ltv: string | null;
};
export type Cohort = {
  cohort: string;
  customers: number;
  mrr: string;
  retention: { month: string; customers: number; mrr: string; customer_retention: number | null; mrr_retention: number | null }[];
};
export type Order = { id: number; order_no: string; amount: string; currency: string; status: string; customer_email: string | null; customer_name: string | null; created_at: string };
export type SubscriptionEvent = { id: number; customer_id: number; event_type: string; old_amount: string; new_amount: string; amount_change: string; new_plan: string | null; occurred_at: string };
export type Endpoint = { id: string; url: string; events: string[]; status: string; description: string | null };
export type Delivery = { event_id: string; event_type: string; attempt: number; status: number | null; error: string | null; duration_ms: number; at: string };
export type ApiToken = { prefix: string; last_four: string; abilities: string[]; created_at: string; last_used_at: string | null };
export type IssuedToken = ApiToken & { token: string };
export type ActivityType = 'customers.batch' | 'orders.batch' | 'subscriptions.batch' | 'subscription_events.batch';
/** A skipped or failed item of a batch, as the batch answered it (identifier and message cut to 200 bytes). */
export type ItemReport = { index: number; identifier: string; reason: string; message: string };
/** One batch request in the activity log (kept 13 months); `import_run` is the X-Import-Run it was sent with. */
export type ActivityEntry = {
  id: number;
  type: ActivityType;
  created_at: string;
  total: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  results: { skipped: ItemReport[]; failed: ItemReport[] };
  request_id: string;
  import_run: string | null;
};
export type ActivityPage = { data: ActivityEntry[]; meta: Meta & { next_cursor: string | null } };

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
    const res = await fetch(`${config.apiBase}${path}`, { method, headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } });
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
