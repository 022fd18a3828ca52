import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { type Key, keys, metricsPartition, shardPartitions } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { PENDING_MOVES_ENTITY, type PendingMoves, WriteSet } from '#lib/db/writes';
import { createMerchant, createToken } from '#lib/merchants/service';
import { changeMerchant } from '#lib/settings/service';
import { getMerchant } from '#lib/merchants/store';
import { RECOUNT_JOB_ENTITY } from '#lib/metrics/recount';
import { addTimelineChange, EMPTY_TIMELINE, pendingHome, readTimeline } from '#lib/metrics/store';
import { orderLine } from '#lib/metrics/timeline';
import { ensureTable } from '../../infra/local/dynamodb.ts';
import {
  startLocalPendingApplier,
  startLocalRecountWorker,
  startOutboxPoller,
  type StreamPoller,
} from '../../infra/local/outbox-poller.ts';
import { eventually } from '../support/eventually.ts';

/**
 * `npm start`'s pending-moves applier: a pending-moves item put into a stream-enabled table (as a
 * batch's transaction puts it) → stream → the local poller → the applier handler → its moves
 * applied and the item deleted, within seconds. Its recount worker: a zone change's job → stream →
 * its own poller → the recount counted, switched and the generation before retired. The file gets
 * its own table, so the stream holds its own writes only (the shared test table has none:
 * test/support/global-setup.ts).
 */
const sharedTable = process.env.TABLE_NAME;
let applier: StreamPoller | undefined;
let recounter: StreamPoller | undefined;
let relay: StreamPoller | undefined;
const relayed: string[] = [];

beforeAll(async () => {
  process.env.TABLE_NAME = `local-applier-${process.pid}`;
  await ensureTable(process.env.DYNAMODB_ENDPOINT, tableName());
  applier = await startLocalPendingApplier({ endpoint: process.env.DYNAMODB_ENDPOINT!, tableName: tableName(), intervalMs: 50 });
  recounter = await startLocalRecountWorker({ endpoint: process.env.DYNAMODB_ENDPOINT!, tableName: tableName(), intervalMs: 50 });
  // The relay's poller reads the same stream beside it, from its own position, and sees only its own records.
  relay = await startOutboxPoller({
    endpoint: process.env.DYNAMODB_ENDPOINT!,
    tableName: tableName(),
    intervalMs: 50,
    handler: async (event) => {
      relayed.push(...event.Records.map((r) => r.dynamodb!.NewImage!.entity.S!));
      return { batchItemFailures: [] };
    },
  });
});
afterAll(async () => {
  await Promise.all([applier?.stop(), recounter?.stop(), relay?.stop()]);
  process.env.TABLE_NAME = sharedTable;
});

const read = async (key: Key) => (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;

describe('the local pending-moves applier', () => {
  it('applies a pending-moves item put into the table within seconds: the targets have the ADDs, the item is gone', async () => {
    const home = pendingHome('mer_0000000000000000a001', 'M#2024-03', 0);
    const moves: PendingMoves = [
      ['D#2024-03-05#00', { n: '7', ac: '1' }],
      ['M#2024-03#00', { n: '7', ac: '1' }],
    ];
    const key = { pk: home.pk, sk: `${home.sk}#P#local#000` };
    await db().send(
      new PutCommand({ TableName: tableName(), Item: { ...key, entity: PENDING_MOVES_ENTITY, moves: JSON.stringify(moves) } }),
    );

    await eventually(async () => (await read(key)) === undefined, 10_000, 'the pending-moves item applied and deleted');
    expect(await read({ pk: home.pk, sk: 'D#2024-03-05#00' })).toMatchObject({ n: 7, ac: 1 });
    expect(await read({ pk: home.pk, sk: 'M#2024-03#00' })).toMatchObject({ n: 7, ac: 1 });
    // Not the relay's: its filter kept none of these records.
    expect(relayed).toEqual([]);
  });
});

describe('the local recount worker', () => {
  it('runs the recount a zone change starts to its switch, and retires the generation before; the applier and relay keep out', async () => {
    const { merchant_id: merchantId } = await createMerchant('local recount', 'TWD');
    // Its token: the switch writes the figures' state on it.
    await createToken(merchantId);
    // Customer 1: a paid monthly order late on 31 January UTC, 1 February in Taipei.
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.sequences(merchantId),
        UpdateExpression: 'ADD #c :n',
        ExpressionAttributeNames: { '#c': 'customer' },
        ExpressionAttributeValues: { ':n': 1 },
      }),
    );
    const ws = new WriteSet();
    await addTimelineChange(ws, merchantId, { reportingCurrency: 'TWD', timezone: 'UTC', generation: 0 }, 1, EMPTY_TIMELINE, {
      O1: orderLine({ status: 'paid', amount: '300', currency: 'TWD', billing_cycle: 'monthly', paid_at: '2025-01-31T20:00:00Z' }),
    });
    await ws.commit();
    const generationZero = async () =>
      (
        await Promise.all(
          shardPartitions(metricsPartition(merchantId, null, 0)).map((partition) =>
            queryAll<Key>({ partition, descending: false }, ['pk', 'sk']),
          ),
        )
      ).flat();
    expect((await generationZero()).length).toBeGreaterThan(0);

    // The change is stored at once, its recount pending: the job is the worker's (no settling here).
    const changed = await changeMerchant(merchantId, { timezone: 'Asia/Taipei' });
    expect(changed.recount).toMatchObject({ status: 'pending' });
    const generation = changed.recount!.generation;

    await eventually(async () => (await getMerchant(merchantId))?.recount?.status === 'done', 20_000, 'the recount switched');
    const merchant = (await getMerchant(merchantId))!;
    expect(merchant).toMatchObject({ timezone: 'Asia/Taipei', figures_timezone: 'Asia/Taipei', metrics_generation: generation });
    expect(merchant.recount).toMatchObject({ generation, status: 'done', switched_at: expect.any(String) });
    // The customer was counted in the new generation (marked so on its timeline head).
    expect((await readTimeline(merchantId, 1)).recounted).toBe(generation);
    // Then the generation before is retired: its job ends and its items go.
    await eventually(
      async () => (await queryAll<Key>({ partition: keys.recountJob(merchantId, '').pk, descending: false }, ['pk'])).length === 0,
      20_000,
      'the retirement job run and ended',
    );
    expect(await generationZero()).toEqual([]);
    expect(relayed).not.toContain(RECOUNT_JOB_ENTITY);
  }, 60_000);

  it('a job for a merchant that is gone is ended, and the applier and relay keep out', async () => {
    const key = keys.recountJob('mer_0000000000000000a002', '000001#local');
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...key, entity: RECOUNT_JOB_ENTITY, merchant_id: 'mer_0000000000000000a002', generation: 1, from_id: 1, round: 1 },
      }),
    );
    await eventually(async () => (await read(key)) === undefined, 10_000, 'the recount job run and ended');
    expect(relayed).not.toContain(RECOUNT_JOB_ENTITY);
  });
});
