import type { SQSRecord } from 'aws-lambda';
import { CreateEventBusCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { eventBridgeClient, eventBridgePublisher } from '#lib/outbox/eventbridge';
import { toEntry, type EventDetail } from '#lib/outbox/relay';
import { deliverRecords, fanOutRecords } from '#lib/webhooks/consumers';
import type { DeliveryTask } from '#lib/webhooks/delivery';
import { parseTask, sqsClient, sqsDeliveryQueue, type DeliveryQueue } from '#lib/webhooks/queue';
import { createWebhookEndpoint, updateWebhookEndpoint } from '#lib/webhooks/service';
import { SERVICE_NAME } from '../../infra/constructs/api-function.ts';
import { WEBHOOK_EVENT_PATTERN, WEBHOOK_RULE_NAME } from '../../infra/constructs/webhook-delivery.ts';
import { startWebhookReceiver } from '../../infra/local/webhook-receiver.ts';
import { newMerchant } from '../support/api.ts';
import { motoInstalled, ruleToQueue, sqsClient as sqsJson, startMoto } from './support/moto.ts';

/**
 * The deployed webhook wiring against moto_server: the bus rule with the stack's own pattern
 * (WEBHOOK_EVENT_PATTERN) → events queue → fan-out (lib/webhooks/consumers.ts, as the deployed
 * handler runs it) → deliveries queue → delivery, whose retries are the message's visibility and
 * whose last failure goes to the dead-letter queue. Lambda's part (receive, hand over a batch,
 * delete what succeeded) is played by the test with the same SQSRecord shape.
 */
const hasMoto = motoInstalled();
if (!hasMoto)
  console.warn('SKIPPED test/outbox/webhook-queues.test.ts: moto_server is not installed (pip install "moto[server]"; .ci/run does)');

const BUS = 'revenue-analytics-api-webhooks-test';

describe.skipIf(!hasMoto)('bus rule → events queue → fan-out → deliveries queue → delivery (moto_server)', () => {
  let moto: Awaited<ReturnType<typeof startMoto>>;
  let events: EventBridgeClient;
  let sqs: SQSClient;
  const urls = { events: '', deliveries: '', dlq: '' };
  const arns = { events: '', deliveries: '', dlq: '' };
  let queue: DeliveryQueue;

  const createQueue = async (name: string, attributes: Record<string, string> = {}) => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
    const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
    return { url: QueueUrl!, arn: Attributes!.QueueArn! };
  };

  beforeAll(async () => {
    moto = await startMoto();
    events = eventBridgeClient(moto.endpoint);
    sqs = sqsClient(moto.endpoint);
    await events.send(new CreateEventBusCommand({ Name: BUS }));
    const dlq = await createQueue('webhook-delivery-dlq');
    const deliveries = await createQueue('webhook-deliveries', {
      VisibilityTimeout: '180',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 20 }),
    });
    const eventsQueue = await createQueue('webhook-events', { VisibilityTimeout: '60' });
    Object.assign(urls, { events: eventsQueue.url, deliveries: deliveries.url, dlq: dlq.url });
    Object.assign(arns, { events: eventsQueue.arn, deliveries: deliveries.arn, dlq: dlq.arn });

    // The stack's own pattern object (infra/constructs/webhook-delivery.ts).
    await ruleToQueue(events, sqsJson(moto.endpoint), {
      bus: BUS,
      rule: WEBHOOK_RULE_NAME,
      pattern: WEBHOOK_EVENT_PATTERN,
      queueUrl: urls.events,
    });
    queue = sqsDeliveryQueue({ queueUrl: urls.deliveries, deadLetterUrl: urls.dlq, client: sqs });
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    events?.destroy();
    sqs?.destroy();
    await moto?.stop();
  });

  /** Takes up to `max` messages (or what arrives within `waitMs`) off a queue, as Lambda's poller does. */
  const receive = async (url: string, opts: { min?: number; waitMs?: number } = {}): Promise<Message[]> => {
    const out: Message[] = [];
    for (const until = Date.now() + (opts.waitMs ?? 0); ; ) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 0,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
      );
      out.push(...Messages);
      if (out.length >= (opts.min ?? 1) || Date.now() >= until) return out;
      if (!Messages.length) await new Promise((r) => setTimeout(r, 100));
    }
  };
  /** The SQS event record Lambda hands the function for a received message. */
  const asRecord = (m: Message, arn: string): SQSRecord => ({
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body!,
    attributes: {
      ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
      SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
      SenderId: m.Attributes?.SenderId ?? 'moto',
      ApproximateFirstReceiveTimestamp: m.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: m.MD5OfBody!,
    eventSource: 'aws:sqs',
    eventSourceARN: arn,
    awsRegion: 'us-east-1',
  });
  /** Lambda's part after a batch: delete every message the function did not report failed. */
  const settle = async (url: string, messages: Message[], failures: { itemIdentifier: string }[]) => {
    const failed = new Set(failures.map((f) => f.itemIdentifier));
    for (const m of messages.filter((m) => !failed.has(m.MessageId!))) {
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle! }));
    }
  };
  const event = (merchantId: string, type: string): EventDetail => ({
    id: `evt_${Math.random().toString(36).slice(2, 14)}`,
    type,
    created_at: new Date().toISOString(),
    merchant_id: merchantId,
    data: { object: { order_no: 'WQ-1', amount: '10.00' } },
  });

  it('routes only the service’s known event types to the events queue; the fan-out queues one task per subscribed enabled endpoint; failed attempts wait for their visibility, then the DLQ', async () => {
    const { merchantId } = await newMerchant();
    // Verifies with the endpoints' secrets (pushed once they exist) as a merchant would, and answers 500.
    const secrets: string[] = [];
    const receiver = await startWebhookReceiver({ secrets, respond: () => 500 });
    try {
      const url = `${receiver.url}/hooks`;
      const paidOnly = await createWebhookEndpoint(merchantId, { url, events: ['order.paid'], description: undefined });
      const everything = await createWebhookEndpoint(merchantId, { url, events: ['*'], description: undefined });
      const disabled = await createWebhookEndpoint(merchantId, { url, events: ['order.paid'], description: undefined });
      await updateWebhookEndpoint(merchantId, disabled.id, { status: 'disabled', description: undefined });
      await createWebhookEndpoint(merchantId, { url, events: ['subscription.created'], description: undefined });
      secrets.push(paidOnly.secret, everything.secret);

      // The real relay publisher and entry shape; one PutEvents call, in order.
      const paid = event(merchantId, 'order.paid');
      const unknownType = event(merchantId, 'order.exploded');
      const otherSource = event(merchantId, 'order.paid');
      const publish = eventBridgePublisher(events);
      const out = await publish([
        toEntry(unknownType, { source: SERVICE_NAME, eventBusName: BUS }),
        toEntry(otherSource, { source: 'someone-else', eventBusName: BUS }),
        toEntry(paid, { source: SERVICE_NAME, eventBusName: BUS }),
      ]);
      expect(out.FailedEntryCount ?? 0).toBe(0);

      // Only the matching event reaches the events queue, exactly as the relay shaped it.
      const eventMessages = await receive(urls.events, { min: 1, waitMs: 5_000 });
      expect(eventMessages).toHaveLength(1);
      const message = JSON.parse(eventMessages[0].Body!);
      expect(message).toMatchObject({ source: SERVICE_NAME, 'detail-type': 'order.paid', detail: paid });
      expect(await receive(urls.events)).toEqual([]);

      // Fan-out: one task per enabled endpoint subscribed to order.paid.
      const fanOut = await fanOutRecords(
        eventMessages.map((m) => asRecord(m, arns.events)),
        queue,
      );
      expect(fanOut.batchItemFailures).toEqual([]);
      await settle(urls.events, eventMessages, fanOut.batchItemFailures);
      let tasks = await receive(urls.deliveries, { min: 2, waitMs: 5_000 });
      expect(tasks).toHaveLength(2);
      const parsed = tasks.map((m) => parseTask(m.Body!));
      expect(parsed.map((t) => t.endpoint_id).sort((a, b) => a - b)).toEqual([paidOnly.id, everything.id].sort((a, b) => a - b));
      const { merchant_id: _m, ...body } = paid;
      for (const t of parsed)
        expect(t).toEqual({ merchant_id: merchantId, endpoint_id: t.endpoint_id, event: body } satisfies DeliveryTask);
      // Each in its endpoint's message group (a fair queue: one endpoint's backlog does not hold the others).
      expect(tasks.map((m) => m.Attributes?.MessageGroupId)).toEqual(parsed.map((t) => `${merchantId}#${t.endpoint_id}`));

      // Attempt 1 fails (HTTP 500): each message is postponed by the schedule's first pause (1 s here).
      vi.stubEnv('WEBHOOK_RETRY_DELAYS_SECONDS', '1');
      const first = await deliverRecords(
        tasks.map((m) => asRecord(m, arns.deliveries)),
        queue,
      );
      expect(first.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(tasks.map((m) => m.MessageId).sort());
      await settle(urls.deliveries, tasks, first.batchItemFailures);
      expect(receiver.received).toHaveLength(2);
      for (const d of receiver.received) {
        expect(d.id).toBe(paid.id);
        // Signed: it verifies with the standardwebhooks package, as a receiver does.
        expect(d.event).toEqual({ id: paid.id, type: paid.type, created_at: paid.created_at, data: paid.data });
      }
      // Not receivable now (the queue's own visibility would be 180 s)…
      const postponedAt = Date.now();
      expect(await receive(urls.deliveries)).toEqual([]);
      // …but back after the pause (1 s ± 10 %, rounded up to whole seconds).
      tasks = await receive(urls.deliveries, { min: 2, waitMs: 5_000 });
      expect(tasks).toHaveLength(2);
      expect(Date.now() - postponedAt).toBeLessThan(4_000);
      expect(tasks.map((m) => m.Attributes?.ApproximateReceiveCount)).toEqual(['2', '2']);

      // Attempt 2 is the last of this schedule: both tasks go to the dead-letter queue, with why.
      const last = await deliverRecords(
        tasks.map((m) => asRecord(m, arns.deliveries)),
        queue,
      );
      expect(last.batchItemFailures).toEqual([]);
      await settle(urls.deliveries, tasks, last.batchItemFailures);
      expect(receiver.received).toHaveLength(4);
      const parked = await receive(urls.dlq, { min: 2, waitMs: 5_000 });
      expect(parked).toHaveLength(2);
      for (const m of parked) {
        expect(m.MessageAttributes?.reason).toEqual({ DataType: 'String', StringValue: 'attempt 2 failed: HTTP 500' });
        expect(parsed).toContainEqual(parseTask(m.Body!));
      }
      expect(await receive(urls.deliveries, { waitMs: 1_500 })).toEqual([]);
    } finally {
      vi.unstubAllEnvs();
      await receiver.close();
    }
  });
});
