import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { MAX_ACTIONS } from '#lib/db/writes';
import { getMerchant } from '#lib/merchants/store';
import { settleRecounts } from '#lib/metrics';
import { backofficeJwt } from '../backoffice/support.ts';
import { newMerchant, ok, useApi } from '../support/api.ts';
import { recordSentRequests } from '../support/sent-requests.ts';

/**
 * A recount stays within DynamoDB's limits whatever the merchant has (docs/metrics-design.md): 100
 * currencies with rates and 1,000 plans of 255 characters, every transaction within 100 actions
 * and 4 MB, every item written small. In the scale suite: it takes minutes on DynamoDB Local.
 */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const api = useApi();
const { during } = recordSentRequests('recount-bounds:record');
afterEach(() => resetClock());

const setZone = async (merchantId: string, timezone: string) =>
  api.request('PUT', '/settings', {
    headers: { authorization: `Bearer ${await backofficeJwt(merchantId, 'admin')}` },
    body: { timezone },
    settle: false,
  });

describe('a recount, bounded', () => {
  it('bounded whatever the merchant has: 100 currencies and 1,000 plans of 255 characters, every transaction within 100 actions and 4 MB', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const { merchantId, token } = await newMerchant();
    const codes = Intl.supportedValuesOf('currency')
      .filter((c) => /^[A-Z]{3}$/.test(c) && c !== 'TWD')
      .slice(0, 100);
    expect(codes).toHaveLength(100);
    // 100 currencies with rates (each its own recount; the hour's limit is lifted by moving the clock).
    for (const [i, code] of codes.entries()) {
      fixedClock(new Date(Date.parse('2026-03-10T12:00:00Z') + i * 400_000).toISOString());
      await ok(
        api.request('PUT', `/exchange-rates/${code}`, {
          token,
          body: {
            rates: [
              { month: '2026-01', rate: '1.5' },
              { month: '2026-03', rate: '1.5' },
            ],
          },
          settle: false,
        }),
      );
    }
    // 1,000 plans of 255 characters: 100 customers in 10 of those currencies, each subscription moved
    // to a new plan on each of 9 days (a customer has one live subscription: its plans follow in time).
    const planOf = (round: number, i: number) => `${String(round * 100 + i).padStart(4, '0')}${'p'.repeat(251)}`;
    const customers = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => (await ok(api.post('/customers', token, { email: `p${i}@bounds.test` }), 201)).data.id),
    );
    const batch = await ok(
      api.post('/subscriptions/batch', token, {
        subscriptions: customers.map((customer_id, i) => ({
          external_id: `sub-${i}`,
          customer_id,
          plan_name: planOf(0, i),
          billing_cycle: 'monthly',
          mrr: '10',
          currency: codes[i % 10],
          started_at: '2026-01-05T00:00:00Z',
        })),
      }),
    );
    expect(batch.data.created, JSON.stringify(batch.data.results?.failed?.[0] ?? batch).slice(0, 600)).toBe(100);
    const subs: number[] = batch.data.results.created.map((c: { id: number }) => c.id);
    for (let round = 1; round < 10; round++) {
      fixedClock(`2026-03-${String(11 + round).padStart(2, '0')}T00:00:00Z`);
      for (let at = 0; at < subs.length; at += 20)
        await Promise.all(
          subs
            .slice(at, at + 20)
            .map((id, k) => ok(api.request('PUT', `/subscriptions/${id}`, { token, body: { plan_name: planOf(round, at + k) } }))),
        );
    }
    const { requests } = await during(async () => {
      await setZone(merchantId, 'Asia/Taipei');
      await settleRecounts(merchantId);
    });
    const transactions = requests.filter((r) => r.operation === 'TransactWriteItems');
    expect(transactions.length).toBeGreaterThan(0);
    for (const t of transactions) {
      expect(t.body.TransactItems.length).toBeLessThanOrEqual(MAX_ACTIONS);
      expect(JSON.stringify(t.body).length).toBeLessThan(4 * 1024 * 1024);
    }
    // Every item written stays small (a generation's settings one item per currency; the registry one item per segment).
    for (const r of requests.filter((x) => x.operation === 'BatchWriteItem' || x.operation === 'TransactWriteItems'))
      for (const item of JSON.stringify(r.body).split('"Item":').slice(1)) expect(item.length).toBeLessThan(64 * 1024);
    // Switched: January counts the 100 at the generation's rate (100 × 10 × 1.5), and each day's plans are that day's 100.
    expect((await getMerchant(merchantId))!.recount!.status).toBe('done');
    const months = await ok(api.get('/metrics/mrr?start_date=2026-01-01&end_date=2026-01-31&interval=month', token));
    expect(months.data[0].mrr).toBe('1500.00');
    for (const [date, round] of [
      ['2026-01-31', 0],
      ['2026-03-16', 5],
      ['2026-03-20', 9],
    ] as const) {
      const plans = await ok(api.get(`/metrics/plans?date=${date}`, token));
      const held = plans.data.filter((p: { mrr: string }) => p.mrr !== '0.00');
      expect(held.map((p: { plan: string }) => p.plan).sort(), date).toEqual(customers.map((_, i) => planOf(round, i)).sort());
      expect(held.filter((p: { mrr: string }) => p.mrr !== '15.00')).toEqual([]);
    }
  }, 900_000);
});
