import { describe, expect, it } from 'vitest';
import { newMerchant, useApi, type ApiResponse } from '../support/api.ts';
import { isolatedClock, withEnv } from './support.ts';
import { generateToken } from '#lib/auth/tokens';
import { customerIdsByEmail } from '#lib/customers/store';
import { rateShards } from '#lib/auth/rate-limit';
import { keys } from '#lib/db/keys';
import { db, tableName } from '#lib/db/client';
import { GetCommand } from '@aws-sdk/lib-dynamodb';

const readItem = async (key: { pk: string; sk: string }) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;

/** docs/authentication-and-limits.md: per-merchant hourly and per-IP minute windows, and their headers. */
process.env.RATE_LIMIT_PER_HOUR = '5';
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '3';
// 50 s into a random minute: the hour and the minute both end soon, at known instants.
const clock = isolatedClock({ secondOfMinute: 50 });
const api = useApi();

const TOO_MANY = { message: 'Too Many Attempts.' };
const hourEnd = () => Math.floor(clock.start / 3600) * 3600 + 3600;
const minuteEnd = () => Math.floor(clock.start / 60) * 60 + 60;

const rate = (r: ApiResponse) => ({
  limit: Number(r.headers.get('x-ratelimit-limit')),
  remaining: Number(r.headers.get('x-ratelimit-remaining')),
  reset: Number(r.headers.get('x-ratelimit-reset')),
});

describe('per-merchant hourly limit', () => {
  it('counts down, then refuses with 429, Retry-After and the same window headers', async () => {
    const { token } = await newMerchant();
    const seen = [];
    for (let i = 0; i < 5; i++) {
      const r = await api.get('/customers/1', token);
      expect(r.status).toBe(404);
      seen.push(rate(r));
    }
    expect(seen.map((s) => s.remaining)).toEqual([4, 3, 2, 1, 0]);
    for (const s of seen) expect(s).toMatchObject({ limit: 5, reset: hourEnd() });

    const over = await api.get('/customers/1', token);
    expect(over.status).toBe(429);
    expect(over.body).toEqual(TOO_MANY);
    expect(rate(over)).toEqual({ limit: 5, remaining: 0, reset: hourEnd() });
    expect(Number(over.headers.get('retry-after'))).toBe(hourEnd() - clock.start);
    expect(over.headers.get('content-type')).toBe('application/json');
    expect(over.headers.get('x-request-id')).toBeTruthy();
    // Other merchants have their own window.
    const other = await newMerchant();
    expect(rate(await api.get('/customers/1', other.token)).remaining).toBe(4);
  });

  it('does not execute the request over the limit: a refused POST stores nothing', async () => {
    const { merchantId, token } = await newMerchant();
    await withEnv({ RATE_LIMIT_PER_HOUR: '2' }, async () => {
      expect((await api.post('/customers', token, { email: 'one@example.com' })).status).toBe(201);
      expect((await api.post('/customers', token, { email: 'two@example.com' })).status).toBe(201);
      const refused = await api.post('/customers', token, { email: 'three@example.com' });
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual(TOO_MANY);
    });
    const stored = await customerIdsByEmail(merchantId, ['one@example.com', 'two@example.com', 'three@example.com']);
    expect([...stored.keys()].sort()).toEqual(['one@example.com', 'two@example.com']);
  });

  it('lets exactly N of 3N concurrent requests through', async () => {
    const { token } = await newMerchant();
    await withEnv({ RATE_LIMIT_PER_HOUR: '10' }, async () => {
      const all = await Promise.all(Array.from({ length: 30 }, () => api.get('/customers/1', token)));
      const passed = all.filter((r) => r.status === 404);
      expect(passed).toHaveLength(10);
      expect(all.filter((r) => r.status === 429)).toHaveLength(20);
      // Each admitted request saw its own count: the counter is atomic.
      expect(passed.map((r) => rate(r).remaining).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });
  });

  it('opens a fresh window at the next clock hour', async () => {
    const { token } = await newMerchant();
    const lastSecond = new Date((hourEnd() - 1) * 1000).toISOString();
    clock.set(lastSecond);
    try {
      for (let i = 0; i < 5; i++) expect((await api.get('/customers/1', token)).status).toBe(404);
      const over = await api.get('/customers/1', token);
      expect(over.status).toBe(429);
      expect(over.headers.get('retry-after')).toBe('1');
      clock.advance(1000);
      const next = await api.get('/customers/1', token);
      expect(next.status).toBe(404);
      expect(rate(next)).toEqual({ limit: 5, remaining: 4, reset: hourEnd() + 3600 });
    } finally {
      clock.set(new Date(clock.start * 1000).toISOString());
    }
  });

  it('reads the limit from the environment on every request', async () => {
    const { token } = await newMerchant();
    await withEnv({ RATE_LIMIT_PER_HOUR: '1000' }, async () => {
      expect(rate(await api.get('/customers/1', token))).toMatchObject({ limit: 1000, remaining: 999 });
    });
  });
});

describe('rate headers on every response', () => {
  it('200, 201, 400, 401, 403, 404, 413, 422 and 429 all carry X-RateLimit-* and X-Request-Id', async () => {
    const { token } = await newMerchant();
    const readOnly = await newMerchant(['customers:read']);
    await withEnv({ RATE_LIMIT_PER_HOUR: '9', UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '1000' }, async () => {
      const created = await api.post('/customers', token, { email: 'h@example.com' });
      const responses: [number, ApiResponse][] = [
        [201, created],
        [200, await api.get(`/customers/${created.body.data.id}`, token)],
        [400, await api.request('POST', '/customers', { token, rawBody: '{"email":', headers: { 'content-type': 'application/json' } })],
        [413, await api.request('POST', '/customers', { token, rawBody: `{"x":"${'a'.repeat(1024 * 1024)}"}` })],
        [422, await api.post('/customers', token, { email: 'nope' })],
        [404, await api.get('/customers/999', token)],
        [404, await api.get('/nope', token)],
        [403, await api.post('/customers', readOnly.token, {})],
        [401, await api.get('/customers/1')],
      ];
      for (let i = 0; i < 3; i++) await api.get('/customers/1', token);
      responses.push([429, await api.get('/customers/1', token)]);
      for (const [status, r] of responses) {
        expect(r.status, JSON.stringify(r.body)).toBe(status);
        expect(r.headers.get('content-type'), String(status)).toBe('application/json');
        expect(r.headers.get('x-request-id'), String(status)).toMatch(/^[0-9a-f-]{36}$/);
        const { limit, remaining, reset } = rate(r);
        expect(limit, String(status)).toBe(status === 401 ? 1000 : 9);
        expect(Number.isInteger(remaining) && remaining >= 0, String(status)).toBe(true);
        expect(reset, String(status)).toBe(status === 401 ? minuteEnd() : hourEnd());
      }
      expect(new Set(responses.map(([, r]) => r.headers.get('x-request-id'))).size).toBe(responses.length);
    });
  });
});

describe('per-IP minute limit for requests without a valid token', () => {
  it('counts missing and invalid tokens together, then answers 429 instead of 401 until the next minute', async () => {
    // A minute of its own: the earlier tests' 401 belongs to the clock's first minute.
    clock.set(new Date((minuteEnd() + 60) * 1000 + 50_000).toISOString());
    const reset = minuteEnd() + 120;
    try {
      const { token } = await newMerchant();
      const first = await api.get('/customers/1');
      const second = await api.get('/customers/1', generateToken());
      const third = await api.get('/customers/1', null, { authorization: 'Basic abc' });
      for (const [i, r] of [first, second, third].entries()) {
        expect(r.status).toBe(401);
        expect(rate(r)).toEqual({ limit: 3, remaining: 2 - i, reset });
      }
      for (const r of [await api.get('/customers/1'), await api.get('/customers/1', generateToken()), await api.get('/openapi.json')]) {
        expect(r.status).toBe(429);
        expect(r.body).toEqual(TOO_MANY);
        expect(r.headers.get('retry-after')).toBe('10');
        expect(rate(r)).toEqual({ limit: 3, remaining: 0, reset });
      }
      // A valid token is counted against its merchant, not the IP.
      const ok = await api.get('/customers/1', token);
      expect(ok.status).toBe(404);
      expect(rate(ok).limit).toBe(5);

      clock.advance(10_000);
      const fresh = await api.get('/customers/1');
      expect(fresh.status).toBe(401);
      expect(rate(fresh)).toEqual({ limit: 3, remaining: 2, reset: reset + 60 });
    } finally {
      clock.set(new Date(clock.start * 1000).toISOString());
    }
  });
});

describe('a limit over 250 requests a second: the window spread over several items', () => {
  it('each request is counted once, in one of the shards, and the headers read the estimate', async () => {
    const { token, merchantId } = await newMerchant();
    // 3,600,000 an hour is 1,000 a second: four window items.
    await withEnv({ RATE_LIMIT_PER_HOUR: '3600000' }, async () => {
      expect(rateShards(3_600_000, 3600)).toBe(4);
      const REQUESTS = 60;
      const remaining: number[] = [];
      for (let i = 0; i < REQUESTS; i++) {
        const r = await api.get('/customers/1', token);
        expect(r.status).toBe(404);
        expect(rate(r)).toMatchObject({ limit: 3_600_000, reset: hourEnd() });
        remaining.push(rate(r).remaining);
      }
      const start = hourEnd() - 3600;
      const counts = await Promise.all(
        [0, 1, 2, 3].map(async (s) => Number((await readItem(keys.merchantRateWindow(merchantId, start, s)))?.count ?? 0)),
      );
      // Counted exactly once each, over more than one item (60 draws all landing in one of 4: p ≈ 4⁻⁵⁹).
      expect(counts.reduce((a, b) => a + b, 0)).toBe(REQUESTS);
      expect(counts.filter((c) => c > 0).length).toBeGreaterThan(1);
      // Each answer's remaining is the limit less its item's count times four.
      for (const r of remaining) expect((3_600_000 - r) % 4).toBe(0);
      expect(Math.min(...remaining)).toBe(3_600_000 - 4 * Math.max(...counts));
    });
  });

  it('up to 250 a second the window is one item and the count exact', () => {
    expect(rateShards(5, 3600)).toBe(1);
    expect(rateShards(3600, 3600)).toBe(1);
    expect(rateShards(900_000, 3600)).toBe(1);
    expect(rateShards(900_001, 3600)).toBe(2);
  });
});
