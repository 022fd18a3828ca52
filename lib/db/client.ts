import { AsyncLocalStorage } from 'node:async_hooks';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { HttpHandlerOptions, RetryErrorInfo, RetryStrategyV2, RetryToken } from '@smithy/types';
import { config } from '#lib/config';
import { attemptTimeoutMs } from '#lib/db/retry';
import { type RequestTally, traced } from '#lib/observability';

/** DynamoDB requests and the capacity units they consumed (its type in lib/observability.ts, which reads it: no import back). */
export type { RequestTally };

const newTally = (): RequestTally => ({ total: 0, byCommand: {}, capacityUnits: 0 });
const tallies = new AsyncLocalStorage<RequestTally>();

/** The tally of the current invocation (API request, delivery, relay batch), if one is being kept. */
export const currentTally = (): RequestTally | undefined => tallies.getStore();

/** Runs `fn` keeping its own tally: per request, so it stays right under concurrency. */
export const tallied = async <T>(fn: () => Promise<T>): Promise<{ result: T; tally: RequestTally }> => {
  const tally = newTally();
  const result = await tallies.run(tally, fn);
  return { result, tally };
};

/** Runs `fn` inside the current tally, or a new one when none is kept (the pipeline's wrapper). */
export const withTally = <T>(fn: () => Promise<T>): Promise<T> => (tallies.getStore() ? fn() : tallies.run(newTally(), fn));

/** Commands that can report consumed capacity (ReturnConsumedCapacity TOTAL is free to ask for). */
const REPORTS_CAPACITY = new Set([
  'GetItemCommand',
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'QueryCommand',
  'ScanCommand',
  'BatchGetItemCommand',
  'BatchWriteItemCommand',
  'TransactWriteItemsCommand',
  'TransactGetItemsCommand',
]);

type Capacity = { CapacityUnits?: number } | Array<{ CapacityUnits?: number }> | undefined;
const capacityOf = (consumed: Capacity): number =>
  (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []).reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);

/**
 * Process-wide count of the same requests, for scripts and sequential tests (`reset()` then one
 * call). Concurrent callers read their own `RequestTally` instead.
 */
export const requestCounter = {
  total: 0,
  byCommand: {} as Record<string, number>,
  reset(): void {
    this.total = 0;
    this.byCommand = {};
  },
};

/** Integers stay numbers; decimals and huge integers come back as exact strings (money is summed by DynamoDB). */
const wrapNumbers = (text: string): number | string => {
  if (/^-?\d+$/.test(text)) {
    const n = Number(text);
    if (Number.isSafeInteger(n)) return n;
  }
  return text;
};

const token = (count: number, delay: number): RetryToken => ({ getRetryCount: () => count, getRetryDelay: () => delay });

/** Set while a request that must not be sent twice is in flight (see `isCounterUpdate`). */
const sentOnce = new AsyncLocalStorage<true>();

/**
 * An update that moves a counter (`ADD`, or `SET a = a + :n`) changes the item again each time it
 * lands: a re-send after a lost answer would count twice. Every other write here is idempotent when
 * repeated as it is (a put, a delete, an update that sets values), and transactions carry the
 * SDK's idempotency token, so DynamoDB answers a repeated one without applying it again.
 */
export const isCounterUpdate = (commandName: string, input: { UpdateExpression?: string }): boolean =>
  commandName === 'UpdateItemCommand' && /\bADD\b|[+-]\s*:/.test(input.UpdateExpression ?? '');

/**
 * The SDK re-sends a request only when its connection failed before an answer (a TRANSIENT error:
 * reset socket, timeout), at most twice and at once: the same request, with the same idempotency
 * token for transactions, so a write that did land is not repeated. A counter update is never
 * re-sent: its lost answer surfaces as no answer (503, lib/db/retry.ts `isUnanswered`) rather than
 * risk counting twice. Throttling, conflicts and server errors are answered to lib/db/retry.ts, the
 * one layer that decides about another attempt.
 */
const resendOnConnectionFailure: RetryStrategyV2 = {
  acquireInitialRetryToken: async () => token(0, 0),
  refreshRetryTokenForRetry: async (previous, info: RetryErrorInfo) => {
    if (info.errorType !== 'TRANSIENT' || previous.getRetryCount() >= 2 || sentOnce.getStore()) throw info.error;
    return token(previous.getRetryCount() + 1, 10);
  },
  recordSuccess: () => undefined,
};

/** Each request (and each re-send) times out inside the invocation's remaining time (lib/db/retry.ts `attemptTimeoutMs`). */
export class DeadlineBoundHandler extends NodeHttpHandler {
  override handle(request: Parameters<NodeHttpHandler['handle']>[0], options: HttpHandlerOptions = {}) {
    return super.handle(request, { ...options, requestTimeout: attemptTimeoutMs() });
  }
}

const create = (): DynamoDBDocumentClient => {
  const endpoint = config.dynamoEndpoint();
  // Each call an X-Ray subsegment when tracing is on (lib/observability.ts); the document client shares this stack.
  const base = traced(
    new DynamoDBClient({
      region: config.region(),
      ...(endpoint ? { endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
      // Retries live in one layer (lib/db/retry.ts), bounded by the invocation's deadline; the SDK only
      // re-sends a request whose connection failed (see `resendOnConnectionFailure`).
      retryStrategy: resendOnConnectionFailure,
      requestHandler: new DeadlineBoundHandler({ throwOnRequestTimeout: true }),
    }),
  );
  // No logger is configured, yet the SDK's logger middleware builds a redacted copy of every input
  // and output (schemaLogFilter) for the no-op logger: CPU for nothing on every request.
  base.middlewareStack.remove('loggerMiddleware');
  base.middlewareStack.add(
    (next, context) => async (args) => {
      const name = String(context.commandName ?? 'unknown');
      const tally = tallies.getStore();
      for (const t of tally ? [requestCounter, tally] : [requestCounter]) {
        t.total += 1;
        t.byCommand[name] = (t.byCommand[name] ?? 0) + 1;
      }
      const input = args.input as { ReturnConsumedCapacity?: string };
      if (tally && REPORTS_CAPACITY.has(name)) input.ReturnConsumedCapacity ??= 'TOTAL';
      const out = isCounterUpdate(name, input as { UpdateExpression?: string })
        ? await sentOnce.run(true, () => next(args))
        : await next(args);
      if (tally) tally.capacityUnits += capacityOf((out.output as { ConsumedCapacity?: Capacity }).ConsumedCapacity);
      return out;
    },
    { step: 'initialize', name: 'requestCounter' },
  );
  return DynamoDBDocumentClient.from(base, {
    marshallOptions: { removeUndefinedValues: true },
    unmarshallOptions: { wrapNumbers },
  });
};

let client: DynamoDBDocumentClient | undefined;

/** The shared document client, created on first use from the environment. */
export const db = (): DynamoDBDocumentClient => (client ??= create());
export const tableName = (): string => config.tableName();
