import { retryStats } from '#lib/db/retry';
import { transactionConflictModel } from '../../test/support/faults.ts';
import { hotLoad } from '../../test/support/hot-load.ts';
import { benchMerchant, startApi } from '../support/api.ts';
import type { BenchItem } from '../support/report.ts';
import { ratio, round } from '../support/stats.ts';

/**
 * Item 5: 50 concurrent clients creating paid orders for one merchant against the same load spread
 * over 50 merchants, with the transaction-conflict model of #4 installed (test/support/faults.ts:
 * AWS's transaction isolation on DynamoDB Local), alternating the two sides over ROUNDS rounds;
 * the load is the hot-merchant slow test's (test/support/hot-load.ts).
 */
const CLIENTS = 50;
const ORDERS = Number(process.env.BENCH_HOT_ORDERS ?? 1000); // per side
const ROUNDS = 4;
const CUSTOMERS_PER_CLIENT = 8;

export const item: BenchItem = {
  name: 'hot-merchant',
  title: `5. Hot merchant: ${CLIENTS} concurrent clients, one merchant vs ${CLIENTS} merchants (transaction-conflict model on)`,
  run: async () => {
    const api = await startApi();
    const model = transactionConflictModel();
    try {
      const spread = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => benchMerchant(`spread ${i}`)));
      const hot = await benchMerchant('hot');
      const post = (token: string, body: Record<string, unknown>) => api.request('POST', '/orders', token, body);
      // Handlers loaded outside the measurement.
      await post(hot.token, { order_no: 'WARM', amount: '1.00', status: 'paid', customer_email: 'warm@example.com' });
      const sides = { spread: { ms: 0, non201: 0, conflicts: 0, retries: 0 }, hot: { ms: 0, non201: 0, conflicts: 0, retries: 0 } };
      const perClient = Math.ceil(ORDERS / CLIENTS / ROUNDS);
      for (let round = 0; round < ROUNDS; round++) {
        for (const side of round % 2 ? (['hot', 'spread'] as const) : (['spread', 'hot'] as const)) {
          const before = { conflicts: model.stats.conflicts, retries: retryStats.retries };
          const tokens = side === 'hot' ? [hot.token] : spread.map((m) => m.token);
          const r = await hotLoad(post, tokens, {
            clients: CLIENTS,
            perClient,
            customersPerClient: CUSTOMERS_PER_CLIENT,
            prefix: `R${round}`,
          });
          sides[side].ms += r.ms;
          sides[side].non201 += r.non201;
          sides[side].conflicts += model.stats.conflicts - before.conflicts;
          sides[side].retries += retryStats.retries - before.retries;
        }
      }
      const orders = perClient * CLIENTS * ROUNDS;
      const rate = (ms: number) => round(orders / (ms / 1000), 1);
      const r = ratio(rate(sides.hot.ms), rate(sides.spread.ms));
      return {
        tables: [
          {
            columns: ['side', 'orders', 'orders/s', 'non-201', 'cancelled transactions (conflicts)', 'retries'],
            rows: (['hot', 'spread'] as const).map((s) => [
              s === 'hot' ? 'one merchant' : `${CLIENTS} merchants`,
              orders,
              rate(sides[s].ms),
              sides[s].non201,
              sides[s].conflicts,
              sides[s].retries,
            ]),
          },
        ],
        targets: [
          { name: 'throughput one merchant / spread', value: r, target: '≥ 0.9', met: r >= 0.9 },
          { name: 'non-201 answers (one merchant)', value: sides.hot.non201, target: '0', met: sides.hot.non201 === 0 },
        ],
        notes: [
          `${ROUNDS} alternating rounds per side, ${perClient} orders per client per round, each client's orders to its own ${CUSTOMERS_PER_CLIENT} customers; shards kept per process (the local server; Lambda containers once settled).`,
        ],
        data: { clients: CLIENTS, orders_per_side: orders, ratio: r, sides },
      };
    } finally {
      model.uninstall();
      await api.close();
    }
  },
};
