import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import type { Key } from '#lib/db/keys';
import { PENDING_MOVES_ENTITY, type PendingMoves } from '#lib/db/writes';
import { pendingHome } from '#lib/metrics/store';
import { ensureTable } from '../../infra/local/dynamodb.ts';
import {
  startLocalPendingApplier,
  startLocalRestateWorker,
  startOutboxPoller,
  type StreamPoller,
} from '../../infra/local/outbox-poller.ts';
import { keys } from '#lib/db/keys';
import { RESTATE_JOB_ENTITY } from '#lib/metrics/restate-jobs';
import { eventually } from '../support/eventually.ts';

/**
 * `npm start`'s pending-moves applier: a pending-moves item put into a stream-enabled table (as a
 * batch's transaction puts it) → stream → the local poller → the applier handler → its moves
 * applied and the item deleted, within seconds. The file gets its own table, so the stream holds
 * its own writes only (the shared test table has none: test/support/global-setup.ts).
 */
const sharedTable = process.env.TABLE_NAME;
let applier: StreamPoller | undefined;
let restater: StreamPoller | undefined;
let relay: StreamPoller | undefined;
const relayed: string[] = [];

beforeAll(async () => {
  process.env.TABLE_NAME = `local-applier-${process.pid}`;
  await ensureTable(process.env.DYNAMODB_ENDPOINT, tableName());
  applier = await startLocalPendingApplier({ endpoint: process.env.DYNAMODB_ENDPOINT!, tableName: tableName(), intervalMs: 50 });
  restater = await startLocalRestateWorker({ endpoint: process.env.DYNAMODB_ENDPOINT!, tableName: tableName(), intervalMs: 50 });
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
  await Promise.all([applier?.stop(), restater?.stop(), relay?.stop()]);
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

describe('the local restate worker', () => {
  it('runs a restate job put into the table: a job for a merchant that is gone is ended, and the applier and relay keep out', async () => {
    const key = keys.restateJob('mer_0000000000000000a002', '000001#local');
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...key, entity: RESTATE_JOB_ENTITY, merchant_id: 'mer_0000000000000000a002', from_id: 1, round: 1 },
      }),
    );
    await eventually(async () => (await read(key)) === undefined, 10_000, 'the restate job run and ended');
    expect(relayed).toEqual([]);
  });
});
