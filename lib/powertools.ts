/**
 * Every import of Powertools (Logger, Metrics, Tracer, their middy middlewares, batch processing)
 * and, through the Tracer, the X-Ray SDK. The source, the local server and the tests load the packages from here;
 * a function bundle takes this module from the observability layer instead
 * (infra/constructs/observability-layer.ts, built with infra/bundles/options.ts), so keep every such import here and import this module as
 * `#lib/powertools` only.
 */
export { Logger } from '@aws-lambda-powertools/logger';
export { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
export { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
export { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
export { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
export type { Tracer } from '@aws-lambda-powertools/tracer';
export { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';

/**
 * The Tracer class, evaluated (with the X-Ray SDK and its async hooks) on first call only: the
 * layer is one file, and the X-Ray SDK must still not run outside Lambda (lib/observability.ts).
 */
export const loadTracer = async () => (await import('@aws-lambda-powertools/tracer')).Tracer;
