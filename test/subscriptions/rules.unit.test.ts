import { describe, expect, it } from 'vitest';
import { refusal } from '../support/refusal.ts';
import type { SubscriptionItem } from '#lib/subscriptions/model';
import { decide, type Command } from '#lib/subscriptions/rules';

/** The subscription lifecycle (docs/subscriptions.md), decided in memory: no database, no HTTP. */
const NOW = '2026-05-01T12:00:00Z';
const sub = (over: Partial<SubscriptionItem> = {}): SubscriptionItem => ({
  pk: 'p',
  sk: 's',
  id: 7,
  customer_id: 3,
  status: 'active',
  plan_name: 'Pro',
  mrr: '49.00',
  billing_cycle: 'monthly',
  source: 'api',
  started_at: '2026-01-15T00:00:00Z',
  current_period_start: '2026-04-15T00:00:00Z',
  cancelled_at: null,
  paused_at: null,
  cancel_reason: null,
  created_at: '2026-01-15T00:00:00Z',
  updated_at: '2026-04-01T00:00:00Z',
  version: 3,
  ...over,
});

const update = (input: Partial<Extract<Command, { kind: 'update' }>['input']>): Command => ({ kind: 'update', input: input as never });

describe('decide: update', () => {
  it('an mrr up is an upgrade at effective_at, down a downgrade; plan changes ride along', () => {
    const up = decide(sub(), update({ mrr: '99.00', plan_name: 'Max' }), NOW);
    expect(up.event).toEqual({
      type: 'upgrade',
      old_amount: '49.00',
      new_amount: '99.00',
      old_plan: 'Pro',
      new_plan: 'Max',
      occurred_at: NOW,
    });
    expect(up.next).toMatchObject({ mrr: '99.00', plan_name: 'Max', status: 'active' });
    expect(up.webhook).toBe('subscription.updated');
    const down = decide(sub(), update({ mrr: '19.00', effective_at: '2026-04-20T00:00:00Z' }), NOW);
    expect(down.event).toMatchObject({ type: 'downgrade', occurred_at: '2026-04-20T00:00:00Z' });
    expect(down.effective).toBe('2026-04-20T00:00:00Z');
  });

  it('an equal mrr (in any notation) records no event; nothing changed writes nothing', () => {
    expect(decide(sub(), update({ mrr: '49.0', plan_name: 'Pro+' }), NOW).event).toBeUndefined();
    expect(decide(sub(), update({ mrr: '49' }), NOW).unchanged).toBe(true);
  });

  it('refuses a cancelled subscription, and a schedule not after now', () => {
    expect(refusal(() => decide(sub({ status: 'cancelled' }), update({ mrr: '10.00' }), NOW))).toEqual({
      status: ['A cancelled subscription cannot be updated.'],
    });
    expect(refusal(() => decide(sub(), update({ cancel_at: NOW }), NOW))).toEqual({
      cancel_at: ['The cancel at field must be a date after now.'],
    });
    expect(decide(sub({ cancel_at: '2026-06-01T00:00:00Z' }), update({ cancel_at: null }), NOW).next.cancel_at).toBeNull();
  });
});

describe('decide: cancel, pause, reactivate', () => {
  it('cancel now: cancelled with its cancel event and the reason; a future date only schedules it', () => {
    const now = decide(sub(), { kind: 'cancel', input: { reason: 'too expensive' } as never }, NOW);
    expect(now.next).toMatchObject({ status: 'cancelled', cancelled_at: NOW, cancel_reason: 'too expensive', cancel_at: null });
    expect(now.event).toMatchObject({ type: 'cancel', old_amount: '49.00', new_amount: '0' });
    expect(now.webhook).toBe('subscription.cancelled');
    const later = decide(sub(), { kind: 'cancel', input: { cancelled_at: '2026-06-01T00:00:00Z' } as never }, NOW);
    expect(later.next).toMatchObject({ status: 'active', cancel_at: '2026-06-01T00:00:00Z' });
    expect(later.event).toBeUndefined();
    expect(refusal(() => decide(sub({ status: 'cancelled' }), { kind: 'cancel', input: {} as never }, NOW))).toEqual({
      status: ['The subscription is already cancelled.'],
    });
  });

  it('pause: from active only, no event', () => {
    const p = decide(sub(), { kind: 'pause', input: {} as never }, NOW);
    expect(p.next).toMatchObject({ status: 'paused', paused_at: NOW });
    expect(p.event).toBeUndefined();
    expect(refusal(() => decide(sub({ status: 'paused' }), { kind: 'pause', input: {} as never }, NOW))).toEqual({
      status: ['The subscription is already paused.'],
    });
    expect(refusal(() => decide(sub({ status: 'cancelled' }), { kind: 'pause', input: {} as never }, NOW))).toEqual({
      status: ['A cancelled subscription cannot be paused.'],
    });
  });

  it('reactivate: from paused or cancelled with a reactivated event; an active one with a schedule just drops it', () => {
    const r = decide(sub({ status: 'paused', paused_at: '2026-04-20T00:00:00Z' }), { kind: 'reactivate', input: {} as never }, NOW);
    expect(r.next).toMatchObject({ status: 'active', paused_at: null });
    expect(r.event).toMatchObject({ type: 'reactivated', old_amount: '0', new_amount: '49.00' });
    const kept = decide(sub({ cancel_at: '2026-06-01T00:00:00Z' }), { kind: 'reactivate', input: {} as never }, NOW);
    expect(kept.next.cancel_at).toBeNull();
    expect(kept.event).toBeUndefined();
    expect(refusal(() => decide(sub(), { kind: 'reactivate', input: {} as never }, NOW))).toEqual({
      status: ['The subscription is already active.'],
    });
  });

  it('a change dated before the latest one is refused, naming that time', () => {
    const changed = sub({ changed_at: '2026-04-20T00:00:00Z', version: 5 });
    const fields = refusal(() => decide(changed, { kind: 'pause', input: { paused_at: '2026-04-19T00:00:00Z' } as never }, NOW));
    expect(fields.paused_at[0]).toContain('2026-04-20T00:00:00Z');
  });
});

describe('decide: a scheduled cancellation', () => {
  it('settles at cancel_at once due (its cancel event there), and does nothing before', () => {
    const scheduled = sub({ cancel_at: '2026-04-30T00:00:00Z' });
    const due = decide(scheduled, { kind: 'settleDue' }, NOW);
    expect(due.next).toMatchObject({ status: 'cancelled', cancelled_at: '2026-04-30T00:00:00Z', cancel_at: null });
    expect(due.event).toMatchObject({ type: 'cancel', occurred_at: '2026-04-30T00:00:00Z' });
    expect(decide(sub({ cancel_at: '2026-06-01T00:00:00Z' }), { kind: 'settleDue' }, NOW).unchanged).toBe(true);
  });
});
