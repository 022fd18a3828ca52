import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { MAX_ACTIONS } from '#lib/db/writes';
import { getMerchant } from '#lib/merchants/store';
import { runRecountJob } from '#lib/metrics/recount';
import { queryAll } from '#lib/db/query';
import { keys } from '#lib/db/keys';
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

/**
 * The recount's jobs, one at a time, until it has switched: the retirement of the generation before
 * (a Query of each of its 16,000 partitions here, in the background on AWS) is left unrun.
 */
const countUntilSwitched = async (merchantId: string) => {
  while ((await getMerchant(merchantId))!.recount!.status !== 'done') {
    const [job] = await queryAll<{ pk: string; sk: string }>({ partition: keys.recountJob(merchantId, '').pk, descending: false }, [
      'pk',
      'sk',
    ]);
    expect(job).toBeDefined();
    await runRecountJob({ pk: job.pk, sk: job.sk }, Date.now() + 600_000);
  }
};

describe('a recount, bounded', () => {
  it('bounded whatever the merchant has: 100 currencies and 1,000 plans of 255 characters, every transaction within 100 actions and 4 MB', async () => {
    fixedClock('2026-03-10T12:00:00Z');
    const { merchantId, token } = await newMerchant();
    const codes = Intl.supportedValuesOf('currency')
      .filter((c) => /^[A-Z]{3}$/.test(c) && c !== 'TWD')
      .slice(0, 100);
    expect(codes).toHaveLength(100);
    // 100 currencies with rates, each its own recount, run at once while there are no customers (the
    // hour's limit is lifted by moving the clock).
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
        }),
      );
    }
    // 1,000 plans of 255 characters: 100 customers in 10 of those currencies, each on plan 0 from
    // 5 January, then on a new plan each day from 12 to 20 March (a customer has one live
    // subscription: each plan's ends the next day, the last one's stays live).
    fixedClock('2026-03-20T12:00:00Z');
    const planOf = (round: number, i: number) => `${String(round * 100 + i).padStart(4, '0')}${'p'.repeat(251)}`;
    const day = (round: number) => (round === 0 ? '2026-01-05T00:00:00Z' : `2026-03-${String(11 + round).padStart(2, '0')}T00:00:00Z`);
    const customers = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => (await ok(api.post('/customers', token, { email: `p${i}@bounds.test` }), 201)).data.id),
    );
    for (let round = 0; round < 10; round++) {
      const batch = await ok(
        api.post('/subscriptions/batch', token, {
          subscriptions: customers.map((customer_id, i) => ({
            external_id: `sub-${round}-${i}`,
            customer_id,
            plan_name: planOf(round, i),
            billing_cycle: 'monthly',
            mrr: '10',
            currency: codes[i % 10],
            started_at: day(round),
            ...(round < 9 ? { cancelled_at: day(round + 1) } : {}),
          })),
        }),
      );
      expect(batch.data.created, JSON.stringify(batch.data.results?.failed?.[0] ?? batch).slice(0, 600)).toBe(100);
    }
    const { requests } = await during(async () => {
      await setZone(merchantId, 'Asia/Taipei');
      await countUntilSwitched(merchantId);
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
    // Each day's plans are that day's: a sample of 10 a day read alone (one plan's figures; the whole
    // plans table reads every plan's partitions).
    for (const [date, round] of [
      ['2026-01-31', 0],
      ['2026-03-16', 5],
      ['2026-03-20', 9],
    ] as const) {
      for (const i of [0, 11, 22, 33, 44, 55, 66, 77, 88, 99]) {
        const mrrOf = async (r: number) =>
          (
            await ok(
              api.get(`/metrics/mrr?start_date=${date}&end_date=${date}&interval=day&plan=${encodeURIComponent(planOf(r, i))}`, token),
            )
          ).data[0].mrr;
        expect(await mrrOf(round), `${date} ${round} ${i}`).toBe('15.00');
        expect(await mrrOf((round + 1) % 10), `${date} ${(round + 1) % 10} ${i}`).toBe('0.00');
      }
    }
  }, 900_000);
});
