import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { fixedClock, resetClock } from '#lib/clock';
import { routes } from '#lib/api/routes';
import { lambdaContext } from '../../infra/local/server.ts';
import { benchMerchant } from '../support/api.ts';
import { capturing, rebind, type Sent } from '../support/capture.ts';
import { replay, waves } from '../support/replay.ts';
import type { BenchItem } from '../support/report.ts';
import { latency, ratio, round, timed } from '../support/stats.ts';
import { seedMetricsAggregates } from '../../test/support/seed-metrics.ts';

/**
 * Item 3: warm in-process handler latency against the bare DynamoDB calls that handler made (same
 * client, same inputs, same concurrency), alternately, in one run. Two mirrored merchants are set
 * up identically; each handler call on the first is recorded, and the bare side replays the
 * previous call's record, rewritten to the second merchant, so its conditions (versions, sequence
 * values) hold there exactly as they did on the first.
 */
type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;
type RouteName = keyof typeof routes;

const CALLS = Number(process.env.BENCH_OVERHEAD_CALLS ?? 200);
const TARGET = 1.1;

const event = (
  route: RouteName,
  token: string,
  path: string,
  params: Record<string, string> | undefined,
  body?: unknown,
  query?: Record<string, string>,
): APIGatewayProxyEventV2 => {
  const { method } = routes[route];
  const rawQuery = new URLSearchParams(query).toString();
  return {
    version: '2.0',
    routeKey: `${method} /v1${routes[route].path}`,
    rawPath: `/v1${path}`,
    rawQueryString: rawQuery,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    queryStringParameters: query,
    pathParameters: params,
    requestContext: {
      accountId: 'bench',
      apiId: 'bench',
      domainName: 'bench',
      domainPrefix: 'bench',
      http: { method, path: `/v1${path}`, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' },
      requestId: `bench-${Math.random().toString(36).slice(2)}`,
      routeKey: `${method} /v1${routes[route].path}`,
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    isBase64Encoded: false,
  };
};

type Mirror = { merchantId: string; token: string; subscriptionId: number };

/** One merchant with an existing customer, an order, a subscription and MRR aggregates, through the API's own handlers. */
const setUp = async (
  label: string,
  invoke: (
    route: RouteName,
    m: { token: string },
    path: string,
    params?: Record<string, string>,
    body?: unknown,
  ) => Promise<APIGatewayProxyStructuredResultV2>,
): Promise<Mirror> => {
  const m = await benchMerchant(label);
  const ok = async (p: Promise<APIGatewayProxyStructuredResultV2>, what: string) => {
    const r = await p;
    if ((r.statusCode ?? 0) >= 300) throw new Error(`${what}: ${r.statusCode} ${r.body}`);
    return JSON.parse(String(r.body)).data;
  };
  const customer = await ok(
    invoke('customersCreate', m, '/customers', undefined, { email: 'existing@overhead.bench', name: 'Existing' }),
    'customer',
  );
  await ok(
    invoke('ordersCreate', m, '/orders', undefined, {
      order_no: 'OV-GET',
      amount: '10.00',
      status: 'paid',
      customer_email: 'existing@overhead.bench',
    }),
    'order',
  );
  const sub = await ok(
    invoke('subscriptionsCreate', m, '/subscriptions', undefined, {
      customer_id: customer.id,
      plan_name: 'Pro',
      mrr: '100.00',
      billing_cycle: 'monthly',
    }),
    'subscription',
  );
  await seedMetricsAggregates(m.merchantId, 1_000);
  return { ...m, subscriptionId: sub.id };
};

export const item: BenchItem = {
  name: 'overhead',
  title: '3. Overhead: warm in-process handler vs the bare DynamoDB calls it makes',
  run: async () => {
    const handlers = new Map<RouteName, Handler>();
    const handlerOf = async (route: RouteName) => {
      if (!handlers.has(route)) handlers.set(route, (await import(`../../${routes[route].handler}`)).handler as Handler);
      return handlers.get(route)!;
    };
    const invoke = async (
      route: RouteName,
      m: { token: string },
      path: string,
      params?: Record<string, string>,
      body?: unknown,
      query?: Record<string, string>,
    ) => (await handlerOf(route))(event(route, m.token, path, params, body, query), lambdaContext(route, 'bench', Date.now(), 60_000));
    // One fixed instant for both merchants: every stored timestamp (and so every condition on one) is the same on the mirror.
    fixedClock(new Date().toISOString());
    try {
      const a = await setUp('overhead handler', invoke);
      const b = await setUp('overhead bare', invoke);
      const cases: {
        call: string;
        route: RouteName;
        request: (i: number) => [string, Record<string, string> | undefined, unknown, Record<string, string>?];
      }[] = [
        {
          call: 'POST /orders (existing customer)',
          route: 'ordersCreate',
          request: (i) => [
            '/orders',
            undefined,
            { order_no: `OV-${i}`, amount: '10.00', status: 'paid', customer_email: 'existing@overhead.bench' },
          ],
        },
        { call: 'GET /orders/{orderNo}', route: 'ordersGet', request: () => ['/orders/OV-GET', { orderNo: 'OV-GET' }, undefined] },
        {
          call: 'PUT /subscriptions/{id} (mrr moves)',
          route: 'subscriptionsUpdate',
          request: (i) => [`/subscriptions/${a.subscriptionId}`, { id: String(a.subscriptionId) }, { mrr: `${100 + (i % 2) + 1}.00` }],
        },
        {
          call: 'GET /metrics/mrr (24 months)',
          route: 'metricsMrr',
          request: () => ['/metrics/mrr', undefined, undefined, { start_date: '2024-01-01', end_date: '2025-12-31', interval: 'month' }],
        },
      ];
      const rows = [];
      for (const c of cases) {
        // Records not yet replayed: the bare side replays them in order, one call behind the handler.
        const pending: Sent[][][] = [];
        const handlerMs: number[] = [];
        const bareMs: number[] = [];
        let requests = 0;
        const callHandler = async (i: number) => {
          const [path, params, body, query] = c.request(i);
          const started = performance.now();
          const { result, sent } = await capturing(() => invoke(c.route, a, path, params, body, query));
          const ms = performance.now() - started;
          if ((result.statusCode ?? 0) >= 300) throw new Error(`${c.call}: ${result.statusCode} ${result.body}`);
          // The same commands for the mirror merchant (keys and values carry the merchant id).
          pending.push(waves(rebind(sent, a.merchantId, b.merchantId)));
          requests = sent.length;
          return ms;
        };
        const callBare = () => timed(() => replay(pending.shift()!));
        const warmup = 20;
        await callHandler(0);
        for (let i = 1; i <= warmup + CALLS; i++) {
          // Which side goes first alternates.
          const [h, bare] = i % 2 ? [await callHandler(i), await callBare()] : [NaN, await callBare()];
          const handler = Number.isNaN(h) ? await callHandler(i) : h;
          if (i > warmup) {
            handlerMs.push(handler);
            bareMs.push(bare);
          }
        }
        const h = latency(handlerMs);
        const bare = latency(bareMs);
        rows.push({ call: c.call, requests, handler: h, bare, ratio: ratio(h.median, bare.median) });
      }
      return {
        tables: [
          {
            columns: ['call', 'DynamoDB requests', 'handler median / p95 ms', 'bare calls median / p95 ms', 'ratio (median)'],
            rows: rows.map((r) => [
              r.call,
              r.requests,
              `${round(r.handler.median, 2)} / ${round(r.handler.p95, 2)}`,
              `${round(r.bare.median, 2)} / ${round(r.bare.p95, 2)}`,
              r.ratio,
            ]),
          },
        ],
        targets: rows.map((r) => ({ name: `${r.call} handler / bare`, value: r.ratio, target: `≤ ${TARGET}`, met: r.ratio <= TARGET })),
        notes: [
          `${CALLS} measured pairs per call after 20 warm-up calls. Bare side: the handler's recorded commands (inputs as sent, ReturnConsumedCapacity included), rewritten to a mirrored merchant and sent through the same client, concurrent ones concurrently.`,
        ],
        data: { calls: CALLS, rows },
      };
    } finally {
      resetClock();
    }
  },
};
