import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RetryErrorInfo, RetryStrategyV2, RetryToken } from '@smithy/types';
import { config } from '#lib/config';

/**
 * Counts DynamoDB API calls made through the shared client (one per command, whatever the SDK retries).
 * Tests read it to assert each endpoint's request budget.
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

/**
 * The SDK re-sends a request only when its connection failed before an answer (a TRANSIENT error:
 * reset socket, timeout), at most twice and at once: the same request, with the same idempotency
 * token for transactions, so a write that did land is not repeated. Throttling, conflicts and
 * server errors are answered to lib/db/retry.ts, the one layer that decides about another attempt.
 */
const resendOnConnectionFailure: RetryStrategyV2 = {
  acquireInitialRetryToken: async () => token(0, 0),
  refreshRetryTokenForRetry: async (previous, info: RetryErrorInfo) => {
    if (info.errorType !== 'TRANSIENT' || previous.getRetryCount() >= 2) throw info.error;
    return token(previous.getRetryCount() + 1, 10);
  },
  recordSuccess: () => undefined,
};

const create = (): DynamoDBDocumentClient => {
  const endpoint = config.dynamoEndpoint();
  const base = new DynamoDBClient({
    region: config.region(),
    ...(endpoint
      ? { endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
    // Retries live in one layer (lib/db/retry.ts), bounded by the invocation's deadline; the SDK only
    // re-sends a request whose connection failed (see `resendOnConnectionFailure`).
    retryStrategy: resendOnConnectionFailure,
  });
  base.middlewareStack.add(
    (next, context) => async (args) => {
      requestCounter.total += 1;
      const name = String(context.commandName ?? 'unknown');
      requestCounter.byCommand[name] = (requestCounter.byCommand[name] ?? 0) + 1;
      return next(args);
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
