import { describe, expect, it } from 'vitest';
import { subscriptionTimeline, type SubscriptionFacts } from '#lib/metrics/lines';
import { movementsOf, setAt, type Timeline } from '#lib/metrics/timeline';

/**
 * A change of plan alone sets no amount (lib/metrics/lines.ts): its point keeps the line's amount,
 * so history recorded later before it moves it too. The case found from outside: a subscription
 * from 2025-08-26 at 587.53, its plan changed alone, a second later its mrr set to 479.53, then a
 * downgrade to 120.00 recorded at 2026-10-25: today is an expansion of 359.53 (120.00 → 479.53),
 * not 467.53 and a contraction of 108.00 measured from the record's stale 587.53.
 */
const CCY = 'TWD';
const sub = (over: Partial<SubscriptionFacts>): SubscriptionFacts => ({
  id: 7,
  status: 'active',
  mrr: '587.53',
  started_at: '2025-08-26T00:00:00Z',
  cancelled_at: null,
  plan_name: 'Basic',
  billing_cycle: 'monthly',
  currency: CCY,
  ...over,
});
const T1 = '2026-11-20T10:00:00Z';
const T2 = '2026-11-20T10:00:01Z';
const movesOn = (tl: Timeline, day: string) =>
  movementsOf(tl, CCY)
    .filter((m) => m.at.startsWith(day))
    .map((m) => `${m.kind} ${m.amount.toFixed(2)}`);

const history = (withDowngrade: boolean) => {
  let tl: Timeline = subscriptionTimeline({}, null, sub({}), sub({}).started_at, CCY);
  tl = subscriptionTimeline(tl, sub({}), sub({ plan_name: 'Pro' }), T1, CCY);
  tl = subscriptionTimeline(tl, sub({ plan_name: 'Pro' }), sub({ plan_name: 'Pro', mrr: '479.53' }), T2, CCY);
  return withDowngrade ? setAt(tl, 'S7', '2026-10-25T00:00:00Z', '120.00', 'a', ['Pro', 'monthly', CCY]) : tl;
};

describe('a change of plan alone keeps the line amount', () => {
  it('without history recorded before it: no movement at the plan change, the mrr change measured from 587.53', () => {
    expect(movesOn(history(false), '2026-11-20')).toEqual(['contraction -108.00']);
  });

  it('a downgrade recorded before it: the plan change keeps 120.00, and the mrr change is an expansion of 359.53', () => {
    expect(movesOn(history(true), '2026-10-25')).toEqual(['contraction -467.53']);
    expect(movesOn(history(true), '2026-11-20')).toEqual(['expansion 359.53']);
  });

  it('the same steps without the plan change (the case that was always right) give the same figures', () => {
    let tl: Timeline = subscriptionTimeline({}, null, sub({}), sub({}).started_at, CCY);
    tl = subscriptionTimeline(tl, sub({}), sub({ mrr: '479.53' }), T2, CCY);
    tl = setAt(tl, 'S7', '2026-10-25T00:00:00Z', '120.00', 'a', ['Basic', 'monthly', CCY]);
    expect(movesOn(tl, '2026-11-20')).toEqual(['expansion 359.53']);
  });

  it('a recorded cancellation before it: nothing to keep, the plan change counts the record (a reactivation)', () => {
    const tl = setAt(history(false), 'S7', '2026-10-25T00:00:00Z', '0', 'c', ['Basic', 'monthly', CCY]);
    expect(movesOn(tl, '2026-11-20')).toEqual(['reactivation 587.53', 'contraction -108.00']);
  });
});
