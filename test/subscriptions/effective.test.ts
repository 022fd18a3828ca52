import { INVALID_DATA as INVALID } from '#lib/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { useApi } from '../support/api.ts';
import { factoriesFor } from '../support/factories.ts';

/**
 * Changes take an effective time: update (`effective_at`), pause (`paused_at`), reactivate
 * (`reactivated_at`) and cancel (`cancelled_at`) may be back-dated, never before the subscription's
 * start or its latest change, and (but for a cancellation) never into the future. The event is
 * dated then and the figures move from then.
 */
const api = useApi();
const { merchantWithSubscription } = factoriesFor(api);
afterEach(() => resetClock());

const ok = async (p: Promise<{ status: number; body: any }>, status = 200) => {
  const r = await p;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body.data;
};

// Its own: sets the clock first and returns the subscription's event and month readers.
const setup = async () => {
  fixedClock('2026-05-01T12:00:00Z');
  const { token, sub } = await merchantWithSubscription(
    { mrr: '100', started_at: '2026-01-15T00:00:00Z' },
    { email: 'eff@example.com', name: 'E' },
  );
  const events = async () =>
    (await ok(api.get(`/subscriptions/events?subscription_id=${sub.id}`, token))) as {
      event_type: string;
      occurred_at: string;
      new_amount: string;
    }[];
  const months = async () =>
    ((await ok(api.get('/metrics/mrr?start_date=2026-01-01&end_date=2026-05-01&interval=month', token))) as any[]).map((m) => [
      m.date,
      m.mrr,
      m.expansion,
      m.churn,
      m.reactivation,
    ]);
  return { token, sub, events, months };
};

describe('changes take an effective time', () => {
  it('back-dated update, pause and reactivation: events dated then, figures moved from then', async () => {
    const { token, sub, events, months } = await setup();
    const up = await ok(api.put(`/subscriptions/${sub.id}`, token, { mrr: '150', effective_at: '2026-02-10T00:00:00+08:00' }));
    expect(up).toMatchObject({ mrr: '150.00', updated_at: '2026-05-01T12:00:00Z' });
    const paused = await ok(api.put(`/subscriptions/${sub.id}/pause`, token, { paused_at: '2026-03-05T00:00:00Z' }));
    expect(paused).toMatchObject({ status: 'paused', paused_at: '2026-03-05T00:00:00Z' });
    await ok(api.put(`/subscriptions/${sub.id}/reactivate`, token, { reactivated_at: '2026-04-20T00:00:00Z' }));
    expect((await events()).map((e) => [e.event_type, e.occurred_at])).toEqual([
      ['reactivated', '2026-04-20T00:00:00Z'],
      ['upgrade', '2026-02-09T16:00:00Z'],
      ['created', '2026-01-15T00:00:00Z'],
    ]);
    expect(await months()).toEqual([
      ['2026-01-01', '100.00', '0.00', '0.00', '0.00'],
      ['2026-02-01', '150.00', '50.00', '0.00', '0.00'],
      ['2026-03-01', '0.00', '0.00', '-150.00', '0.00'],
      ['2026-04-01', '150.00', '0.00', '0.00', '150.00'],
      ['2026-05-01', '150.00', '0.00', '0.00', '0.00'],
    ]);
  });

  it('never before the start or the latest change (422 naming that time), never in the future; nothing is stored', async () => {
    const { token, sub, events, months } = await setup();
    const refuse = async (path: string, body: Record<string, unknown>, field: string, message: string) => {
      const [beforeSub, beforeEvents, beforeMonths] = [
        await ok(api.get(`/subscriptions/${sub.id}`, token)),
        await events(),
        await months(),
      ];
      const r = await api.put(`/subscriptions/${sub.id}${path}`, token, body);
      expect(r.status, `${path} ${JSON.stringify(body)}`).toBe(422);
      expect(r.body).toEqual({ message: INVALID, errors: { [field]: [message] } });
      expect(await ok(api.get(`/subscriptions/${sub.id}`, token))).toEqual(beforeSub);
      expect(await events()).toEqual(beforeEvents);
      expect(await months()).toEqual(beforeMonths);
    };
    const started = 'when the subscription started.';
    // A cancellation dated before the start would wipe the customer from history.
    await refuse(
      '/cancel',
      { cancelled_at: '2026-01-14T23:59:59Z' },
      'cancelled_at',
      `The cancelled at field must be a date after or equal to 2026-01-15T00:00:00Z, ${started}`,
    );
    await refuse(
      '',
      { mrr: '120', effective_at: '2025-12-31T00:00:00Z' },
      'effective_at',
      `The effective at field must be a date after or equal to 2026-01-15T00:00:00Z, ${started}`,
    );
    await refuse(
      '/pause',
      { paused_at: '2026-01-01T00:00:00Z' },
      'paused_at',
      `The paused at field must be a date after or equal to 2026-01-15T00:00:00Z, ${started}`,
    );
    for (const [path, field] of [
      ['', 'effective_at'],
      ['/pause', 'paused_at'],
      ['/reactivate', 'reactivated_at'],
    ] as const) {
      await refuse(
        path,
        { mrr: '120', [field]: '2026-05-01T12:00:01Z' },
        field,
        `The ${field.replace('_', ' ')} field must be a date before or equal to now.`,
      );
    }
    // After a change dated 03-01, nothing may be dated before it.
    await ok(api.put(`/subscriptions/${sub.id}`, token, { mrr: '130', effective_at: '2026-03-01T00:00:00Z' }));
    const latest = "the subscription's latest change.";
    await refuse(
      '',
      { mrr: '90', effective_at: '2026-02-28T00:00:00Z' },
      'effective_at',
      `The effective at field must be a date after or equal to 2026-03-01T00:00:00Z, ${latest}`,
    );
    await refuse(
      '/cancel',
      { cancelled_at: '2026-02-01T00:00:00Z' },
      'cancelled_at',
      `The cancelled at field must be a date after or equal to 2026-03-01T00:00:00Z, ${latest}`,
    );
    // At the latest change itself it is accepted (one instant: both count there).
    await ok(api.put(`/subscriptions/${sub.id}/pause`, token, { paused_at: '2026-03-01T00:00:00Z' }));
    await refuse(
      '/reactivate',
      { reactivated_at: '2026-02-15T00:00:00Z' },
      'reactivated_at',
      `The reactivated at field must be a date after or equal to 2026-03-01T00:00:00Z, ${latest}`,
    );
    // Without a time, a change is dated now.
    await ok(api.put(`/subscriptions/${sub.id}/reactivate`, token, {}));
    expect((await events())[0]).toMatchObject({ event_type: 'reactivated', occurred_at: '2026-05-01T12:00:00Z' });
  });
});
