import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys, RATE_PREFIX } from '#lib/db/keys';
import type { ApiResponse, useApi } from '../support/api.ts';

export type Api = ReturnType<typeof useApi>;

/** Answers a well-behaved client retries with the same idempotency key. */
export const isRetryable = (status: number) => status >= 500 || status === 409;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type Settled = { res: ApiResponse; attempts: number; retried: Record<string, number> };

/**
 * Sends one request until it gets an answer that is not retryable: on any 5xx, 409 or network error
 * it waits (the answer's Retry-After, at most 1 s, with jitter; else 50–250 ms) and sends the very
 * same request again. Gives up after `maxAttempts` (the caller's assertion then fails).
 */
export const sendUntilSettled = async (send: () => Promise<ApiResponse>, maxAttempts = 40): Promise<Settled> => {
  const retried: Record<string, number> = {};
  for (let attempt = 1; ; attempt++) {
    let res: ApiResponse | undefined;
    let why: string;
    try {
      res = await send();
      if (!isRetryable(res.status)) return { res, attempts: attempt, retried };
      why = String(res.status);
    } catch (err) {
      why = `network:${(err as Error).name}`;
      if (attempt >= maxAttempts) throw err;
    }
    retried[why] = (retried[why] ?? 0) + 1;
    if (attempt >= maxAttempts) return { res: res!, attempts: attempt, retried };
    const retryAfter = Number(res?.headers.get('retry-after') ?? NaN);
    await sleep(Number.isFinite(retryAfter) ? Math.min(retryAfter * 1000, 1000) * (0.5 + Math.random() / 2) : 50 + Math.random() * 200);
  }
};

/** Adds `b`'s counts into `a`. */
export const addCounts = (a: Record<string, number>, b: Record<string, number>) => {
  for (const [k, v] of Object.entries(b)) a[k] = (a[k] ?? 0) + v;
  return a;
};

/**
 * Everything stored for a merchant, for "nothing stored" checks: every item whose key starts with
 * the merchant (`M#<m>`, `M#<m>#…`: lib/db/keys.ts) plus its token items (`TOKEN#<hash>`, found by
 * `merchant_id`), read with a full Scan (the merchant's items span many partitions). Ignored, as
 * every request may change them without storing anything of its own: the rate windows
 * (`RATE#M#<m>`: each request adds one to its window, a refused one included) and the token's
 * `last_used_at` (stamped at most once a minute by any authenticated request).
 * Returns key → canonical JSON of the item.
 */
export const merchantSnapshot = async (merchantId: string): Promise<Map<string, string>> => {
  const own = keys.merchant(merchantId).pk;
  const tokenPrefix = keys.token('').pk;
  const out = new Map<string, string>();
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await db().send(
      new ScanCommand({
        TableName: tableName(),
        ConsistentRead: true,
        FilterExpression: 'begins_with(pk, :own) OR (begins_with(pk, :token) AND merchant_id = :m)',
        ExpressionAttributeValues: { ':own': own, ':token': tokenPrefix, ':m': merchantId },
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const pk = String(item.pk);
      if (pk.startsWith(RATE_PREFIX) || (pk !== own && !pk.startsWith(`${own}#`) && !pk.startsWith(tokenPrefix))) continue;
      const { last_used_at: _stamp, ...kept } = item;
      out.set(`${pk} | ${String(item.sk)}`, canonical(pk.startsWith(tokenPrefix) ? kept : item));
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return out;
};

const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x) && !(x instanceof Set)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((k) => [k, x[k]]),
        )
      : x instanceof Set
        ? [...x].map(String).sort()
        : typeof x === 'bigint'
          ? String(x)
          : x,
  );

/** What changed between two snapshots (empty when nothing did): `+key`, `-key`, `~key`. */
export const snapshotDiff = (before: Map<string, string>, after: Map<string, string>): string[] => {
  const diff: string[] = [];
  for (const [k, v] of after)
    if (!before.has(k)) diff.push(`+${k}`);
    else if (before.get(k) !== v) diff.push(`~${k}`);
  for (const k of before.keys()) if (!after.has(k)) diff.push(`-${k}`);
  return diff;
};

/** Runs `items` through `worker` with at most `concurrency` at a time. */
export const pool = async <T, R>(items: T[], concurrency: number, worker: (item: T, index: number) => Promise<R>): Promise<R[]> => {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) out[i] = await worker(items[i], i);
    }),
  );
  return out;
};

/**
 * A valid body for each write route with one (route name → body), naming the seeded customer
 * `fz@fuzz.test` (id 1) and subscription 1: the fuzz mutates them, the isolation test sends them.
 */
export const SAMPLE_BODIES: Record<string, Record<string, unknown>> = {
  customersCreate: { email: 'new@fuzz.test', name: 'N', phone: '1', external_id: 'ext-new', metadata: { a: 1 } },
  customersBatch: { customers: [{ email: 'b@fuzz.test', name: 'B' }], on_conflict: 'skip' },
  customersUpdate: { name: 'X', metadata: { k: 'v' } },
  ordersCreate: {
    order_no: 'FZ-NEW',
    amount: '10.00',
    customer_email: 'fz@fuzz.test',
    status: 'paid',
    currency: 'TWD',
    billing_cycle: 'monthly',
    paid_at: '2025-01-01T00:00:00Z',
    metadata: { a: [1] },
  },
  ordersBatch: { orders: [{ order_no: 'FZB-1', amount: '1.00', customer_email: 'fz@fuzz.test', status: 'paid' }] },
  ordersUpdateStatus: { status: 'paid', paid_at: '2025-01-01T00:00:00Z' },
  subscriptionsCreate: { customer_id: 1, plan_name: 'P', mrr: '10.00', billing_cycle: 'monthly', started_at: '2025-01-01T00:00:00Z' },
  subscriptionEventsCreate: {
    customer_id: 1,
    subscription_id: 1,
    event_type: 'upgrade',
    old_amount: '0',
    new_amount: '10',
    occurred_at: '2025-01-01T00:00:00Z',
  },
  subscriptionsUpdate: { mrr: '20.00', plan_name: 'Q' },
  subscriptionsCancel: { reason: 'x', cancelled_at: '2025-02-01T00:00:00Z' },
  webhookEndpointsCreate: { url: 'http://localhost:9/hook', events: ['*'], description: 'd' },
  webhookEndpointsUpdate: { description: 'd', status: 'enabled', events: ['order.created'] },
  exchangeRatesPut: { rates: [{ month: '2025-01', rate: '31.5' }] },
};
