import { afterEach, describe, expect, it, vi } from 'vitest';
import { METRIC, METRICS_NAMESPACE, SERVICE_NAME, tracer } from '#lib/observability';
import { newMerchant, useApi, type ApiResponse } from '../support/api.ts';
import { sustainedConflicts, throttle, type Installed } from '../support/faults.ts';
import { withEnv } from './support.ts';

/**
 * The EMF metrics of each request, captured the way Powertools documents for tests: with
 * POWERTOOLS_DEV the Metrics utility writes to the global console (and is off unless
 * POWERTOOLS_METRICS_DISABLED=false says otherwise), so console.log is spied on.
 */
vi.hoisted(() => {
  process.env.POWERTOOLS_DEV = 'true';
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
});

type Emf = Record<string, any> & {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
  };
};

const api = useApi();
const installed: Installed<unknown>[] = [];
afterEach(() => installed.splice(0).forEach((m) => m.uninstall()));

/** The EMF lines written while `fn` runs. */
const emitted = async <T>(fn: () => Promise<T>): Promise<{ result: T; lines: Emf[] }> => {
  const lines: Emf[] = [];
  const spy = vi.spyOn(console, 'log').mockImplementation((text: unknown) => {
    const parsed = typeof text === 'string' && text.startsWith('{') ? JSON.parse(text) : undefined;
    if (parsed?._aws) lines.push(parsed);
  });
  try {
    return { result: await fn(), lines };
  } finally {
    spy.mockRestore();
  }
};

/** The request's one EMF line: every metric of METRIC with its value, and the line's shape. */
const requestMetrics = (line: Emf) => {
  const [directive] = line._aws.CloudWatchMetrics;
  expect(directive!.Namespace).toBe(METRICS_NAMESPACE);
  expect(directive!.Dimensions).toEqual([['service']]);
  expect(line.service).toBe(SERVICE_NAME);
  expect(directive!.Metrics.every((m) => m.Unit === 'Count')).toBe(true);
  return Object.fromEntries(directive!.Metrics.map((m) => [m.Name, line[m.Name]]));
};

const tallyOf = (res: ApiResponse) => ({
  [METRIC.dynamodbRequests]: Number(res.headers.get('x-local-dynamodb-requests')),
  [METRIC.dynamodbCapacityUnits]: Number(res.headers.get('x-local-dynamodb-capacity')),
});

const order = (orderNo: string) => ({ order_no: orderNo, amount: '10.00', customer_email: `${orderNo}@example.com` });

describe('request metrics (Powertools Metrics, EMF)', () => {
  it('one EMF line per request: requests, errors, replays, conflicts and its own DynamoDB requests', async () => {
    const { token } = await newMerchant();
    const key = { 'x-idempotency-key': `metrics-${Date.now()}` };
    const orderNo = `M-${Date.now()}`;
    const { result, lines } = await emitted(async () => {
      const created = await api.post('/orders', token, order(orderNo), key);
      const replayed = await api.post('/orders', token, order(orderNo), key);
      const missing = await api.get('/customers/999999', token);
      return { created, replayed, missing };
    });
    expect([result.created.status, result.replayed.status, result.missing.status]).toEqual([201, 201, 404]);
    expect(result.replayed.headers.get('idempotent-replayed')).toBe('true');

    // A process's first invocation adds Powertools' cold-start line, with the function's name (a
    // worker process vitest reuses may have had it already, from another file).
    const coldStart = lines.filter((l) => l._aws.CloudWatchMetrics[0]!.Metrics.some((m) => m.Name === 'ColdStart'));
    expect(coldStart.length).toBeLessThanOrEqual(1);
    for (const line of coldStart) expect(line).toMatchObject({ ColdStart: 1, function_name: 'ordersCreate', service: SERVICE_NAME });
    const perRequest = lines.filter((l) => !coldStart.includes(l));
    expect(perRequest).toHaveLength(3);
    const [created, replayed, missing] = perRequest.map(requestMetrics);

    const quiet = { [METRIC.requests]: 1, [METRIC.errors]: 0, [METRIC.conflicts]: 0 };
    expect(created).toEqual({ ...quiet, [METRIC.clientErrors]: 0, [METRIC.idempotentReplays]: 0, ...tallyOf(result.created) });
    expect(replayed).toEqual({ ...quiet, [METRIC.clientErrors]: 0, [METRIC.idempotentReplays]: 1, ...tallyOf(result.replayed) });
    expect(missing).toEqual({ ...quiet, [METRIC.clientErrors]: 1, [METRIC.idempotentReplays]: 0, ...tallyOf(result.missing) });
    // A replay reads the stored answer: fewer requests than the creation's transaction path.
    expect(replayed[METRIC.dynamodbRequests]).toBeGreaterThan(0);
    expect(replayed[METRIC.dynamodbRequests]).toBeLessThan(created[METRIC.dynamodbRequests]);
    expect(perRequest.map((l) => l.route)).toEqual(['POST /orders', 'POST /orders', 'GET /customers/{idOrExternalId}']);
  });

  it('a 409 under sustained contention counts as a conflict, a 503 under throttling as an error', async () => {
    const { token } = await newMerchant();
    // A short invocation deadline: the retries give up (409, 503) after 1.5 s.
    const { result, lines } = await withEnv({ LOCAL_FUNCTION_TIMEOUT_MS: '3000' }, () =>
      emitted(async () => {
        const conflicts = sustainedConflicts();
        installed.push(conflicts);
        const conflicted = await api.post('/customers', token, { email: `c-${Date.now()}@example.com` });
        conflicts.uninstall();
        installed.push(throttle({ rate: 1, commands: ['TransactWriteItems'] }));
        const throttled = await api.post('/customers', token, { email: `t-${Date.now()}@example.com` });
        return { conflicted, throttled };
      }),
    );
    expect([result.conflicted.status, result.throttled.status]).toEqual([409, 503]);
    const [conflicted, throttled] = lines.filter((l) => l.route === 'POST /customers').map(requestMetrics);
    expect(conflicted).toMatchObject({
      [METRIC.requests]: 1,
      [METRIC.conflicts]: 1,
      [METRIC.clientErrors]: 1,
      [METRIC.errors]: 0,
      ...tallyOf(result.conflicted),
    });
    expect(throttled).toMatchObject({
      [METRIC.requests]: 1,
      [METRIC.conflicts]: 0,
      [METRIC.clientErrors]: 0,
      [METRIC.errors]: 1,
      ...tallyOf(result.throttled),
    });
    // Every attempt went to DynamoDB and was counted: token, rate counter, then the retried transactions.
    expect(conflicted![METRIC.dynamodbRequests]).toBeGreaterThan(3);
  });

  it('outside Lambda the Tracer is never loaded (no X-Ray SDK, nothing wrapped)', () => {
    expect(process.env.AWS_EXECUTION_ENV).toBeUndefined();
    expect(tracer).toBeUndefined();
  });
});
