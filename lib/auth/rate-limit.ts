import { isIPv6 } from 'node:net';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { now } from '#lib/clock';
import { config } from '#lib/config';
import { db, tableName } from '#lib/db/client';
import { keys, type Key } from '#lib/db/keys';
import { isUnanswered } from '#lib/db/retry';
import { TTL_ATTRIBUTE } from '#lib/db/table';

/**
 * The only attributes a request count writes, besides the key: IAM lets read functions update
 * rate-window items in exactly these (infra/constructs/api-function.ts), so the expression below
 * and that grant must name the same ones.
 */
export const RATE_WINDOW_ATTRIBUTES = { count: 'count', expiresAt: TTL_ATTRIBUTE } as const;

export type RateState = { limit: number; remaining: number; reset: number; exceeded: boolean };

/**
 * Requests a second one window item takes, at most on average: half of what half a partition key's
 * 1,000 WCU allows, since a fixed window may receive its whole allowance in a burst.
 */
export const RATE_SHARD_CAPACITY = 250;

/** How many items a window of `limit` requests is spread over: one (an exact count) up to 250 a second. */
export const rateShards = (limit: number, windowSeconds: number): number =>
  Math.max(1, Math.ceil(limit / windowSeconds / RATE_SHARD_CAPACITY));

/**
 * Fixed-window counter in DynamoDB: one atomic ADD per request, so every function instance shares
 * the count. A window over several items (`shards` > 1) counts each request in one of them at
 * random and reads the window's count as that item's times the shards: an estimate, within a few
 * percent once the window holds thousands of requests, which is where sharding begins.
 */
const hit = async (key: Key, limit: number, windowSeconds: number, windowStart: number, shards = 1): Promise<RateState> => {
  const reset = windowStart + windowSeconds;
  const names = { '#count': RATE_WINDOW_ATTRIBUTES.count, '#exp': RATE_WINDOW_ATTRIBUTES.expiresAt };
  const update = (expression: string, values: Record<string, number>) =>
    db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        UpdateExpression: expression,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ...values, ':exp': reset + 3600 },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
  let counted: Record<string, unknown> | undefined;
  try {
    counted = (await update('ADD #count :one SET #exp = :exp', { ':one': 1 })).Attributes;
  } catch (err) {
    // The count's answer was lost (it may or may not have landed; it is never sent again): the
    // limiter's hiccup refuses no request. The window's count is read back by an update that
    // changes nothing already there, safe to send again, so this request is counted at most once.
    if (!isUnanswered(err)) throw err;
    counted = (await update('SET #count = if_not_exists(#count, :zero), #exp = :exp', { ':zero': 0 })).Attributes;
  }
  const count = Number(counted?.count ?? 1) * shards;
  return { limit, remaining: Math.max(0, limit - count), reset, exceeded: count > limit };
};

const windowStart = (seconds: number): number => Math.floor(now().getTime() / 1000 / seconds) * seconds;

/** Authenticated requests: per merchant, per clock hour. */
export const hitMerchant = (merchantId: string): Promise<RateState> => {
  const start = windowStart(3600);
  const limit = config.rateLimitPerHour();
  const shards = rateShards(limit, 3600);
  return hit(keys.merchantRateWindow(merchantId, start, Math.floor(Math.random() * shards)), limit, 3600, start, shards);
};

/**
 * Back-office requests: per merchant, per clock minute, in a window of their own, so an API token
 * that exhausts the hourly limit never keeps the merchant's admins from revoking it.
 */
export const hitBackoffice = (merchantId: string): Promise<RateState> => {
  const start = windowStart(60);
  return hit(keys.backofficeRateWindow(merchantId, start), config.backofficeRateLimitPerMinute(), 60, start);
};

/**
 * The network a per-IP window counts: the IPv4 address, or an IPv6 address's /64 (one subscriber's
 * prefix: a client holds 2^64 addresses of it, and would otherwise get as many windows). An
 * IPv4-mapped IPv6 address is its IPv4 address.
 */
export const clientNetwork = (ip: string): string => {
  if (!isIPv6(ip)) return ip;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped) return mapped[1]!;
  const hextets = (part: string) => (part ? part.split(':').flatMap((h) => (h.includes('.') ? ['0', '0'] : [h])) : []);
  const [head = '', tail] = ip.split('::');
  const left = hextets(head);
  const full = tail === undefined ? left : [...left, ...Array(8 - left.length - hextets(tail).length).fill('0'), ...hextets(tail)];
  return `${full
    .slice(0, 4)
    .map((h) => Number.parseInt(h, 16).toString(16))
    .join(':')}::/64`;
};

/** Unauthenticated requests: per source network (`clientNetwork`), per clock minute. */
export const hitIp = (ip: string): Promise<RateState> => {
  const start = windowStart(60);
  return hit(keys.ipRateWindow(clientNetwork(ip), start), config.unauthenticatedRateLimitPerMinute(), 60, start);
};

export const rateHeaders = (s: RateState): Record<string, string> => ({
  'X-RateLimit-Limit': String(s.limit),
  'X-RateLimit-Remaining': String(s.remaining),
  'X-RateLimit-Reset': String(s.reset),
});

export const retryAfter = (s: RateState): number => Math.max(1, s.reset - Math.floor(now().getTime() / 1000));
