import { CreateEventBusCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { WriteSet } from '#lib/db/writes';
import { eventBridgeClient } from '#lib/outbox/eventbridge';
import { createMerchant } from '#lib/merchants/service';
import { addOutboxEvent } from '#lib/outbox/store';
import { formatTimestamp } from '#lib/shared/time';
import { motoInstalled, ruleToQueue, sqsClient, startMoto } from '../outbox/support/moto.ts';
import { ensureTable } from '../../infra/local/dynamodb.ts';
import { runCli } from '../support/cli.ts';

/**
 * `npm run ops -- events replay`: a child process, as operators run it, against the run's DynamoDB
 * Local and moto_server's EventBridge, whose rule sends the bus's events to a queue read here.
 */
const hasMoto = motoInstalled();
if (!hasMoto)
  console.warn('SKIPPED test/ops/events-replay.test.ts: moto_server is not installed (pip install "moto[server]"; .ci/run does)');

const BUS = 'revenue-analytics-api-replay';
const ago = (minutes: number) => formatTimestamp(new Date(Date.now() - minutes * 60_000));

describe('ops events replay', { timeout: 90_000 }, () => {
  it('refuses a start older than the outbox keeps (3 days), a missing --since and an unknown merchant', async () => {
    const merchantId = (await createMerchant('Replay refusals')).merchant_id;
    const env = { ...process.env, EVENTBRIDGE_ENDPOINT: 'http://127.0.0.1:9', EVENT_BUS_NAME: BUS };
    const old = await runCli(['events', 'replay', '--merchant', merchantId, '--since', ago(3 * 24 * 60 + 5)], env);
    expect(old.code).toBe(2);
    expect(old.stderr).toMatch(/older than the outbox keeps events \(3 days, by TTL\)/);
    expect(old.stderr).toContain('the outbox keeps events 3 days');
    const missing = await runCli(['events', 'replay', '--merchant', merchantId], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--since is required/);
    const unknown = await runCli(['events', 'replay', '--merchant', 'mer_00000000000000000000', '--since', ago(60)], env);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stderr)).toEqual({ error: 'Merchant mer_00000000000000000000 does not exist.', status: 404 });
    // Locally the bus lives inside npm start: without an EventBridge endpoint there is nowhere to replay to.
    const { EVENTBRIDGE_ENDPOINT: _unset, ...local } = env;
    const nowhere = await runCli(['events', 'replay', '--merchant', merchantId, '--since', ago(60)], local);
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toMatch(/EVENTBRIDGE_ENDPOINT/);
  });

  describe.skipIf(!hasMoto)('to EventBridge (moto_server)', () => {
    let moto: Awaited<ReturnType<typeof startMoto>>;
    let sqs: ReturnType<typeof sqsClient>;
    let client: EventBridgeClient;
    let queueUrl: string;

    beforeAll(async () => {
      moto = await startMoto();
      sqs = sqsClient(moto.endpoint);
      client = eventBridgeClient(moto.endpoint);
      await client.send(new CreateEventBusCommand({ Name: BUS }));
      ({ QueueUrl: queueUrl } = await sqs<{ QueueUrl: string }>('CreateQueue', { QueueName: 'replayed' }));
      await ruleToQueue(client, sqs, { bus: BUS, rule: 'replayed', pattern: { source: ['revenue-analytics-api'] }, queueUrl });
    });
    afterAll(async () => {
      client?.destroy();
      await moto?.stop();
    });

    const drain = async () => {
      const out: { id: string; merchant_id: string }[] = [];
      for (;;) {
        const { Messages = [] } = await sqs<{ Messages?: { Body: string; ReceiptHandle: string }[] }>('ReceiveMessage', {
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
        });
        if (!Messages.length) return out;
        for (const m of Messages) {
          out.push(JSON.parse(m.Body).detail);
          await sqs('DeleteMessage', { QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle });
        }
      }
    };

    it('publishes again every event of the merchant since T, published before or not, and no other', async () => {
      const merchantId = (await createMerchant('Replay shop')).merchant_id;
      const other = (await createMerchant('Other shop')).merchant_id;
      const record = async (m: string, at: string) => {
        const ws = new WriteSet();
        const id = addOutboxEvent(ws, m, 'order.paid', { order_no: `R-${Math.random()}` }, at);
        await ws.commit();
        return id;
      };
      const before = await record(merchantId, ago(120));
      const since = ago(90);
      const inRange = [await record(merchantId, ago(60)), await record(merchantId, ago(30)), await record(merchantId, ago(1))];
      await record(other, ago(30));

      const env = { ...process.env, EVENTBRIDGE_ENDPOINT: moto.endpoint, EVENT_BUS_NAME: BUS };
      const run = await runCli(['events', 'replay', '--merchant', merchantId, '--since', since], env);
      expect(run.code, run.stderr).toBe(0);
      expect(run.json).toEqual({ merchant_id: merchantId, since, events: 3, published: 3, unpublished: 0 });
      const received = await drain();
      expect(received.map((d) => d.id).sort()).toEqual([...inRange].sort());
      expect(received.map((d) => d.id)).not.toContain(before);

      // Replaying again sends the same events again: receivers drop them by id (webhook-id).
      const again = await runCli(['events', 'replay', '--merchant', merchantId, '--since', since], env);
      expect(again.json).toMatchObject({ published: 3 });
      expect((await drain()).map((d) => d.id).sort()).toEqual([...inRange].sort());
    });
  });
});

describe('ops merchant directory', { timeout: 90_000 }, () => {
  it('adds merchants created before the directory to it: one by id, or every one missing (a Scan), each once', async () => {
    // A table of its own: the Scan reads all of it.
    const table = `directory-${Date.now()}`;
    await ensureTable(process.env.DYNAMODB_ENDPOINT, table);
    const legacy = ['mer_0000000000000000000a', 'mer_0000000000000000000b', 'mer_0000000000000000000c'];
    for (const id of legacy) {
      await db().send(
        new PutCommand({
          TableName: table,
          Item: { ...keys.merchant(id), merchant_id: id, name: id, reporting_currency: 'USD', created_at: '2025-01-01T00:00:00Z' },
        }),
      );
    }
    await db().send(new PutCommand({ TableName: table, Item: { ...keys.order('mer_0000000000000000000a', 'A-1'), entity: 'order' } }));
    const listed = async () =>
      (
        (
          await db().send(
            new QueryCommand({
              TableName: table,
              IndexName: 'gsi1',
              KeyConditionExpression: 'gsi1pk = :p',
              ExpressionAttributeValues: { ':p': 'MERCHANTS' },
            }),
          )
        ).Items ?? []
      )
        .map((i) => i.merchant_id)
        .sort();
    const env = { ...process.env, TABLE_NAME: table };
    expect(await listed()).toEqual([]);
    const one = await runCli(['merchant', 'directory', '--merchant', legacy[1]], env);
    expect(one.json, one.stderr).toEqual({ added: 1 });
    expect(await listed()).toEqual([legacy[1]]);
    const all = await runCli(['merchant', 'directory'], env);
    expect(all.json, all.stderr).toEqual({ added: 2 });
    expect(await listed()).toEqual(legacy);
    expect((await runCli(['merchant', 'directory'], env)).json).toEqual({ added: 0 });
  });
});
