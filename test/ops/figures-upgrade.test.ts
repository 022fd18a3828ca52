import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { GENERATION_SHARDS, keys } from '#lib/db/keys';
import { setShardPolicy } from '#lib/db/shards';
import { getMerchant } from '#lib/merchants/store';
import { readGenerationSettings } from '#lib/metrics/generation';
import { settleRecounts } from '#lib/metrics/recount';
import { upgradeFiguresSettings } from '../../infra/ops/figures-upgrade.ts';
import { backofficeJwt } from '../backoffice/support.ts';
import { newMerchant, ok, useApi } from '../support/api.ts';

/**
 * `ops upgrade` on a table written before recounts (docs/metrics-design.md): the generation that
 * counts gets the settings it counted in, what the passes and builds left goes, and a pass left
 * unfinished becomes a recount.
 */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const api = useApi();
const admin = async (merchantId: string) => ({ authorization: `Bearer ${await backofficeJwt(merchantId, 'admin')}` });
const put = (Item: Record<string, unknown>) => db().send(new PutCommand({ TableName: tableName(), Item }));
const partition = async (pk: string) =>
  (
    await db().send(
      new QueryCommand({ TableName: tableName(), KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } }),
    )
  ).Items ?? [];

describe('ops upgrade: figures from before recounts', { timeout: 90_000 }, () => {
  it("writes the generation's settings where missing, removes the passes' leftovers, starts a recount for an unfinished pass; a second run does nothing", async () => {
    const { merchantId } = await newMerchant();
    const m = keys.merchant(merchantId).pk;
    // As the old code left it: the zone on the merchant, a rate table, a restate job and marker, a
    // pace second of the passes and one of the applier, a version copy, a copy paused by a build.
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.merchant(merchantId),
        UpdateExpression: 'SET #z = :z',
        ExpressionAttributeNames: { '#z': 'timezone' },
        ExpressionAttributeValues: { ':z': 'Asia/Taipei' },
      }),
    );
    await put({ ...keys.exchangeRates(merchantId, 'USD'), currency: 'USD', rates: { '2026-01': '30' }, version: 1 });
    await put({ pk: `${m}#RESTATE`, sk: '000001#job', entity: 'restate-job', merchant_id: merchantId, from_id: 1, round: 1 });
    await put({ pk: `${m}#MRR#00`, sk: 'M#0000-00#R#chain', entity: 'restate-marker' });
    await put({ pk: `${m}#PACE`, sk: '1700000000', used: 5 });
    await put({ pk: `${m}#PACE`, sk: 'A#00#1700000000', used: 5 });
    await put({ pk: `${m}#RATES_VERSION#003`, sk: 'USD', version: 1 });
    await put({ ...keys.generation(merchantId, 3), generation: 0, paused_until: Date.now() + 60_000, building: 1 });

    const first = await upgradeFiguresSettings(merchantId);
    expect(first).toEqual({ settings: 2, copies: 0, removed: 4, recount_started: true });
    expect(await readGenerationSettings(merchantId, 0)).toEqual({
      zone: 'Asia/Taipei',
      rates: new Map([['USD', new Map([['2026-01', '30']])]]),
    });
    expect(await partition(`${m}#RESTATE`)).toEqual([]);
    expect(await partition(`${m}#RATES_VERSION#003`)).toEqual([]);
    expect((await partition(`${m}#PACE`)).map((i) => i.sk)).toEqual(['A#00#1700000000']);
    const { Item: copy } = await db().send(
      new GetCommand({ TableName: tableName(), Key: keys.generation(merchantId, 3), ConsistentRead: true }),
    );
    expect(copy?.paused_until).toBeUndefined();
    expect((await getMerchant(merchantId))?.recount?.status).toBe('pending');
    await settleRecounts(merchantId);
    expect((await getMerchant(merchantId))?.recount?.status).toBe('done');

    expect(await upgradeFiguresSettings(merchantId)).toEqual({ settings: 0, copies: 0, removed: 0, recount_started: false });
  });

  it('a table of 16 generation copies gets the rest as copy 0 says, and order writes on every counter shard go through', async () => {
    const { merchantId, token } = await newMerchant();
    // A zone change and its recount leave every copy saying generation 1; the old table had 16 of them.
    await api.request('PUT', '/settings', { headers: await admin(merchantId), body: { timezone: 'Asia/Taipei' } });
    await settleRecounts(merchantId);
    const copy = async (shard: number) =>
      (await db().send(new GetCommand({ TableName: tableName(), Key: keys.generation(merchantId, shard), ConsistentRead: true }))).Item;
    const { pk: _pk, sk: _sk, ...says } = (await copy(0))!;
    expect(says.generation).toBe(1);
    for (let shard = 16; shard < GENERATION_SHARDS; shard++)
      await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.generation(merchantId, shard) }));

    expect((await upgradeFiguresSettings(merchantId)).copies).toBe(GENERATION_SHARDS - 16);
    for (let shard = 1; shard < GENERATION_SHARDS; shard++)
      expect(await copy(shard)).toEqual({ ...keys.generation(merchantId, shard), ...says });
    // Each transaction draws its counter shard at random: 96 orders meet nearly every copy.
    setShardPolicy('random');
    try {
      for (let i = 0; i < 96; i++) {
        const r = await api.post('/orders', token, { order_no: `C-${i}`, amount: '1.00', status: 'paid', customer_email: 'c@example.com' });
        expect(r.status, JSON.stringify(r.body)).toBe(201);
      }
    } finally {
      setShardPolicy('lease');
    }
  });
});
