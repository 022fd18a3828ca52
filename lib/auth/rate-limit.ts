import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { now } from '#lib/clock';
import { config } from '#lib/config';
import { db, tableName } from '#lib/db/client';
import { keys, type Key } from '#lib/db/keys';
import { TTL_ATTRIBUTE } from '#lib/db/table';

/**
 * The only attributes a request count writes, besides the key: IAM lets read functions update
 * rate-window items in exactly these (infra/constructs/api-function.ts), so the expression below
 * and that grant must name the same ones.
 */
export const RATE_WINDOW_ATTRIBUTES = { count: 'count', expiresAt: TTL_ATTRIBUTE } as const;

export type RateState = { limit: number; remaining: number; reset: number; exceeded: boolean };

/** Fixed-window counter in DynamoDB: one atomic ADD per request, so every function instance shares the count. */
const hit = async (key: Key, limit: number, windowSeconds: number, windowStart: number): Promise<RateState> => {
  const reset = windowStart + windowSeconds;
  const { Attributes } = await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: key,
      UpdateExpression: 'ADD #count :one SET #exp = :exp',
      ExpressionAttributeNames: { '#count': RATE_WINDOW_ATTRIBUTES.count, '#exp': RATE_WINDOW_ATTRIBUTES.expiresAt },
      ExpressionAttributeValues: { ':one': 1, ':exp': reset + 3600 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  const count = Number(Attributes?.count ?? 1);
  return { limit, remaining: Math.max(0, limit - count), reset, exceeded: count > limit };
};

const windowStart = (seconds: number): number => Math.floor(now().getTime() / 1000 / seconds) * seconds;

/** Authenticated requests: per merchant, per clock hour. */
export const hitMerchant = (merchantId: string): Promise<RateState> => {
  const start = windowStart(3600);
  return hit(keys.merchantRateWindow(merchantId, start), config.rateLimitPerHour(), 3600, start);
};

/**
 * Back-office requests: per merchant, per clock minute, in a window of their own, so an API token
 * that exhausts the hourly limit never keeps the merchant's admins from revoking it.
 */
export const hitBackoffice = (merchantId: string): Promise<RateState> => {
  const start = windowStart(60);
  return hit(keys.backofficeRateWindow(merchantId, start), config.backofficeRateLimitPerMinute(), 60, start);
};

/** Unauthenticated requests: per source IP, per clock minute. */
export const hitIp = (ip: string): Promise<RateState> => {
  const start = windowStart(60);
  return hit(keys.ipRateWindow(ip, start), config.unauthenticatedRateLimitPerMinute(), 60, start);
};

export const rateHeaders = (s: RateState): Record<string, string> => ({
  'X-RateLimit-Limit': String(s.limit),
  'X-RateLimit-Remaining': String(s.remaining),
  'X-RateLimit-Reset': String(s.reset),
});

export const retryAfter = (s: RateState): number => Math.max(1, s.reset - Math.floor(now().getTime() / 1000));
