import type { InitializeMiddleware, MetadataBearer } from '@smithy/types';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db } from '#lib/db/client';
import { newMerchant, useApi } from '../support/api.ts';
import { backofficeJwt } from '../backoffice/support.ts';
import { createOrder } from './helpers.ts';

/**
 * A stats answer reflects one state of the table (docs/orders.md, "One state"): an order committed
 * while GET /orders/stats is between its requests is in all of the answer or in none of it.
 */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const api = useApi();
let uninstall: (() => void) | undefined;
afterEach(() => {
  uninstall?.();
  uninstall = undefined;
  resetClock();
});

type Input = { RequestItems?: Record<string, { Keys: { pk: string }[] }>; TransactItems?: { Get?: { Key: { pk: string } } }[] };
const statsKeysOf = (input: Input): string[] => [
  ...Object.values(input.RequestItems ?? {}).flatMap((r) => r.Keys.map((k) => k.pk)),
  ...(input.TransactItems ?? []).flatMap((t) => (t.Get ? [t.Get.Key.pk] : [])),
];

/**
 * Lets the first stats read request of `merchantId` through, then runs `between` (a write) before
 * any later stats read request goes: the commit lands between the read's requests.
 */
const commitBetweenStatsReads = (merchantId: string, between: () => Promise<void>) => {
  let first: Promise<any> | undefined;
  let injected: Promise<void> | undefined;
  const stats = { reads: 0 };
  const name = `stats-between-${Math.random().toString(36).slice(2, 8)}`;
  const middleware: InitializeMiddleware<any, MetadataBearer> = (next, context) => async (args) => {
    const op = String(context.commandName ?? '').replace(/Command$/, '');
    const isStatsRead =
      (op === 'BatchGetItem' || op === 'TransactGetItems') && statsKeysOf(args.input).some((pk) => pk.startsWith(`M#${merchantId}#STATS#`));
    if (!isStatsRead) return next(args);
    stats.reads++;
    if (!first) {
      first = next(args);
      const out = await first;
      injected = between();
      await injected;
      return out;
    }
    // Later requests of the same read wait for the first one and the commit after it.
    await first.catch(() => undefined);
    while (!injected) await new Promise((r) => setTimeout(r, 5));
    await injected;
    return next(args);
  };
  db().middlewareStack.add(middleware as never, { step: 'initialize', priority: 'low', name });
  uninstall = () => db().middlewareStack.remove(name);
  return stats;
};

describe('GET /orders/stats reads one state', () => {
  it('an order committed between the read requests is wholly in the answer or wholly out (Asia/Taipei: several requests)', async () => {
    fixedClock('2026-11-26T17:00:00Z'); // 27 November 01:00 in Taipei
    const merchant = await newMerchant();
    const admin = await backofficeJwt(merchant.merchantId, 'admin');
    const put = await api.request('PUT', '/settings', { headers: { authorization: `Bearer ${admin}` }, body: { timezone: 'Asia/Taipei' } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    await createOrder(api, merchant.token, { status: 'paid', amount: '10' });
    await createOrder(api, merchant.token, { status: 'paid', amount: '100', paid_at: '2026-11-05T03:00:00Z' });
    const before = { today_revenue: '10.00', monthly_revenue: '110.00', today_count: 2, today_success_rate: 100 };
    const after = { today_revenue: '11.00', monthly_revenue: '111.00', today_count: 3, today_success_rate: 100 };
    expect((await api.get('/orders/stats', merchant.token)).body.data).toEqual(before);

    const reads = commitBetweenStatsReads(merchant.merchantId, async () => {
      await createOrder(api, merchant.token, { status: 'paid', amount: '1' });
    });
    const r = await api.get('/orders/stats', merchant.token);
    uninstall?.();
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // The read did span several requests, so the commit did land between two of them.
    expect(reads.reads).toBeGreaterThan(1);
    expect([before, after]).toContainEqual(r.body.data);
    // And the next read sees it.
    expect((await api.get('/orders/stats', merchant.token)).body.data).toEqual(after);
  });
});
