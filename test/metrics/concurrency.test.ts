import Decimal from 'decimal.js';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { expectedSeries, refRenewals, refSetAt, type RefCustomer } from './reference.ts';
import { runRenewalChecks } from '../support/renewals.ts';

/**
 * Concurrent writers of ONE customer meet on its timeline's version: each loser re-reads and
 * reclassifies, so whatever order they commit in, the figures equal the from-scratch reference
 * (recorded history merges, and order lines are independent, so the final state is the same in
 * every order).
 */
const api = useApi();
afterEach(() => resetClock());

describe('concurrent writes for one customer', () => {
  // This test found the arrival-order dependence fixed in lib/metrics/timeline.ts (a repeated point
  // was dropped, losing it when a later-arriving point landed between): test/metrics/timeline.unit.test.ts.
  it('8 back-dated recorded events and 4 recurring orders sent at once: the figures equal the recomputation of what committed', {
    timeout: 120_000,
  }, async () => {
    fixedClock('2025-06-30T12:00:00Z');
    const { token, merchantId } = await newMerchant();
    const customer = (await api.post('/customers', token, { email: 'same@concurrency.test', name: 'S' })).body.data.id;
    const ref: RefCustomer = { lines: new Map() };
    const events = Array.from({ length: 8 }, (_, i) => ({
      at: `${new Date(Date.parse('2025-01-01T00:00:00Z') + i * 7 * 86_400_000).toISOString().slice(0, 19)}Z`,
      amount: i % 4 === 3 ? 0 : 10 * (i + 1),
    }));
    const orders = Array.from({ length: 4 }, (_, i) => ({
      no: `SAME-${i}`,
      paid: `${new Date(Date.parse('2025-02-03T00:00:00Z') + i * 9 * 86_400_000).toISOString().slice(0, 19)}Z`,
      amount: 30 + i,
    }));
    const answers = await Promise.all([
      ...events.map((e) =>
        api.post('/subscriptions/events', token, {
          customer_id: customer,
          event_type: e.amount > 0 ? 'upgrade' : 'cancel',
          old_amount: e.amount > 0 ? '0' : '1',
          new_amount: String(e.amount),
          occurred_at: e.at,
        }),
      ),
      ...orders.map((o) =>
        api.post('/orders', token, {
          order_no: o.no,
          amount: String(o.amount),
          customer_email: 'same@concurrency.test',
          status: 'paid',
          billing_cycle: 'quarterly',
          paid_at: o.paid,
        }),
      ),
    ]);
    // A dozen writers on one item: some lose every retry until the deadline (409: nothing stored,
    // docs/architecture.md "Retries and the deadline"); on a starved machine a write can also run out of time while its commit is
    // in flight (503 + Retry-After: the write is whole or absent, and the client cannot know which,
    // so it retries with an idempotency key). The reference is what the API shows as stored.
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.every((s) => s === 201 || s === 409 || s === 503),
      JSON.stringify(statuses),
    ).toBe(true);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThan(0);
    const stored = await api.get(`/subscriptions/events?customer_id=${customer}&per_page=100`, token);
    expect(stored.status).toBe(200);
    const storedAt = new Set<string>(stored.body.data.map((e: { occurred_at: string }) => e.occurred_at));
    const orderStored = await Promise.all(orders.map(async (o) => (await api.get(`/orders/${o.no}`, token)).status === 200));
    const committed = [...events.map((e) => storedAt.has(e.at)), ...orderStored];
    statuses.forEach((s, i) => {
      if (s === 201) expect(committed[i], `write ${i} answered 201`).toBe(true);
      if (s === 409) expect(committed[i], `write ${i} answered 409`).toBe(false);
    });
    console.info(
      `[same customer] ${statuses.filter((s) => s === 201).length} of ${statuses.length} answered 201, ${committed.filter(Boolean).length} stored`,
    );
    events.forEach((e, i) => committed[i] && refSetAt(ref, 'I', e.at, e.amount, e.amount > 0 ? 'a' : 'c'));
    for (const [i, o] of orders.entries()) {
      if (!committed[events.length + i]) continue;
      const end = new Date(o.paid);
      end.setUTCMonth(end.getUTCMonth() + 3);
      ref.lines.set(`O${o.no}`, [
        { at: o.paid, amount: new Decimal(o.amount).div(3).toDecimalPlaces(10, Decimal.ROUND_HALF_UP), flag: 'o' },
        { at: `${end.toISOString().slice(0, 19)}Z`, amount: new Decimal(0), flag: 'o' },
      ]);
    }
    // Read once the orders' cycles and their renewal grace have ended (no projections), the scheduler's check run.
    fixedClock('2026-01-01T00:00:00Z');
    await runRenewalChecks(merchantId, [customer]);
    const settled = refRenewals([ref], 30, '2026-01-01T00:00:00Z');
    for (const interval of ['day', 'month'] as const) {
      const r = await api.get(`/metrics/mrr?start_date=2024-12-01&end_date=2025-12-31&interval=${interval}`, token);
      expect(r.status).toBe(200);
      const expected = expectedSeries(settled, '2024-12-01', '2025-12-31', interval);
      expect(r.body.data).toEqual(expected.data);
      expect(r.body.summary).toEqual(expected.summary);
    }
  });
});
