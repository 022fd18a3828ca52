import { describe, expect, it } from 'vitest';
import { refusal } from '../support/refusal.ts';
import type { SubscriptionItem } from '#lib/subscriptions/model';
import { effectiveTime, latestChangeAt } from '#lib/subscriptions/effective';

/** The effective-time rule in memory (no database, no HTTP). */
const sub = (over: Partial<SubscriptionItem> = {}) =>
  ({ started_at: '2026-01-15T00:00:00Z', updated_at: '2026-04-01T00:00:00Z', version: 1, ...over }) as SubscriptionItem;
const NOW = '2026-05-01T12:00:00Z';

describe('effectiveTime', () => {
  it('takes a given time at or after the start and the latest change', () => {
    expect(effectiveTime(sub(), '2026-01-15T00:00:00Z', 'paused_at', NOW)).toBe('2026-01-15T00:00:00Z');
    expect(effectiveTime(sub({ changed_at: '2026-03-01T00:00:00Z', version: 3 }), '2026-03-01T00:00:00Z', 'paused_at', NOW)).toBe(
      '2026-03-01T00:00:00Z',
    );
  });

  it('refuses one before the start or the latest change, naming the later of the two', () => {
    expect(refusal(() => effectiveTime(sub(), '2026-01-14T23:59:59Z', 'cancelled_at', NOW))).toEqual({
      cancelled_at: ['The cancelled at field must be a date after or equal to 2026-01-15T00:00:00Z, when the subscription started.'],
    });
    expect(
      refusal(() => effectiveTime(sub({ changed_at: '2026-03-01T00:00:00Z', version: 2 }), '2026-02-01T00:00:00Z', 'effective_at', NOW)),
    ).toEqual({
      effective_at: ["The effective at field must be a date after or equal to 2026-03-01T00:00:00Z, the subscription's latest change."],
    });
  });

  it('defaults to now, or to the start of a subscription that has not started yet', () => {
    expect(effectiveTime(sub(), null, 'paused_at', NOW)).toBe(NOW);
    expect(effectiveTime(sub({ started_at: '2026-06-01T00:00:00Z' }), undefined, 'paused_at', NOW)).toBe('2026-06-01T00:00:00Z');
  });

  it('items written before changed_at existed: their last write, or the start when never changed', () => {
    expect(latestChangeAt(sub({ version: 1 }))).toBe('2026-01-15T00:00:00Z');
    expect(latestChangeAt(sub({ version: 4 }))).toBe('2026-04-01T00:00:00Z');
    expect(latestChangeAt(sub({ version: 4, changed_at: '2026-02-02T00:00:00Z' }))).toBe('2026-02-02T00:00:00Z');
  });
});
