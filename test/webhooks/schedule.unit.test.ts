import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS, nextRetryDelaySeconds, RETRY_DELAYS_SECONDS, RETRY_JITTER } from '#lib/webhooks/schedule';

/** The retry schedule of docs/webhooks.md (Retries): about 10 s, 1 min, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, at least 24 h in all. */
afterEach(() => {
  delete process.env.WEBHOOK_RETRY_DELAYS_SECONDS;
});

describe('retry schedule', () => {
  it('is the schedule of docs/webhooks.md: 9 attempts, no pause after the last', () => {
    expect(RETRY_DELAYS_SECONDS).toEqual([10, 60, 300, 1800, 7200, 18000, 36000, 36000]);
    expect(MAX_ATTEMPTS).toBe(9);
    expect(nextRetryDelaySeconds(0)).toBeNull();
    expect(nextRetryDelaySeconds(MAX_ATTEMPTS)).toBeNull();
  });

  it('whatever the jitter, each pause stays within ±10 % and the attempts span at least 24 hours', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 8, maxLength: 8 }), (randoms) => {
        const pauses = randoms.map((r, i) => nextRetryDelaySeconds(i + 1, () => r)!);
        pauses.forEach((p, i) => {
          expect(p).toBeGreaterThanOrEqual(RETRY_DELAYS_SECONDS[i] * (1 - RETRY_JITTER));
          expect(p).toBeLessThanOrEqual(RETRY_DELAYS_SECONDS[i] * (1 + RETRY_JITTER));
        });
        expect(pauses.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(24 * 3600);
      }),
      { numRuns: 200 },
    );
  });

  it('jitter spreads endpoints that failed together', () => {
    const pauses = new Set(Array.from({ length: 50 }, () => nextRetryDelaySeconds(1)));
    expect(pauses.size).toBeGreaterThan(40);
  });

  it('WEBHOOK_RETRY_DELAYS_SECONDS shortens it (local stack and tests); nonsense is refused', () => {
    process.env.WEBHOOK_RETRY_DELAYS_SECONDS = '0.5, 2';
    expect(nextRetryDelaySeconds(1, () => 0.5)).toBeCloseTo(0.5);
    expect(nextRetryDelaySeconds(2, () => 0.5)).toBeCloseTo(2);
    expect(nextRetryDelaySeconds(3)).toBeNull();
    process.env.WEBHOOK_RETRY_DELAYS_SECONDS = '1,soon';
    expect(() => nextRetryDelaySeconds(1)).toThrow(/WEBHOOK_RETRY_DELAYS_SECONDS/);
  });
});
