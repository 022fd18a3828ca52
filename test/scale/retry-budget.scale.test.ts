import { createServer, type Server, type Socket } from 'node:net';
import { GetItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DeadlineBoundHandler } from '#lib/db/client';
import {
  INVOCATION_RETRIES,
  MAX_ATTEMPTS,
  RetryableError,
  THROTTLE_BUCKET,
  attemptTimeoutMs,
  retrying,
  throttleBucket,
  withDeadline,
} from '#lib/db/retry';
import { ContentionError } from '#lib/errors';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { sustainedConflicts, throttle, type Installed } from '../support/faults.ts';

/**
 * Retries that calm, not amplify: under sustained throttling a request makes a bounded number of
 * DynamoDB attempts, and once the function instance's bucket is empty it makes one and answers 503
 * with Retry-After; sustained contention ends in a 409 after a bounded number of attempts; each
 * request times out inside the invocation's remaining time.
 */
const api = useApi();
const installed: Installed<unknown>[] = [];
const use = <T extends Installed<unknown>>(m: T): T => {
  installed.push(m);
  return m;
};
afterEach(() => {
  installed.splice(0).forEach((m) => m.uninstall());
  resetClock();
  throttleBucket.refill();
});

let n = 0;
const order = () => ({ order_no: `RB-${Date.now()}-${n++}`, amount: '10', customer_email: `rb${n}@example.com` });

describe('the retry budget', () => {
  it('sustained throttling of the writes: at most 3 attempts a request, then 1 once the instance bucket is empty; always 503 with Retry-After, nothing stored', async () => {
    // The bucket refills with time: a fixed clock keeps it where the requests leave it.
    fixedClock('2026-05-01T10:00:00Z');
    throttleBucket.refill();
    const { token } = await newMerchant();
    const t = use(throttle({ rate: 1, commands: ['TransactWriteItems'] }));
    const attempts: number[] = [];
    for (let i = 0; i < 6; i++) {
      const before = t.stats.injected;
      const body = order();
      const r = await api.post('/orders', token, body);
      expect([r.status, r.body.message]).toEqual([503, 'The service is busy. Try again shortly.']);
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      attempts.push(t.stats.injected - before);
      expect((await api.get(`/orders/${body.order_no}`, token)).status).toBe(404);
    }
    // A full bucket pays for 4 retries: the first request retries twice, the second twice, then none.
    expect(THROTTLE_BUCKET.capacity / THROTTLE_BUCKET.retryCost).toBe(4);
    expect(attempts).toEqual([MAX_ATTEMPTS.throttle, MAX_ATTEMPTS.throttle, 1, 1, 1, 1]);
    expect(THROTTLE_BUCKET.retryCost / THROTTLE_BUCKET.refillPerSecond).toBe(5);
    expect(throttleBucket.tokens()).toBeLessThan(THROTTLE_BUCKET.retryCost);

    // Time refills it: five seconds later one more retry is paid for; once the table answers again, requests succeed.
    fixedClock('2026-05-01T10:00:05Z');
    const before = t.stats.injected;
    expect((await api.post('/orders', token, order())).status).toBe(503);
    expect(t.stats.injected - before).toBe(2);
    t.uninstall();
    expect((await api.post('/orders', token, order())).status).toBe(201);
  });

  it('sustained contention ends in a 409 after at most 25 transaction attempts, nothing stored', async () => {
    const { token } = await newMerchant();
    const c = use(sustainedConflicts());
    const body = order();
    const r = await api.post('/orders', token, body);
    expect(r.status).toBe(409);
    expect(c.stats.fired).toBeLessThanOrEqual(MAX_ATTEMPTS.contention);
    expect(c.stats.fired).toBeGreaterThan(1);
    c.uninstall();
    expect((await api.get(`/orders/${body.order_no}`, token)).status).toBe(404);
  });

  it('an invocation has a budget of retries across its operations', async () => {
    let calls = 0;
    const lose = async () => {
      calls++;
      throw new RetryableError('contention', 'lost a race');
    };
    await withDeadline(Date.now() + 60_000, async () => {
      // Operations of one invocation share INVOCATION_RETRIES: enough operations exhaust it.
      for (let op = 0; op < 10; op++) await expect(retrying(lose)).rejects.toBeInstanceOf(ContentionError);
    });
    expect(calls).toBe(10 + INVOCATION_RETRIES);
  }, 60_000);
});

describe('per-attempt timeouts', () => {
  let server: Server;
  let port = 0;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // A DynamoDB that accepts connections and never answers.
    server = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    sockets.forEach((s) => s.destroy());
    await new Promise((r) => server.close(r));
  });

  it('a request times out inside the invocation’s remaining time, never at the configured timeout past it', async () => {
    // The invocation ends at its deadline plus the margin (1.5 s); the request keeps 0.5 s of that to answer.
    await withDeadline(Date.now() + 1_200, async () => {
      expect(attemptTimeoutMs()).toBeLessThanOrEqual(2_200);
    });
    expect(attemptTimeoutMs()).toBeGreaterThan(2_200); // outside an invocation: the configured timeout
    const client = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${port}`,
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 1,
      requestHandler: new DeadlineBoundHandler({ throwOnRequestTimeout: true }),
    });
    const err = await withDeadline(Date.now() - 200, () =>
      client.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' }, sk: { S: 'b' } } })).then(
        () => null,
        (e: Error) => e,
      ),
    );
    expect(err?.name).toBe('TimeoutError');
    const ms = Number(/configured (\d+) ms/.exec(err!.message)?.[1]);
    expect(ms).toBeGreaterThan(0);
    expect(ms).toBeLessThanOrEqual(800); // deadline − 200 ms + 1,500 ms margin − 500 ms to answer
    client.destroy();
  });
});
