import { loadTracer, Metrics, MetricUnit, type Tracer } from '#lib/powertools';

/** DynamoDB requests (one per command, whatever the SDK re-sends) and the capacity units they consumed (kept by lib/db/client.ts). */
export type RequestTally = { total: number; byCommand: Record<string, number>; capacityUnits: number };

/** The service name on every log line, metric and trace (Powertools' `service`). */
export const SERVICE_NAME = 'revenue-analytics-api';
/** CloudWatch namespace of the service's metrics, unless POWERTOOLS_METRICS_NAMESPACE names another. */
export const METRICS_NAMESPACE = 'RevenueAnalyticsApi';

/** The metrics every invocation of the API pipeline emits (one EMF line per request; docs/operations.md: Observability). */
export const METRIC = {
  requests: 'Requests',
  /** Answers 5xx (500, 503 busy). */
  errors: 'Errors',
  /** Answers 4xx. */
  clientErrors: 'ClientErrors',
  /** `Idempotent-Replayed: true` answers. */
  idempotentReplays: 'IdempotentReplays',
  /** 409 answers: a lost race past the deadline, or a state conflict (a token that is still valid). */
  conflicts: 'Conflicts',
  /** DynamoDB requests the call made (its own tally), token lookup and rate counter included. */
  dynamodbRequests: 'DynamoDBRequests',
  /** Capacity units those requests consumed. */
  dynamodbCapacityUnits: 'DynamoDBCapacityUnits',
} as const;

let instance: Metrics | undefined;
/**
 * One instance per process (Powertools' pattern), created on first use so the environment is read
 * then: it writes EMF to stdout unless POWERTOOLS_METRICS_DISABLED is true, as `npm start` and the
 * tests set it.
 */
export const metrics = (): Metrics =>
  (instance ??= new Metrics({ namespace: process.env.POWERTOOLS_METRICS_NAMESPACE || METRICS_NAMESPACE, serviceName: SERVICE_NAME }));

/** The metrics of one API request, by its answer and its DynamoDB tally. */
export const addRequestMetrics = (
  route: string,
  status: number,
  headers: Record<string, unknown>,
  tally: RequestTally | undefined,
): void => {
  const m = metrics();
  m.addMetadata('route', route);
  m.addMetric(METRIC.requests, MetricUnit.Count, 1);
  m.addMetric(METRIC.errors, MetricUnit.Count, status >= 500 ? 1 : 0);
  m.addMetric(METRIC.clientErrors, MetricUnit.Count, status >= 400 && status < 500 ? 1 : 0);
  m.addMetric(METRIC.conflicts, MetricUnit.Count, status === 409 ? 1 : 0);
  m.addMetric(METRIC.idempotentReplays, MetricUnit.Count, headers['Idempotent-Replayed'] === 'true' ? 1 : 0);
  if (tally) {
    m.addMetric(METRIC.dynamodbRequests, MetricUnit.Count, tally.total);
    m.addMetric(METRIC.dynamodbCapacityUnits, MetricUnit.Count, tally.capacityUnits);
  }
};

/**
 * Powertools Tracer, loaded only in a Lambda execution environment (AWS_EXECUTION_ENV), the one
 * place it can trace: elsewhere (the local server, tests, scripts) the X-Ray SDK is never
 * evaluated, so its async hooks (cls-hooked) never slow those processes. On Lambda the Tracer
 * itself still honours POWERTOOLS_TRACE_ENABLED=false.
 */
export const tracer: Tracer | undefined = process.env.AWS_EXECUTION_ENV
  ? new (await loadTracer())({ serviceName: SERVICE_NAME })
  : undefined;

/** An AWS SDK v3 client whose calls become X-Ray subsegments when tracing is on (unchanged otherwise). */
export const traced = <C extends object>(client: C): C => (tracer ? tracer.captureAWSv3Client(client) : client);
