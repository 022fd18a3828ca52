import { describe, expect, it } from 'vitest';
import { newMerchant, useApi, type ApiResponse } from '../support/api.ts';
import { isolatedClock, withEnv } from '../pipeline/support.ts';
import { storedCounts } from '../orders/helpers.ts';

/**
 * With a limit of 100 an hour, 150 concurrent requests → exactly 100 served, 50 × 429.
 * The clock is pinned mid-hour so no request of a burst falls into the next window.
 */
const clock = isolatedClock({ secondOfMinute: 30 });
// One local process serves all 150 at once (on Lambda each has its own instance): on a loaded 2-core
// machine the last ones can take longer than the 10 s function timeout, and would answer 503 instead.
process.env.LOCAL_FUNCTION_TIMEOUT_MS = '60000';
const api = useApi();

const LIMIT = 100;
const BURST = 150;
const remaining = (r: ApiResponse) => Number(r.headers.get('x-ratelimit-remaining'));

const expectExactlyLimitServed = (all: ApiResponse[], servedStatus: number) => {
  const served = all.filter((r) => r.status === servedStatus);
  const refused = all.filter((r) => r.status === 429);
  expect(all.filter((r) => r.status !== servedStatus && r.status !== 429).map((r) => [r.status, r.body])).toEqual([]);
  expect(served).toHaveLength(LIMIT);
  expect(refused).toHaveLength(BURST - LIMIT);
  // Each served request saw its own count (the counter is one atomic ADD): remaining 99 … 0, once each.
  expect(served.map(remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: LIMIT }, (_, i) => i));
  const hourEnd = Math.floor(clock.start / 3600) * 3600 + 3600;
  for (const r of refused) {
    expect(r.body).toEqual({ message: 'Too Many Attempts.' });
    expect(Number(r.headers.get('retry-after'))).toBe(hourEnd - clock.start);
    expect(remaining(r)).toBe(0);
  }
};

describe(`rate limit ${LIMIT} an hour under ${BURST} concurrent requests`, () => {
  it('reads: exactly 100 served, 50 × 429', async () => {
    const { token } = await newMerchant();
    await withEnv({ RATE_LIMIT_PER_HOUR: String(LIMIT) }, async () => {
      const all = await Promise.all(Array.from({ length: BURST }, () => api.get('/customers?per_page=1', token)));
      expectExactlyLimitServed(all, 200);
    });
  });

  it('writes: exactly 100 created, 50 × 429, and only the 100 stored', async () => {
    const { merchantId, token } = await newMerchant();
    await withEnv({ RATE_LIMIT_PER_HOUR: String(LIMIT) }, async () => {
      const all = await Promise.all(
        Array.from({ length: BURST }, (_, i) => api.post('/customers', token, { email: `burst-${i}@example.com` })),
      );
      expectExactlyLimitServed(all, 201);
    });
    expect((await storedCounts(merchantId)).customers).toBe(LIMIT);
  });
});
