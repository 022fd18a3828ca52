import { describe, expect, it } from 'vitest';
import { ORDER_STATUSES } from '#lib/orders/schemas';
import { canTransition, fillStatusTimestamp } from '#lib/orders/transitions';

/** The order status machine (docs/orders.md), in memory. */
describe('order status transitions', () => {
  it('allows exactly the documented moves', () => {
    const allowed = ORDER_STATUSES.flatMap((from) => ORDER_STATUSES.filter((to) => canTransition(from, to)).map((to) => `${from}→${to}`));
    expect(allowed.sort()).toEqual(['failed→cancelled', 'failed→paid', 'paid→refunded', 'pending→cancelled', 'pending→failed', 'pending→paid'].sort());
    // No status moves to itself, and refunded and cancelled are final.
    for (const s of ORDER_STATUSES) expect(canTransition(s, s)).toBe(false);
  });

  it("fills the reached status's time when none is given, and never overwrites a given one", () => {
    const order = { status: 'paid' as const, paid_at: null, refunded_at: null, failed_at: null };
    expect(fillStatusTimestamp(order, '2026-05-01T00:00:00Z').paid_at).toBe('2026-05-01T00:00:00Z');
    expect(fillStatusTimestamp({ ...order, paid_at: '2026-04-01T00:00:00Z' }, '2026-05-01T00:00:00Z').paid_at).toBe('2026-04-01T00:00:00Z');
    expect(fillStatusTimestamp({ ...order, status: 'pending' as const }, '2026-05-01T00:00:00Z')).toEqual({ ...order, status: 'pending' });
  });
});
