import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { getMerchant } from '#lib/merchants/store';
import { readGenerationSettings } from '#lib/metrics/generation';
import { settleRecounts } from '#lib/metrics/recount';
import { upgradeFiguresSettings } from '../../infra/ops/figures-upgrade.ts';
import { newMerchant, useApi } from '../support/api.ts';

/**
 * `ops upgrade` on a table written before recounts (docs/metrics-design.md): the generation that
 * counts gets the settings it counted in, what the passes and builds left goes, and a pass left
 * unfinished becomes a recount.
 */
useApi();
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
    expect(first).toEqual({ settings: 2, removed: 4, recount_started: true });
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

    expect(await upgradeFiguresSettings(merchantId)).toEqual({ settings: 0, removed: 0, recount_started: false });
  });
});
