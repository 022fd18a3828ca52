import type { DynamoDBRecord } from 'aws-lambda';
import {
  CreateEventBusCommand,
  type EventBridgeClient,
  type PutEventsCommandInput,
  type PutEventsCommandOutput,
} from '@aws-sdk/client-eventbridge';
import type { InitializeHandlerOutput, InitializeMiddleware } from '@smithy/types';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tableName } from '#lib/db/client';
import { eventBridgeClient, eventBridgePublisher } from '#lib/outbox/eventbridge';
import { relayRecords, type EventDetail } from '#lib/outbox/relay';
import { ensureTable } from '../../infra/local/dynamodb.ts';
import { startLocalRelay } from '../../infra/local/outbox-poller.ts';
import { lambdaContext } from '../../infra/local/server.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { motoInstalled, ruleToQueue, sqsClient, startMoto } from './support/moto.ts';
import { detailOf, outboxInsert, streamRecord } from './support/records.ts';

/**
 * The relay against a real EventBridge emulator (moto_server): a custom bus, a rule matching the
 * service's source and the `order.` / `subscription.` detail types, an SQS queue as its target.
 * What the queue receives is what a rule target on AWS would receive.
 */
const hasMoto = motoInstalled();
if (!hasMoto)
  console.warn('SKIPPED test/outbox/eventbridge.test.ts: moto_server is not installed (pip install "moto[server]"; .ci/run does)');

const BUS = 'revenue-analytics-api-test';
const SOURCE = 'revenue-analytics-api';
const noPause = { sleep: async () => undefined };

type Message = { version: string; id: string; 'detail-type': string; source: string; time: string; detail: EventDetail };

describe.skipIf(!hasMoto)('relay → EventBridge (moto_server) → rule → SQS', () => {
  let moto: Awaited<ReturnType<typeof startMoto>>;
  let sqs: ReturnType<typeof sqsClient>;
  let client: EventBridgeClient;
  let queueUrl: string;
  /** Every message taken off the queue so far (each test reads its own merchant's). */
  const received: Message[] = [];

  beforeAll(async () => {
    moto = await startMoto();
    sqs = sqsClient(moto.endpoint);
    client = eventBridgeClient(moto.endpoint);
    const bus = await client.send(new CreateEventBusCommand({ Name: BUS }));
    ({ QueueUrl: queueUrl } = await sqs<{ QueueUrl: string }>('CreateQueue', { QueueName: 'webhook-events' }));
    await ruleToQueue(client, sqs, {
      bus: BUS,
      rule: 'webhook-events',
      pattern: { source: [SOURCE], 'detail-type': [{ prefix: 'order.' }, { prefix: 'subscription.' }] },
      queueUrl,
    });
    expect(bus.EventBusArn).toContain(BUS);
  });
  afterAll(async () => {
    client?.destroy();
    await moto?.stop();
  });

  /** Takes messages off the queue until `merchantId` has at least `n`, then until the queue is empty. */
  const receive = async (merchantId: string, n: number, timeoutMs = 10_000): Promise<Message[]> => {
    const mine = () => received.filter((m) => m.detail.merchant_id === merchantId);
    for (const until = Date.now() + timeoutMs; ; ) {
      const { Messages = [] } = await sqs<{ Messages?: { Body: string; ReceiptHandle: string }[] }>('ReceiveMessage', {
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
      });
      for (const m of Messages) {
        received.push(JSON.parse(m.Body));
        await sqs('DeleteMessage', { QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle });
      }
      if (!Messages.length && mine().length >= n) return mine();
      if (Date.now() > until) throw new Error(`${mine().length} of ${n} messages for ${merchantId}`);
      if (!Messages.length) await new Promise((r) => setTimeout(r, 100));
    }
  };
  const ids = (records: DynamoDBRecord[]) => records.map((r) => r.dynamodb!.NewImage!.id.S!);
  const counts = (messages: Message[]) => {
    const c = new Map<string, number>();
    for (const m of messages) c.set(m.detail.id, (c.get(m.detail.id) ?? 0) + 1);
    return c;
  };

  /** Adds an `initialize` middleware to a fresh client: `handle` sees each PutEvents call first. */
  const faultyClient = (
    handle: (
      n: number,
      input: PutEventsCommandInput,
      send: (input: PutEventsCommandInput) => Promise<PutEventsCommandOutput>,
    ) => Promise<PutEventsCommandOutput>,
  ) => {
    const faulty = eventBridgeClient(moto.endpoint);
    let n = 0;
    const middleware: InitializeMiddleware<any, any> = (next) => async (args) => {
      const send = async (input: PutEventsCommandInput) =>
        ((await next({ ...args, input })) as InitializeHandlerOutput<PutEventsCommandOutput>).output;
      return { output: await handle(++n, args.input as PutEventsCommandInput, send), response: {} } as InitializeHandlerOutput<any>;
    };
    faulty.middlewareStack.add(middleware, { step: 'initialize', name: 'faults' });
    return faulty;
  };
  /** EventBridge answers the entries at `failing` positions with an error and never sees them. */
  const partialFailure = async (
    input: PutEventsCommandInput,
    failing: (i: number) => boolean,
    send: (i: PutEventsCommandInput) => Promise<PutEventsCommandOutput>,
  ) => {
    const entries = input.Entries!;
    const out = await send({ ...input, Entries: entries.filter((_, i) => !failing(i)) });
    let next = 0;
    const results = entries.map((_, i) => (failing(i) ? { ErrorCode: 'InternalFailure', ErrorMessage: 'injected' } : out.Entries![next++]));
    return { ...out, FailedEntryCount: results.filter((r) => r.ErrorCode).length, Entries: results };
  };

  it('each outbox INSERT reaches the rule target: source, detail-type = type, detail exactly {id, type, created_at, merchant_id, data}', async () => {
    const merchantId = `mer_eb_${Date.now()}`;
    const records = [
      outboxInsert(merchantId, 'order.created', { order_no: 'EB-1', amount: '10.00', metadata: { a: [1, 'x', null] } }),
      streamRecord('INSERT', { pk: `RATE#M#${merchantId}#1`, sk: 'RATE', count: 1 }),
      outboxInsert(merchantId, 'order.paid', { order_no: 'EB-1', amount: '10.00' }),
      outboxInsert(merchantId, 'subscription.created', { id: 7, plan_name: 'Basic', mrr: '100.00' }),
    ];
    const result = await relayRecords(records, eventBridgePublisher(client), { ...noPause, eventBusName: BUS });
    expect(result).toEqual({ batchItemFailures: [], stats: { records: 4, events: 3, published: 3, calls: 1, retried: 0 } });

    const messages = await receive(merchantId, 3);
    expect(messages).toHaveLength(3);
    const outbox = [records[0], records[2], records[3]];
    for (const record of outbox) {
      const image = record.dynamodb!.NewImage!;
      const message = messages.find((m) => m.detail.id === image.id.S)!;
      expect(message, image.id.S).toBeDefined();
      expect(message).toMatchObject({ version: '0', source: SOURCE, 'detail-type': image.type.S });
      expect(Object.keys(message.detail)).toEqual(['id', 'type', 'created_at', 'merchant_id', 'data']);
      expect(message.detail).toEqual({
        id: image.id.S,
        type: image.type.S,
        created_at: image.created_at.S,
        merchant_id: merchantId,
        data: JSON.parse(image.data.S!),
      });
      // The event's time is the change's, not the publish's.
      expect(Date.parse(message.time)).toBe(Date.parse(image.created_at.S!));
    }
  });

  it('the rule matches the service only: another source reaches no target', async () => {
    const merchantId = `mer_eb_other_${Date.now()}`;
    await relayRecords([outboxInsert(merchantId)], eventBridgePublisher(client), { ...noPause, eventBusName: BUS, source: 'someone-else' });
    const marker = `mer_eb_marker_${Date.now()}`;
    await relayRecords([outboxInsert(marker)], eventBridgePublisher(client), { ...noPause, eventBusName: BUS });
    await receive(marker, 1);
    expect(received.filter((m) => m.detail.merchant_id === merchantId)).toEqual([]);
  });

  it('PutEvents failing (injected: throttled call, partial failure, lost response): nothing lost, duplicates only at-least-once', async () => {
    const merchantId = `mer_eb_faults_${Date.now()}`;
    const records = Array.from({ length: 12 }, () => outboxInsert(merchantId));
    let resentAfterLostResponse: string[] = [];
    const faulty = faultyClient(async (n, input, send) => {
      if (n === 1) throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException', $fault: 'client' }); // nothing published
      if (n === 2) return partialFailure(input, (i) => i % 2 === 0, send); // half published
      if (n === 3) {
        // Published, but the answer never arrives: the relay cannot know, and sends them again.
        await send(input);
        resentAfterLostResponse = input.Entries!.map((e) => detailOf(e).id);
        throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
      }
      return send(input);
    });
    const result = await relayRecords(records, eventBridgePublisher(faulty), { ...noPause, eventBusName: BUS, maxAttempts: 5 });
    faulty.destroy();
    expect(result.batchItemFailures).toEqual([]);
    expect(result.stats).toMatchObject({ events: 12, calls: 5 });

    const byId = counts(await receive(merchantId, 12 + resentAfterLostResponse.length));
    expect([...byId.keys()].sort()).toEqual(ids(records).sort());
    expect(resentAfterLostResponse).toHaveLength(5);
    for (const id of ids(records)) expect(byId.get(id), id).toBe(resentAfterLostResponse.includes(id) ? 2 : 1);
  });

  it('PutEvents failing beyond the relay retries: the first failed record is reported, and the retry from it delivers everything', async () => {
    const merchantId = `mer_eb_stuck_${Date.now()}`;
    const records = Array.from({ length: 15 }, () => outboxInsert(merchantId));
    const stuck = ids(records)[4];
    let outage = true;
    const faulty = faultyClient((_, input, send) => partialFailure(input, (i) => outage && detailOf(input.Entries![i]).id === stuck, send));
    const publish = eventBridgePublisher(faulty);
    const first = await relayRecords(records, publish, { ...noPause, eventBusName: BUS });
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: records[4].dynamodb!.SequenceNumber }]);
    // Records 10–14 (the next chunk) wait for the retry.
    expect(first.stats).toMatchObject({ events: 15, published: 9 });

    // Lambda invokes again from the reported record; EventBridge has recovered.
    outage = false;
    const retry = await relayRecords(records.slice(4), publish, { ...noPause, eventBusName: BUS });
    faulty.destroy();
    expect(retry.batchItemFailures).toEqual([]);
    const byId = counts(await receive(merchantId, 15 + 5));
    expect([...byId.keys()].sort()).toEqual(ids(records).sort());
    // Twice: the events after the failed one in its chunk (published, then sent again with the retry).
    expect(ids(records).map((id) => byId.get(id))).toEqual([1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1]);
  });

  it('the deployed handler (functions/outbox/relay.ts), configured by EVENTBRIDGE_ENDPOINT and EVENT_BUS_NAME, publishes to the bus', async () => {
    vi.stubEnv('EVENTBRIDGE_ENDPOINT', moto.endpoint);
    vi.stubEnv('EVENT_BUS_NAME', BUS);
    try {
      const { handler } = await import('../../functions/outbox/relay.ts');
      const merchantId = `mer_eb_handler_${Date.now()}`;
      const records = [outboxInsert(merchantId, 'order.created'), outboxInsert(merchantId, 'order.paid')];
      await expect(handler({ Records: records }, lambdaContext('relay', 'req-1'))).resolves.toEqual({ batchItemFailures: [] });
      expect((await receive(merchantId, 2)).map((m) => m.detail.id).sort()).toEqual(ids(records).sort());
    } finally {
      vi.unstubAllEnvs();
    }
  });

  describe('npm start with EVENTBRIDGE_ENDPOINT: API → table stream → local poller → deployed handler → moto', () => {
    const api = useApi();
    const sharedTable = process.env.TABLE_NAME;
    let stopRelay: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      // A table of this test's own, so its stream holds only this test's writes.
      process.env.TABLE_NAME = `relay-eb-${process.pid}`;
      await ensureTable(process.env.DYNAMODB_ENDPOINT, tableName());
    });
    afterAll(async () => {
      await stopRelay?.();
      process.env.TABLE_NAME = sharedTable;
      vi.unstubAllEnvs();
    });

    it('an order created through the API reaches the rule target as order.created and order.paid', async () => {
      vi.stubEnv('EVENTBRIDGE_ENDPOINT', moto.endpoint);
      vi.stubEnv('EVENT_BUS_NAME', BUS);
      const relay = await startLocalRelay({ endpoint: process.env.DYNAMODB_ENDPOINT!, tableName: tableName() });
      stopRelay = () => relay.poller.stop();
      expect(relay.target).toBe(`EventBridge at ${moto.endpoint} (bus ${BUS})`);
      const { merchantId, token } = await newMerchant();
      const order = await api.post('/orders', token, {
        order_no: `EB-${Date.now()}`,
        amount: '12.00',
        customer_email: 'eb@example.com',
        status: 'paid',
      });
      expect(order.status).toBe(201);
      const messages = await receive(merchantId, 2, 20_000);
      expect(messages.map((m) => m['detail-type']).sort()).toEqual(['order.created', 'order.paid']);
      for (const m of messages) expect(m.detail.data).toEqual({ object: order.body.data });
    });
  });
});
