import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { newEventId } from '#lib/outbox/store';
import { deliverRecords, sqsHandler } from '#lib/webhooks/consumers';
import { DELIVERY_TIMEOUT_MS } from '#lib/webhooks/deliver';
import type { DeliveryTask, TaskOutcome } from '#lib/webhooks/delivery';
import { taskBody, type DeliveryQueue } from '#lib/webhooks/queue';
import { DELIVERY_FUNCTION_TIMEOUT_SECONDS } from '#lib/webhooks/schedule';
import { lambdaContext } from '../../infra/local/server.ts';
import { startWebhookReceiver } from '../../infra/local/webhook-receiver.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { registerEndpoint } from '../webhooks/support/pipeline.ts';

/**
 * Per-endpoint isolation of webhook delivery, with real receivers on 127.0.0.1 and the real 10 s
 * limit: one batch of the delivery queue, as Lambda hands it to the deployed handler (its deadline
 * from the function's timeout), mixes tasks of an endpoint that answers in 9 s (or never) with
 * tasks of fast endpoints of the same and of another merchant. The fast ones are delivered and
 * recorded before the slow one has answered anything; the slow one's in-time answers count as
 * successes, and when it does not answer each of its attempts still gets the whole 10 s.
 */
const api = useApi();
const SLOW_MS = 9_000;
const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const receiver = async (respond: () => Promise<number> | number) => {
  const r = await startWebhookReceiver({ respond: () => respond() });
  closers.push(r.close);
  return r;
};

const task = (merchantId: string, endpointId: number): DeliveryTask => ({
  merchant_id: merchantId,
  endpoint_id: endpointId,
  event: { id: newEventId(), type: 'order.paid', created_at: '2026-03-01T10:00:00Z', data: { object: { order_no: 'A-1' } } },
});

const record = (t: DeliveryTask): SQSRecord =>
  ({
    messageId: randomUUID(),
    receiptHandle: randomUUID(),
    body: taskBody(t),
    attributes: {},
    messageAttributes: {},
    eventSource: 'aws:sqs',
  }) as unknown as SQSRecord;

/** The queue as the consumer uses it, recording what it was asked to do. */
const recordingQueue = () => {
  const postponed: number[] = [];
  const deadLetters: DeliveryTask[] = [];
  const queue: DeliveryQueue = {
    send: async () => undefined,
    postpone: async (_handle, seconds) => void postponed.push(seconds),
    deadLetter: async (t) => void deadLetters.push(t),
  };
  return { queue, postponed, deadLetters };
};

/**
 * One merchant with a slow endpoint (`slow` answers it) and a fast one, another merchant with a
 * fast one; one batch of 10 tasks, the slow endpoint's first. Runs it as the deployed handler would.
 */
const runBatch = async (slow: () => Promise<number>) => {
  const a = await newMerchant();
  const b = await newMerchant();
  let slowAnswered = 0;
  const slowReceiver = await receiver(async () => {
    const status = await slow();
    slowAnswered++;
    return status;
  });
  // What the slow endpoint had answered when each fast delivery arrived.
  const seenBySlow: number[] = [];
  const fastReceiver = await receiver(() => {
    seenBySlow.push(slowAnswered);
    return 204;
  });
  const slowEndpoint = await registerEndpoint(api, a.token, slowReceiver.url);
  const fastEndpoint = await registerEndpoint(api, a.token, fastReceiver.url);
  const otherEndpoint = await registerEndpoint(api, b.token, fastReceiver.url);
  const slowTasks = Array.from({ length: 4 }, () => task(a.merchantId, slowEndpoint.id));
  const fastTasks = [
    ...Array.from({ length: 3 }, () => task(a.merchantId, fastEndpoint.id)),
    ...Array.from({ length: 3 }, () => task(b.merchantId, otherEndpoint.id)),
  ];
  const { queue, postponed, deadLetters } = recordingQueue();
  const outcomes: { task: DeliveryTask; outcome: TaskOutcome; slowAnswered: number }[] = [];
  const handler = sqsHandler((records) =>
    deliverRecords(records, queue, { onOutcome: (t, outcome) => outcomes.push({ task: t, outcome, slowAnswered }) }),
  );
  const context = lambdaContext('webhookDelivery', randomUUID(), Date.now(), DELIVERY_FUNCTION_TIMEOUT_SECONDS * 1000);
  const response = await handler({ Records: [...slowTasks, ...fastTasks].map(record) }, context);
  const isSlow = (t: DeliveryTask) => t.endpoint_id === slowEndpoint.id && t.merchant_id === a.merchantId;
  return {
    response,
    postponed,
    deadLetters,
    seenBySlow,
    slowTasks,
    fastTasks,
    slowReceiver,
    fastReceiver,
    slowOutcomes: outcomes.filter((o) => isSlow(o.task)),
    fastOutcomes: outcomes.filter((o) => !isSlow(o.task)),
  };
};

const delivered = async (t: DeliveryTask) =>
  (
    await db().send(
      new GetCommand({
        TableName: tableName(),
        Key: keys.webhookDeliveryState(t.merchant_id, t.endpoint_id, t.event.id),
        ConsistentRead: true,
      }),
    )
  ).Item?.delivered_at;

describe('one slow endpoint in a batch', () => {
  it('answering in 9 s of its 10: the fast endpoints are delivered and recorded first; every slow answer is a success', {
    timeout: 60_000,
  }, async () => {
    const run = await runBatch(() => new Promise((r) => setTimeout(() => r(204), SLOW_MS)));

    // Fast: all 6 delivered, verified as theirs, and recorded while the slow endpoint had answered nothing.
    expect(run.fastReceiver.received.map((d) => d.id).sort()).toEqual(run.fastTasks.map((t) => t.event.id).sort());
    expect(run.seenBySlow).toEqual([0, 0, 0, 0, 0, 0]);
    expect(run.fastOutcomes.map((o) => [o.outcome.action, o.slowAnswered])).toEqual(Array(6).fill(['done', 0]));

    // Slow: 4 attempts, each answered within its own 10 s, each a success.
    expect(run.slowReceiver.received).toHaveLength(4);
    expect(run.slowOutcomes).toHaveLength(4);
    for (const { outcome } of run.slowOutcomes) {
      expect(outcome).toMatchObject({ action: 'done', reason: 'delivered', entry: { attempt: 1, status: 204, error: null } });
      expect(outcome.entry!.duration_ms).toBeGreaterThanOrEqual(SLOW_MS);
    }
    for (const t of [...run.slowTasks, ...run.fastTasks]) expect(await delivered(t), t.event.id).toEqual(expect.any(String));
    expect(run.response.batchItemFailures).toEqual([]);
    expect(run.postponed).toEqual([]);
  });

  it('not answering at all: the fast endpoints are unaffected; each slow attempt gets its whole 10 s, then waits for its retry', {
    timeout: 60_000,
  }, async () => {
    let release!: () => void;
    const never = new Promise<number>((r) => (release = () => r(204)));
    closers.push(() => release());
    const run = await runBatch(() => never);

    expect(run.seenBySlow).toEqual([0, 0, 0, 0, 0, 0]);
    expect(run.fastOutcomes.map((o) => o.outcome.action)).toEqual(Array(6).fill('done'));
    for (const t of run.fastTasks) expect(await delivered(t)).toEqual(expect.any(String));

    expect(run.slowOutcomes).toHaveLength(4);
    for (const { outcome } of run.slowOutcomes) {
      expect(outcome).toMatchObject({ action: 'retry', entry: { attempt: 1, status: null, error: 'could not connect' } });
      // Its own full limit, whatever its place in the batch.
      expect(outcome.entry!.duration_ms).toBeGreaterThanOrEqual(DELIVERY_TIMEOUT_MS - 50);
    }
    // The 4 slow messages come back at their retry time; nothing else does.
    expect(run.response.batchItemFailures).toHaveLength(4);
    expect(run.postponed).toHaveLength(4);
    expect(run.deadLetters).toEqual([]);
  });
});
