import { hashToken, stampTokenUse } from '#lib/auth/tokens';
import { routeList, type routes } from '#lib/api/routes';
import { issueLocalBackofficeToken } from '../../infra/local/backoffice-jwt.ts';
import { startWebhookReceiver } from '../../infra/local/webhook-receiver.ts';
import { benchMerchant, startApi, type BenchApi, type BenchResponse } from '../support/api.ts';
import type { BenchItem, Cell } from '../support/report.ts';

/**
 * Item 1: DynamoDB requests and consumed capacity units (ReturnConsumedCapacity TOTAL) of one call
 * of every route, from the request's own tally (per invocation, kept by the pipeline), against the
 * the request budgets (docs/benchmarks.md, "Request budgets"). Steady state: the
 * token's last_used_at is stamped before each call, as after a use within the minute.
 */
type RouteName = keyof typeof routes;
type Call = { method: string; path: string; body?: unknown; headers?: Record<string, string>; token?: string | null };
type Scenario = { route: RouteName; label: string; budget?: number; status: number; call: () => Promise<Call> };

/** The request budgets (requests per call, pipeline included); routes without one show "–". */
const BUDGETS: Partial<Record<RouteName, number>> = {
  customersGet: 3,
  customersList: 4,
  ordersCreate: 6,
  ordersGet: 4,
  ordersList: 5,
  ordersStats: 3,
  ordersBatch: 25,
  subscriptionsCreate: 5,
  subscriptionsUpdate: 5,
  subscriptionsCancel: 5,
  subscriptionsPause: 5,
  subscriptionsReactivate: 5,
  subscriptionsDelete: 5,
  subscriptionsGet: 3,
  subscriptionsList: 4,
  subscriptionEventsList: 4,
  subscriptionEventsCreate: 5,
  metricsMrr: 5,
  metricsSummary: 4,
  metricsCohorts: 5,
  metricsChurnReasons: 5,
  webhookEndpointsDeliveries: 4,
};

const scenarios = async (api: BenchApi, receiverUrl: string): Promise<Scenario[]> => {
  const { token, merchantId } = await benchMerchant('cost');
  const post = async (path: string, body: unknown) => {
    const r = await api.request('POST', path, token, body);
    if (r.status >= 300) throw new Error(`setup POST ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.data;
  };
  const customer = await post('/customers', { email: 'existing@cost.bench', name: 'Existing', external_id: 'ext-1' });
  const other = await post('/customers', { email: 'other@cost.bench', name: 'Other' });
  const spare = await post('/customers', { email: 'spare@cost.bench', name: 'Spare' });
  const order = await post('/orders', { order_no: 'COST-1', amount: '100.00', customer_email: 'existing@cost.bench', status: 'pending' });
  const sub = await post('/subscriptions', { customer_id: customer.id, plan_name: 'Pro', mrr: '990.00', billing_cycle: 'monthly' });
  const endpoint = await post('/webhook-endpoints', { url: receiverUrl, events: ['*'] });
  const bo = await benchMerchant('cost back office');
  const jwt = (await issueLocalBackofficeToken({ merchantId: bo.merchantId, role: 'admin' })).token;
  const backoffice = { authorization: `Bearer ${jwt}` };
  let testEventId = '';
  const s = (route: RouteName, label: string, status: number, call: () => Call | Promise<Call>, budget = BUDGETS[route]): Scenario => ({
    route,
    label,
    status,
    budget,
    call: async () => ({ token, ...(await call()) }),
  });
  const orders = (n: number, prefix: string) =>
    Array.from({ length: n }, (_, i) => ({
      order_no: `${prefix}-${i}`,
      amount: '10.00',
      status: 'paid',
      customer_email: `${prefix.toLowerCase()}-${i}@cost.bench`,
    }));
  void merchantId;
  return [
    s('openapi', 'GET /openapi.json', 200, () => ({ method: 'GET', path: '/openapi.json', token: null })),
    s('customersCreate', 'POST /customers', 201, () => ({
      method: 'POST',
      path: '/customers',
      body: { email: 'new@cost.bench', name: 'New' },
    })),
    s('customersGet', 'GET /customers/{id}', 200, () => ({ method: 'GET', path: `/customers/${customer.id}` })),
    s('customersGet', 'GET /customers/{external_id}', 200, () => ({ method: 'GET', path: '/customers/ext-1' })),
    s('customersList', 'GET /customers page 1', 200, () => ({ method: 'GET', path: '/customers' })),
    // A search Queries the 4 shards of the search index, then reads the page's customers and their heads.
    s('customersList', 'GET /customers?search=', 200, () => ({ method: 'GET', path: '/customers?search=exist' }), 8),
    s('customersUpdate', 'PUT /customers/{id}', 200, () => ({ method: 'PUT', path: `/customers/${other.id}`, body: { name: 'Renamed' } })),
    s('customersBatch', 'POST /customers/batch, 100 new', 200, () => ({
      method: 'POST',
      path: '/customers/batch',
      body: { customers: Array.from({ length: 100 }, (_, i) => ({ email: `b${i}@cost.bench`, name: `B${i}` })) },
    })),
    s('ordersCreate', 'POST /orders, new customer', 201, () => ({
      method: 'POST',
      path: '/orders',
      body: { order_no: 'COST-N', amount: '10.00', status: 'paid', customer_email: 'fresh@cost.bench' },
    })),
    s('ordersCreate', 'POST /orders, existing customer', 201, () => ({
      method: 'POST',
      path: '/orders',
      body: { order_no: 'COST-E', amount: '10.00', status: 'paid', customer_email: 'existing@cost.bench' },
    })),
    s('ordersCreate', 'POST /orders, idempotent replay', 201, async () => {
      const replay = {
        method: 'POST',
        path: '/orders',
        body: { order_no: 'COST-K', amount: '10.00', status: 'paid', customer_email: 'existing@cost.bench' },
        headers: { 'x-idempotency-key': 'k-1' },
      };
      const first = await api.request(replay.method, replay.path, token, replay.body, replay.headers);
      if (first.status !== 201) throw new Error(`setup of the replay: ${first.status}`);
      return replay;
    }),
    s('ordersGet', 'GET /orders/{orderNo}', 200, () => ({ method: 'GET', path: `/orders/${order.order_no}` })),
    s('ordersList', 'GET /orders page 1', 200, () => ({ method: 'GET', path: '/orders' })),
    s('ordersList', 'GET /orders?status=paid page 1', 200, () => ({ method: 'GET', path: '/orders?status=paid' })),
    s('ordersStats', 'GET /orders/stats', 200, () => ({ method: 'GET', path: '/orders/stats' })),
    s('ordersUpdateStatus', 'PATCH /orders/{orderNo} → paid', 200, () => ({
      method: 'PATCH',
      path: `/orders/${order.order_no}`,
      body: { status: 'paid' },
    })),
    s('ordersBatch', 'POST /orders/batch, 100 new orders, 100 new customers', 200, () => ({
      method: 'POST',
      path: '/orders/batch',
      body: { orders: orders(100, 'BATCH') },
    })),
    s('subscriptionsCreate', 'POST /subscriptions', 201, () => ({
      method: 'POST',
      path: '/subscriptions',
      body: { customer_id: spare.id, plan_name: 'Basic', mrr: '10.00', billing_cycle: 'monthly' },
    })),
    s('subscriptionsGet', 'GET /subscriptions/{id}', 200, () => ({ method: 'GET', path: `/subscriptions/${sub.id}` })),
    s('subscriptionsList', 'GET /subscriptions page 1', 200, () => ({ method: 'GET', path: '/subscriptions' })),
    s('subscriptionsUpdate', 'PUT /subscriptions/{id} (mrr moves)', 200, () => ({
      method: 'PUT',
      path: `/subscriptions/${sub.id}`,
      body: { mrr: '1090.00' },
    })),
    s('subscriptionsPause', 'PUT /subscriptions/{id}/pause', 200, () => ({
      method: 'PUT',
      path: `/subscriptions/${sub.id}/pause`,
      body: {},
    })),
    s('subscriptionsReactivate', 'PUT /subscriptions/{id}/reactivate', 200, () => ({
      method: 'PUT',
      path: `/subscriptions/${sub.id}/reactivate`,
      body: {},
    })),
    s('subscriptionsCancel', 'PUT /subscriptions/{id}/cancel', 200, () => ({
      method: 'PUT',
      path: `/subscriptions/${sub.id}/cancel`,
      body: {},
    })),
    s('subscriptionsDelete', 'DELETE /subscriptions/{id}', 204, () => ({ method: 'DELETE', path: `/subscriptions/${sub.id}` })),
    s('subscriptionEventsCreate', 'POST /subscriptions/events', 201, () => ({
      method: 'POST',
      path: '/subscriptions/events',
      body: { customer_id: other.id, event_type: 'upgrade', old_amount: '10.00', new_amount: '20.00', occurred_at: '2025-06-01T00:00:00Z' },
    })),
    s('subscriptionEventsList', 'GET /subscriptions/events page 1', 200, () => ({ method: 'GET', path: '/subscriptions/events' })),
    s('metricsMrr', 'GET /metrics/mrr, 24 monthly points', 200, () => ({
      method: 'GET',
      path: '/metrics/mrr?start_date=2024-01-01&end_date=2025-12-31&interval=month',
    })),
    s('metricsMrr', 'GET /metrics/mrr, 731 daily points', 200, () => ({
      method: 'GET',
      path: '/metrics/mrr?start_date=2024-01-01&end_date=2025-12-31&interval=day',
    })),
    s('metricsSummary', 'GET /metrics/summary', 200, () => ({ method: 'GET', path: '/metrics/summary' })),
    s('metricsCohorts', 'GET /metrics/cohorts, 24 months', 200, () => ({
      method: 'GET',
      path: '/metrics/cohorts?start_month=2024-01&end_month=2025-12',
    })),
    s('metricsMrr', 'GET /metrics/mrr?plan=, 24 monthly points', 200, () => ({
      method: 'GET',
      path: '/metrics/mrr?start_date=2024-01-01&end_date=2025-12-31&interval=month&plan=Basic',
    })),
    s('metricsPlans', 'GET /metrics/plans', 200, () => ({ method: 'GET', path: '/metrics/plans' })),
    s('metricsChurnReasons', 'GET /metrics/churn-reasons, 24 months', 200, () => ({
      method: 'GET',
      path: '/metrics/churn-reasons?start_date=2024-01-01&end_date=2025-12-31',
    })),
    s('webhookEndpointsCreate', 'POST /webhook-endpoints', 201, () => ({
      method: 'POST',
      path: '/webhook-endpoints',
      body: { url: receiverUrl, events: ['order.paid'] },
    })),
    s('webhookEndpointsGet', 'GET /webhook-endpoints/{id}', 200, () => ({ method: 'GET', path: `/webhook-endpoints/${endpoint.id}` })),
    s('webhookEndpointsList', 'GET /webhook-endpoints page 1', 200, () => ({ method: 'GET', path: '/webhook-endpoints' })),
    s('webhookEndpointsUpdate', 'PATCH /webhook-endpoints/{id}', 200, () => ({
      method: 'PATCH',
      path: `/webhook-endpoints/${endpoint.id}`,
      body: { description: 'bench' },
    })),
    s('webhookEndpointsRotateSecret', 'POST /webhook-endpoints/{id}/rotate-secret', 200, () => ({
      method: 'POST',
      path: `/webhook-endpoints/${endpoint.id}/rotate-secret`,
    })),
    s('webhookEndpointsTest', 'POST /webhook-endpoints/{id}/test', 200, () => ({
      method: 'POST',
      path: `/webhook-endpoints/${endpoint.id}/test`,
    })),
    s('webhookEndpointsDeliveries', 'GET /webhook-endpoints/{id}/deliveries page 1', 200, async () => {
      return { method: 'GET', path: `/webhook-endpoints/${endpoint.id}/deliveries` };
    }),
    s('webhookEndpointsRetryDelivery', 'POST …/deliveries/{event_id}/retry', 200, async () => {
      testEventId ||= (await api.request('GET', `/webhook-endpoints/${endpoint.id}/deliveries`, token)).body.data[0].event_id;
      return { method: 'POST', path: `/webhook-endpoints/${endpoint.id}/deliveries/${testEventId}/retry` };
    }),
    s('webhookEndpointsDelete', 'DELETE /webhook-endpoints/{id}', 204, () => ({
      method: 'DELETE',
      path: `/webhook-endpoints/${endpoint.id}`,
    })),
    s('customersDelete', 'DELETE /customers/{id}', 204, () => ({ method: 'DELETE', path: `/customers/${other.id}` })),
    s('backofficeMe', 'GET /backoffice/me', 200, () => ({ method: 'GET', path: '/backoffice/me', headers: backoffice, token: null })),
    s('backofficeTokenView', 'GET /backoffice/api-token', 200, () => ({
      method: 'GET',
      path: '/backoffice/api-token',
      headers: backoffice,
      token: null,
    })),
    s('backofficeTokenRegenerate', 'POST /backoffice/api-token/regenerate', 200, () => ({
      method: 'POST',
      path: '/backoffice/api-token/regenerate',
      headers: backoffice,
      token: null,
    })),
    s('backofficeTokenRevoke', 'DELETE /backoffice/api-token', 204, () => ({
      method: 'DELETE',
      path: '/backoffice/api-token',
      headers: backoffice,
      token: null,
    })),
    s('backofficeTokenCreate', 'POST /backoffice/api-token', 201, () => ({
      method: 'POST',
      path: '/backoffice/api-token',
      headers: backoffice,
      token: null,
    })),
  ];
};

export const item: BenchItem = {
  name: 'cost',
  title: '1. Request cost per endpoint: DynamoDB requests and consumed capacity units per call',
  run: async () => {
    const api = await startApi();
    const receiver = await startWebhookReceiver({});
    try {
      const list = await scenarios(api, receiver.url);
      const missing = routeList.filter((r) => !list.some((s) => s.route === r.name)).map((r) => r.name);
      if (missing.length) throw new Error(`routes without a cost scenario: ${missing.join(', ')}`);
      const rows: {
        route: string;
        call: string;
        status: number;
        requests: number;
        capacity: number;
        commands: Record<string, number>;
        budget: number | null;
      }[] = [];
      for (const sc of list) {
        const call = await sc.call();
        if (call.token) await stampTokenUse({ tokenHash: hashToken(call.token), lastUsedAt: null });
        const r: BenchResponse = await api.request(call.method, call.path, call.token, call.body, call.headers);
        if (r.status !== sc.status)
          throw new Error(`${sc.label}: expected ${sc.status}, got ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
        rows.push({
          route: sc.route,
          call: sc.label,
          status: r.status,
          requests: r.requests,
          capacity: r.capacityUnits,
          commands: r.byCommand,
          budget: sc.budget ?? null,
        });
      }
      const over = rows.filter((r) => r.budget !== null && r.requests > r.budget);
      const commands = (c: Record<string, number>) =>
        Object.entries(c)
          .map(([k, n]) => `${k.replace(/Command$/, '')}${n > 1 ? ` ×${n}` : ''}`)
          .join(', ');
      return {
        tables: [
          {
            columns: ['call', 'requests', 'budget', 'capacity units', 'commands'],
            rows: rows.map((r): Cell[] => [
              r.call,
              r.requests,
              r.budget === null ? '–' : `≤ ${r.budget}`,
              r.capacity,
              commands(r.commands),
            ]),
          },
        ],
        targets: [
          {
            name: 'calls over their request budget',
            value: over.length ? over.map((o) => o.call).join('; ') : 0,
            target: '0',
            met: over.length === 0,
          },
        ],
        notes: [
          `${routeList.length} routes, ${rows.length} calls; counts are each request's own tally (AsyncLocalStorage per invocation), token lookup and rate counter included; capacity units as DynamoDB Local reports them (ReturnConsumedCapacity TOTAL: reads, writes and transactions at AWS's on-demand rates).`,
        ],
        data: { calls: rows },
      };
    } finally {
      await receiver.close();
      await api.close();
    }
  },
};
