import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { addMonths, deepOrders } from './deep-orders.ts';
import { expectedSeries, refSetAt, refSetFrom, type RefCustomer } from './reference.ts';

/**
 * History at any depth: a customer's timeline is stored in items of bounded size however long its
 * history (the head inline while small, then one chunk per month), every write stays within one
 * transaction, and the figures equal a from-scratch recomputation (test/metrics/reference.ts).
 * The test client refuses any item over 64 KB (test/support/write-limits.ts), so a timeline that
 * grew past that would fail these tests by itself.
 */
const api = useApi();
afterEach(() => resetClock());

describe('history at any depth', () => {
  // Small enough to keep the suite light (its points pass the inline limit twice over); 10,000 in depth.slow.test.ts.
  it('a customer with 800 paid monthly orders is stored in bounded chunks and stays exact (6,000 and more: depth.slow.test.ts)', {
    timeout: 120_000,
  }, async () => {
    await deepOrders(api, 800);
  });

  it('20 years of monthly changes: a change back-dated 20 years is accepted, exact, and costs at most 3× a change made today', {
    timeout: 120_000,
  }, async () => {
    fixedClock('2026-06-01T00:00:00Z');
    const { token } = await newMerchant();
    const customer = (await api.post('/customers', token, { email: 'twenty@example.com', name: 'T' })).body.data.id as number;
    const ref: RefCustomer = { lines: new Map() };
    const sub = await api.post('/subscriptions/batch', token, {
      subscriptions: [
        {
          external_id: 'twenty',
          customer_id: customer,
          plan_name: 'P',
          mrr: '100',
          billing_cycle: 'monthly',
          started_at: '2006-01-01T00:00:00Z',
        },
      ],
    });
    const subId = sub.body.data.results.created[0].id as number;
    refSetFrom(ref, `S${subId}`, '2006-01-01T00:00:00Z', 100, 'a');
    let mrr = 100;
    const events = [];
    for (let m = 1; m < 240; m++) {
      const next = mrr + (m % 3 === 0 ? -7 : 11);
      const at = addMonths('2006-01-01T00:00:00Z', m);
      events.push({
        subscription_external_id: 'twenty',
        event_type: next > mrr ? 'upgrade' : 'downgrade',
        old_amount: String(mrr),
        new_amount: String(next),
        occurred_at: at,
      });
      refSetAt(ref, `S${subId}`, at, next, 'a');
      mrr = next;
    }
    for (let b = 0; b < events.length; b += 100) {
      const r = await api.post('/subscriptions/events/batch', token, { events: events.slice(b, b + 100) });
      expect(r.body.data.failed, JSON.stringify(r.body.data.results.failed.slice(0, 2))).toBe(0);
    }

    const today = await api.counted('POST', '/subscriptions/events', {
      token,
      body: {
        customer_id: customer,
        subscription_id: subId,
        event_type: 'upgrade',
        old_amount: String(mrr),
        new_amount: String(mrr + 1),
        occurred_at: '2026-05-31T00:00:00Z',
      },
    });
    expect(today.res.status, JSON.stringify(today.res.body)).toBe(201);
    refSetAt(ref, `S${subId}`, '2026-05-31T00:00:00Z', mrr + 1, 'a');
    const back = await api.counted('POST', '/subscriptions/events', {
      token,
      body: {
        customer_id: customer,
        subscription_id: subId,
        event_type: 'upgrade',
        old_amount: '100',
        new_amount: '150',
        occurred_at: '2006-01-15T00:00:00Z',
      },
    });
    expect(back.res.status, JSON.stringify(back.res.body)).toBe(201);
    refSetAt(ref, `S${subId}`, '2006-01-15T00:00:00Z', 150, 'a');
    console.info(
      `[depth] change today: ${today.requests} requests, ${today.capacityUnits} capacity units; back-dated 20 years: ${back.requests} requests, ${back.capacityUnits} capacity units`,
    );
    expect(back.requests).toBeLessThanOrEqual(3 * today.requests);
    expect(back.capacityUnits).toBeLessThanOrEqual(3 * today.capacityUnits);

    for (const [start, end] of [
      ['2006-01-01', '2015-12-31'],
      ['2016-06-02', '2026-06-01'],
    ]) {
      const got = (await api.get(`/metrics/mrr?start_date=${start}&end_date=${end}&interval=month`, token)).body.data;
      const want = expectedSeries([ref], start, end, 'month').data;
      expect(
        got.map((p: { date: string; mrr: string; expansion: string; contraction: string }) => [p.date, p.mrr, p.expansion, p.contraction]),
      ).toEqual(want.map((p) => [p.date, p.mrr, p.expansion, p.contraction]));
    }
  });
});
