import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { batchGet } from '#lib/db/batch-get';
import { db, tableName } from '#lib/db/client';
import { totalsKeys } from '#lib/db/counters';
import { keys, legacyCounterPartitions } from '#lib/db/keys';
import { COUNTER_SHARDS } from '#lib/db/writes-constants';
import { newMerchant, useApi } from '../support/api.ts';
import { ok } from '../support/cli.ts';

/**
 * `ops upgrade` folds counters written in the layout before grouping (one partition, 256 shards)
 * into the grouped one: the lists' totals and the stats read the same before and after, and a
 * second run changes nothing.
 */
const api = useApi();

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** Moves every grouped counter item of the merchant to where the earlier layout kept it (shard + 200). */
const writeAsBeforeGrouping = async (merchantId: string, day: string): Promise<number> => {
  const grouped = [
    ...totalsKeys(merchantId, 'ORDERS'),
    ...totalsKeys(merchantId, 'CUSTOMERS'),
    ...range(COUNTER_SHARDS).flatMap((s) => [keys.statsDay(merchantId, day, s), keys.statsMonth(merchantId, day.slice(0, 7), s)]),
  ];
  const found = [...(await batchGet<Record<string, unknown>>(grouped)).values()];
  for (const item of found) {
    const sk = String(item.sk);
    const shard = Number(sk.slice(sk.lastIndexOf('#') + 1)) + 200;
    const legacySk = `${sk.slice(0, sk.lastIndexOf('#'))}#${String(shard).padStart(3, '0')}`;
    const legacyPk = String(item.pk).includes('#TOTALS#') ? legacyCounterPartitions.totals(merchantId) : legacyCounterPartitions.stats(merchantId, day.slice(0, 7));
    await db().send(new PutCommand({ TableName: tableName(), Item: { ...item, pk: legacyPk, sk: legacySk } }));
    await db().send(new DeleteCommand({ TableName: tableName(), Key: { pk: item.pk, sk: item.sk } }));
  }
  return found.length;
};

describe('ops upgrade: counters from before grouping', { timeout: 90_000 }, () => {
  it('folds them into the grouped shards once: totals and stats read as before, a second run folds nothing', async () => {
    const { merchantId, token } = await newMerchant();
    for (let i = 0; i < 6; i++) {
      const r = await api.post('/orders', token, { order_no: `U${i}`, amount: '10.50', status: i < 4 ? 'paid' : 'pending', customer_email: `u${i % 3}@upgrade.test` });
      expect(r.status).toBe(201);
    }
    const read = async () => ({
      orders: (await api.get('/orders?per_page=1', token)).body.meta.total,
      paid: (await api.get('/orders?status=paid&per_page=1', token)).body.meta.total,
      customers: (await api.get('/customers?per_page=1', token)).body.meta.total,
      stats: (await api.get('/orders/stats', token)).body.data,
    });
    const before = await read();
    expect(before).toMatchObject({ orders: 6, paid: 4, customers: 3, stats: { today_revenue: '42.00', today_count: 6 } });

    const day = new Date().toISOString().slice(0, 10);
    expect(await writeAsBeforeGrouping(merchantId, day)).toBeGreaterThan(3);
    // The grouped reads do not see the old layout (the upgrade is needed).
    expect((await read()).orders).toBe(0);

    const first = await ok('upgrade', '--merchant', merchantId);
    expect(first['grouped counters'].folded).toBeGreaterThan(3);
    expect(await read()).toEqual(before);
    const second = await ok('upgrade', '--merchant', merchantId);
    expect(second['grouped counters']).toEqual({ folded: 0 });
    expect(await read()).toEqual(before);
  });

  it('answers 404 for a merchant that does not exist', async () => {
    const { ops } = await import('../support/cli.ts');
    const r = await ops('upgrade', '--merchant', 'mer_0000000000000000');
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr)).toMatchObject({ status: 404 });
  });
});
