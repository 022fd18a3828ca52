import { describe, expect, it } from 'vitest';
import { refusal } from '../support/refusal.ts';
import type { SubscriptionItem } from '#lib/subscriptions/model';
import { asOf, delinquentAt, dueChange, scheduledChanges } from '#lib/subscriptions/effective';
import { creationSteps, decide, newSubscription, type Command } from '#lib/subscriptions/rules';

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

/** Trials and failed renewals. */
const TRIAL_END = '2026-05-10T00:00:00Z';
const trialing = (over: Partial<SubscriptionItem> = {}) =>
  sub({ status: 'trialing', started_at: '2026-04-26T00:00:00Z', trial_ends_at: TRIAL_END, changed_at: '2026-04-26T00:00:00Z', ...over });
const FAILED = '2026-04-20T00:00:00Z';
const pastDue = (over: Partial<SubscriptionItem> = {}) =>
  sub({ status: 'past_due', failed_at: FAILED, changed_at: FAILED, version: 4, ...over });
const settle = (s: SubscriptionItem, at: string, days?: number) => decide(s, { kind: 'settleDue' }, at, days);
const markPastDue = (input: Record<string, unknown> = {}): Command => ({ kind: 'pastDue', input: input as never });
const recover = (input: Record<string, unknown> = {}): Command => ({ kind: 'recover', input: input as never });

describe('decide: pastDue', () => {
  it('from active: past_due from failed_at (default now), its mrr still counted (past_due event mrr → mrr), webhook subscription.past_due', () => {
    const now = decide(sub(), markPastDue(), NOW);
    expect(now.next).toMatchObject({ status: 'past_due', failed_at: NOW, mrr: '49.00' });
    expect(now.effective).toBe(NOW);
    expect(now.event).toEqual({
      type: 'past_due',
      old_amount: '49.00',
      new_amount: '49.00',
      old_plan: 'Pro',
      new_plan: 'Pro',
      occurred_at: NOW,
    });
    expect(now.webhook).toBe('subscription.past_due');
    const dated = decide(sub(), markPastDue({ failed_at: '2026-04-28T00:00:00Z' }), NOW);
    expect(dated.next.failed_at).toBe('2026-04-28T00:00:00Z');
    expect(dated.event?.occurred_at).toBe('2026-04-28T00:00:00Z');
    // A subscription not started yet fails at its start at the earliest.
    expect(decide(sub({ started_at: '2026-06-01T00:00:00Z' }), markPastDue(), NOW).next.failed_at).toBe('2026-06-01T00:00:00Z');
  });

  it('refuses anything not active, naming what it is, and a failure dated before the latest change', () => {
    const message = (s: SubscriptionItem) => refusal(() => decide(s, markPastDue(), NOW));
    expect(message(pastDue())).toEqual({ status: ['Only an active subscription can be marked past due; it is already past due.'] });
    for (const status of ['trialing', 'paused', 'cancelled'] as const)
      expect(message(sub({ status }))).toEqual({ status: [`Only an active subscription can be marked past due; it is ${status}.`] });
    const changed = sub({ changed_at: '2026-04-25T00:00:00Z', version: 5 });
    expect(refusal(() => decide(changed, markPastDue({ failed_at: '2026-04-24T23:59:59Z' }), NOW))).toEqual({
      failed_at: ["The failed at field must be a date after or equal to 2026-04-25T00:00:00Z, the subscription's latest change."],
    });
    expect(decide(changed, markPastDue({ failed_at: '2026-04-25T00:00:00Z' }), NOW).next.status).toBe('past_due');
  });
});

describe('decide: recover', () => {
  it('from past_due: active again from recovered_at (default now), failed_at cleared, a recovered event (mrr → mrr)', () => {
    const r = decide(pastDue(), recover(), NOW);
    expect(r.next).toMatchObject({ status: 'active', failed_at: null, mrr: '49.00' });
    expect(r.effective).toBe(NOW);
    expect(r.event).toEqual({
      type: 'recovered',
      old_amount: '49.00',
      new_amount: '49.00',
      old_plan: 'Pro',
      new_plan: 'Pro',
      occurred_at: NOW,
    });
    expect(r.webhook).toBe('subscription.recovered');
    expect(decide(pastDue(), recover({ recovered_at: FAILED }), NOW).event?.occurred_at).toBe(FAILED);
  });

  it('refuses anything not past due, and a recovery before the failure', () => {
    for (const status of ['trialing', 'active', 'paused', 'cancelled'] as const)
      expect(refusal(() => decide(sub({ status }), recover(), NOW))).toEqual({
        status: [`Only a past-due subscription can be recovered; it is ${status}.`],
      });
    expect(refusal(() => decide(pastDue(), recover({ recovered_at: '2026-04-19T23:59:59Z' }), NOW))).toEqual({
      recovered_at: [`The recovered at field must be a date after or equal to ${FAILED}, the subscription's latest change.`],
    });
  });

  it('while past due: an update moves the mrr (upgrade) and it stays past due; a cancel is a normal one; pause and reactivate are refused', () => {
    const up = decide(pastDue(), update({ mrr: '59.00' }), NOW);
    expect(up.next).toMatchObject({ status: 'past_due', mrr: '59.00', failed_at: FAILED });
    expect(up.event).toMatchObject({ type: 'upgrade', old_amount: '49.00', new_amount: '59.00' });
    const cancelled = decide(pastDue(), { kind: 'cancel', input: {} as never }, NOW);
    expect(cancelled.next).toMatchObject({ status: 'cancelled', failed_at: null, cancelled_at: NOW });
    expect(cancelled.event).toMatchObject({ type: 'cancel', old_amount: '49.00', new_amount: '0' });
    expect(cancelled.webhook).toBe('subscription.cancelled');
    expect(Object.keys(refusal(() => decide(pastDue(), { kind: 'pause', input: {} as never }, NOW)))).toEqual(['status']);
    expect(Object.keys(refusal(() => decide(pastDue(), { kind: 'reactivate', input: {} as never }, NOW)))).toEqual(['status']);
  });
});

describe('decide: a trial', () => {
  it('while trialing: plan and mrr change without an event, its end moves to a future time only; not trialing, its end cannot move', () => {
    const moved = decide(trialing(), update({ mrr: '99.00', trial_ends_at: '2026-05-20T00:00:00Z' }), NOW);
    expect(moved.next).toMatchObject({ status: 'trialing', mrr: '99.00', trial_ends_at: '2026-05-20T00:00:00Z' });
    expect(moved.event).toBeUndefined();
    expect(moved.webhook).toBe('subscription.updated');
    expect(decide(trialing(), update({ trial_ends_at: TRIAL_END }), NOW).unchanged).toBe(true);
    expect(refusal(() => decide(trialing(), update({ trial_ends_at: NOW }), NOW))).toEqual({
      trial_ends_at: ['The trial ends at field must be a date after now.'],
    });
    expect(refusal(() => decide(pastDue(), update({ trial_ends_at: '2026-05-20T00:00:00Z' }), NOW))).toEqual({
      trial_ends_at: ['The trial ends at field can be changed only while the subscription is trialing; it is past_due.'],
    });
  });

  it('cancelled while trialing: trial_cancelled (0 → 0) and its webhook; pause and reactivate are refused', () => {
    const c = decide(trialing(), { kind: 'cancel', input: { reason: 'no' } as never }, NOW);
    expect(c.next).toMatchObject({ status: 'cancelled', cancelled_at: NOW, cancel_reason: 'no' });
    expect(c.event).toMatchObject({ type: 'trial_cancelled', old_amount: '0', new_amount: '0', occurred_at: NOW });
    expect(c.webhook).toBe('subscription.trial_cancelled');
    expect(refusal(() => decide(trialing(), { kind: 'pause', input: {} as never }, NOW))).toEqual({
      status: ['Only an active subscription can be paused; it is trialing.'],
    });
    expect(Object.keys(refusal(() => decide(trialing(), { kind: 'reactivate', input: {} as never }, NOW)))).toEqual(['status']);
  });
});

describe('decide: settleDue', () => {
  const AFTER_TRIAL = '2026-05-10T00:00:30Z';

  it('convert: at trial_ends_at the trial becomes active, trial_converted (0 → mrr) there, webhook subscription.trial_converted', () => {
    const c = settle(trialing(), AFTER_TRIAL);
    expect(c.next).toMatchObject({ status: 'active', trial_ends_at: TRIAL_END });
    expect(c.effective).toBe(TRIAL_END);
    expect(c.event).toEqual({
      type: 'trial_converted',
      old_amount: '0',
      new_amount: '49.00',
      old_plan: 'Pro',
      new_plan: 'Pro',
      occurred_at: TRIAL_END,
    });
    expect(c.webhook).toBe('subscription.trial_converted');
    expect(settle(trialing(), TRIAL_END).next.status).toBe('active');
    expect(settle(trialing(), '2026-05-09T23:59:59Z').unchanged).toBe(true);
  });

  it('cancel: a trial scheduled to cancel before (or as) it ends is trial_cancelled (0 → 0), never converted', () => {
    for (const cancelAt of ['2026-05-05T00:00:00Z', TRIAL_END]) {
      const c = settle(trialing({ cancel_at: cancelAt, cancel_reason: 'no' }), AFTER_TRIAL);
      expect(c.next).toMatchObject({ status: 'cancelled', cancelled_at: cancelAt, cancel_at: null, cancel_reason: 'no' });
      expect(c.event).toMatchObject({ type: 'trial_cancelled', old_amount: '0', new_amount: '0', occurred_at: cancelAt });
      expect(c.webhook).toBe('subscription.trial_cancelled');
    }
    // Scheduled after the end: it converts first (the cancellation is the next settle's).
    const later = trialing({ cancel_at: '2026-05-10T00:00:10Z' });
    const first = settle(later, AFTER_TRIAL);
    expect(first.event?.type).toBe('trial_converted');
    const second = settle({ ...first.next, changed_at: first.effective }, AFTER_TRIAL);
    expect(second.event).toMatchObject({ type: 'cancel', old_amount: '49.00', new_amount: '0', occurred_at: '2026-05-10T00:00:10Z' });
    expect(second.webhook).toBe('subscription.cancelled');
  });

  it('delinquent: still past due delinquency_days after failed_at, cancelled then (reason delinquent, cancel event mrr → 0)', () => {
    const dueAt = '2026-05-20T00:00:00Z'; // FAILED + 30 days
    expect(delinquentAt(FAILED, 30)).toBe(dueAt);
    expect(settle(pastDue(), '2026-05-19T23:59:59Z').unchanged).toBe(true);
    const d = settle(pastDue(), dueAt);
    expect(d.next).toMatchObject({ status: 'cancelled', cancelled_at: dueAt, cancel_reason: 'delinquent', failed_at: null });
    expect(d.effective).toBe(dueAt);
    expect(d.event).toEqual({
      type: 'cancel',
      old_amount: '49.00',
      new_amount: '0',
      old_plan: 'Pro',
      new_plan: 'Pro',
      occurred_at: dueAt,
    });
    expect(d.webhook).toBe('subscription.cancelled');
    // The merchant's delinquency_days.
    expect(settle(pastDue(), '2026-04-30T00:00:00Z', 10).next).toMatchObject({
      status: 'cancelled',
      cancelled_at: '2026-04-30T00:00:00Z',
    });
    expect(settle(pastDue(), '2026-04-29T23:59:59Z', 10).unchanged).toBe(true);
    // A cancellation scheduled at the same instant comes first: its own reason, not delinquent.
    const both = settle(pastDue({ cancel_at: dueAt, cancel_reason: 'moved' }), dueAt);
    expect(both.next).toMatchObject({ status: 'cancelled', cancelled_at: dueAt, cancel_reason: 'moved' });
    // Recovered: nothing is due any more.
    expect(settle(sub({ failed_at: null }), '2026-06-01T00:00:00Z').unchanged).toBe(true);
  });
});

describe('creationSteps', () => {
  const AT = '2026-05-01T12:00:00Z';
  const created = (over: { started_at?: string; trial_ends_at?: string | null } = {}) =>
    newSubscription(
      { pk: 'p', sk: 's', id: 7, customer_id: 3, plan_name: 'Pro', mrr: '49.00', billing_cycle: 'monthly', source: 'api', ...over },
      AT,
    );
  const summary = (steps: ReturnType<typeof creationSteps>) =>
    steps.map((s) => [s.event.type, s.effective, s.event.old_amount, s.event.new_amount, s.state.status]);

  it('no trial: created (0 → mrr) at its start, active', () => {
    const steps = creationSteps(created({ started_at: '2026-04-01T00:00:00Z' }), AT);
    expect(summary(steps)).toEqual([['created', '2026-04-01T00:00:00Z', '0', '49.00', 'active']]);
    expect(steps[0].state.changed_at).toBe('2026-04-01T00:00:00Z');
  });

  it('a trial running on: created at 0, trialing', () => {
    const steps = creationSteps(created({ trial_ends_at: '2026-05-15T00:00:00Z' }), AT);
    expect(summary(steps)).toEqual([['created', AT, '0', '0', 'trialing']]);
  });

  it('a trial ended already (or ending now): created at 0, then trial_converted (0 → mrr) at its end, active from then', () => {
    for (const end of ['2026-04-15T00:00:00Z', AT]) {
      const steps = creationSteps(created({ started_at: '2026-04-01T00:00:00Z', trial_ends_at: end }), AT);
      expect(summary(steps)).toEqual([
        ['created', '2026-04-01T00:00:00Z', '0', '0', 'trialing'],
        ['trial_converted', end, '0', '49.00', 'active'],
      ]);
      expect(steps[1].state.changed_at).toBe(end);
    }
  });

  it('imported cancelled: before (or as) its trial ends, trial_cancelled; after, converted then cancelled', () => {
    const trial = created({ started_at: '2026-04-01T00:00:00Z', trial_ends_at: '2026-04-15T00:00:00Z' });
    for (const cancelledAt of ['2026-04-10T00:00:00Z', '2026-04-15T00:00:00Z'])
      expect(summary(creationSteps(trial, AT, { at: cancelledAt, reason: 'no' }))).toEqual([
        ['created', '2026-04-01T00:00:00Z', '0', '0', 'trialing'],
        ['trial_cancelled', cancelledAt, '0', '0', 'cancelled'],
      ]);
    const steps = creationSteps(trial, AT, { at: '2026-04-20T00:00:00Z', reason: 'no' });
    expect(summary(steps)).toEqual([
      ['created', '2026-04-01T00:00:00Z', '0', '0', 'trialing'],
      ['trial_converted', '2026-04-15T00:00:00Z', '0', '49.00', 'active'],
      ['cancel', '2026-04-20T00:00:00Z', '49.00', '0', 'cancelled'],
    ]);
    expect(steps[2].state).toMatchObject({ cancelled_at: '2026-04-20T00:00:00Z', cancel_reason: 'no', changed_at: '2026-04-20T00:00:00Z' });
  });

  it('refuses a trial ending at or before its start (a start by default: now)', () => {
    const refused = { trial_ends_at: ['The trial ends at field must be a date after started at.'] };
    expect(
      refusal(() => creationSteps(created({ started_at: '2026-04-01T00:00:00Z', trial_ends_at: '2026-04-01T00:00:00Z' }), AT)),
    ).toEqual(refused);
    expect(refusal(() => creationSteps(created({ trial_ends_at: AT }), AT))).toEqual(refused);
  });
});

describe('scheduledChanges, dueChange, asOf', () => {
  const T = '2026-05-10T00:00:00Z';

  it('lists each schedule earliest first; at one instant a cancellation before a delinquency before a conversion', () => {
    expect(scheduledChanges(trialing({ trial_ends_at: T, cancel_at: T }), 30)).toEqual([
      { kind: 'cancel', at: T },
      { kind: 'convert', at: T },
    ]);
    // failed_at 30 days before T: the delinquency falls at T too.
    expect(scheduledChanges(pastDue({ failed_at: '2026-04-10T00:00:00Z', cancel_at: T }), 30)).toEqual([
      { kind: 'cancel', at: T },
      { kind: 'delinquent', at: T },
    ]);
    expect(scheduledChanges(trialing({ trial_ends_at: T, cancel_at: '2026-05-11T00:00:00Z' }), 30)).toEqual([
      { kind: 'convert', at: T },
      { kind: 'cancel', at: '2026-05-11T00:00:00Z' },
    ]);
    expect(scheduledChanges(pastDue({ cancel_at: '2026-05-01T00:00:00Z' }), 30)).toEqual([
      { kind: 'cancel', at: '2026-05-01T00:00:00Z' },
      { kind: 'delinquent', at: '2026-05-20T00:00:00Z' },
    ]);
  });

  it('nothing for a cancelled or deleted subscription, a trial end kept after conversion, or a failure recovered', () => {
    expect(scheduledChanges(trialing({ status: 'cancelled', cancel_at: T }), 30)).toEqual([]);
    expect(scheduledChanges(trialing({ deleted_at: NOW }), 30)).toEqual([]);
    expect(scheduledChanges(sub({ trial_ends_at: T }), 30)).toEqual([]);
    expect(scheduledChanges(sub({ failed_at: FAILED }), 30)).toEqual([]);
  });

  it('dueChange: the earliest once its time has come (at it included), else null', () => {
    const both = trialing({ trial_ends_at: T, cancel_at: T });
    expect(dueChange(both, '2026-05-09T23:59:59Z', 30)).toBeNull();
    expect(dueChange(both, T, 30)).toEqual({ kind: 'cancel', at: T });
    expect(dueChange(pastDue(), '2026-05-20T00:00:00Z', 30)).toEqual({ kind: 'delinquent', at: '2026-05-20T00:00:00Z' });
    expect(dueChange(pastDue(), '2026-05-20T00:00:00Z', 31)).toBeNull();
  });

  it('asOf: every change due applied in order, nothing written (updated_at and version stay); nothing due: the subscription itself', () => {
    const converted = asOf(trialing({ cancel_at: '2026-05-12T00:00:00Z' }), '2026-05-11T00:00:00Z', 30);
    expect(converted).toMatchObject({ status: 'active', cancel_at: '2026-05-12T00:00:00Z', trial_ends_at: TRIAL_END });
    const thenCancelled = asOf(trialing({ cancel_at: '2026-05-12T00:00:00Z' }), '2026-05-12T00:00:00Z', 30);
    expect(thenCancelled).toMatchObject({ status: 'cancelled', cancelled_at: '2026-05-12T00:00:00Z', cancel_at: null });
    expect(asOf(trialing({ cancel_at: TRIAL_END }), TRIAL_END, 30)).toMatchObject({ status: 'cancelled', cancelled_at: TRIAL_END });
    const delinquent = asOf(pastDue(), '2026-06-01T00:00:00Z', 30);
    expect(delinquent).toMatchObject({
      status: 'cancelled',
      cancelled_at: '2026-05-20T00:00:00Z',
      cancel_reason: 'delinquent',
      failed_at: null,
      updated_at: '2026-04-01T00:00:00Z',
      version: 4,
    });
    const notYet = pastDue();
    expect(asOf(notYet, '2026-05-19T23:59:59Z', 30)).toBe(notYet);
  });
});
