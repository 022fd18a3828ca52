import { randomUUID } from 'node:crypto';
import { CreateEventBusCommand, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { isPendingMovesInsert, isRecountJobInsert } from '#lib/metrics';
import { eventBridgeClient } from '#lib/outbox/eventbridge';
import { isOutboxInsert } from '#lib/outbox/relay';
import { SWEEP_INTERVAL_MINUTES } from '#lib/outbox/sweeper';
import { WORKER_FUNCTIONS as W } from '#lib/shared/invocation';
import type { ScheduledCancel } from '#lib/subscriptions/schedule';
import { scheduleOf } from '#lib/subscriptions/schedule';
import { sqsClient, WEBHOOK_QUEUES } from '#lib/webhooks/queue';
import { SERVICE_NAME } from '../constructs/api-function.ts';
import { SCHEDULE_RULES } from '../constructs/cancel-scheduler.ts';
import {
  WEBHOOK_CONSUMER_MAX_CONCURRENCY,
  WEBHOOK_CONSUMER_SOURCE,
  WEBHOOK_EVENT_PATTERN,
  WEBHOOK_RULE_NAME,
} from '../constructs/webhook-delivery.ts';
import { type Invocation, startBundleRuntime } from './bundle-runtime.ts';
import { startLocalCancelScheduler } from './cancel-scheduler.ts';
import type { BusEvent } from './local-bus.ts';
import { motoInstalled, startMoto } from './moto.ts';
import { type StreamPoller, startStreamPoller } from './outbox-poller.ts';

/**
 * `npm start -- --bundles`: the functions as deployed (infra/local/bundle-runtime.ts: each
 * function's bundle under Node 22), and around them the AWS parts they meet, played here as AWS
 * plays them: moto_server for EventBridge and SQS (the bus, the webhook rule and queues, as the
 * stack declares them); the table stream's three event source mappings (infra/local/outbox-poller.ts,
 * each invoking its function's bundle with the stream event); the two SQS event source mappings
 * (below: receive, invoke with Lambda's SQS event, delete what did not fail); the sweeper's
 * schedule; the cancellation state machine's timers (infra/local/cancel-scheduler.ts, fed by a
 * rule with the stack's pattern, invoking the check's bundle). The API server invokes the route
 * functions through `invoke`.
 */
export type BundlesMode = {
  invoke: ReturnType<typeof startBundleRuntime>['invoke'];
  motoEndpoint: string;
  eventBusName: string;
  functions: number;
  stop: () => Promise<void>;
};

const EVENT_BUS = `${SERVICE_NAME}-local`;
/** The local stand-in of the cancellation rule's state machine target: a queue the scheduler reads. */
const CANCEL_QUEUE = 'cancel-schedules';

/** A received SQS message as Lambda hands it to a function (`SQSRecord`). */
const toSqsRecord = (m: Message, queueArn: string, region: string): SQSRecord => ({
  messageId: m.MessageId!,
  receiptHandle: m.ReceiptHandle!,
  body: m.Body ?? '',
  attributes: {
    ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
    SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
    SenderId: m.Attributes?.SenderId ?? 'local',
    ApproximateFirstReceiveTimestamp: m.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    ...(m.Attributes?.MessageGroupId ? { MessageGroupId: m.Attributes.MessageGroupId } : {}),
  },
  messageAttributes: Object.fromEntries(
    Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [
      k,
      { dataType: v.DataType!, stringValue: v.StringValue, stringListValues: [], binaryListValues: [] },
    ]),
  ),
  md5OfBody: m.MD5OfBody ?? '',
  eventSource: 'aws:sqs',
  eventSourceARN: queueArn,
  awsRegion: region,
});

export const startBundlesMode = async (opts: {
  dynamodbEndpoint: string;
  tableName: string;
  region: string;
  /** Where the bundles are built (reused while nothing they come from changed). */
  outdir: string;
  /** One line per invocation, per delivery and per error. */
  log: (line: string) => void;
  /** Checkpoint files of the stream mappings. */
  stateFile: (name: string) => string;
  overrides?: Record<string, string>;
  /** Where the local server will serve the back-office JWT keys (`LOCAL_BACKOFFICE_JWKS_PATH`). */
  backofficeJwksUrl: string;
}): Promise<BundlesMode> => {
  if (!motoInstalled()) throw new Error('--bundles needs moto_server for EventBridge and SQS: pip install "moto[server]" (.ci/run does)');
  const moto = await startMoto();
  const stops: (() => Promise<unknown> | unknown)[] = [() => moto.stop()];
  // All at once: the feeds end within a second, the instances and moto_server at their signal.
  const stop = async () => {
    await Promise.allSettled(stops.map(async (s) => s()));
  };
  try {
    const sqs = sqsClient(moto.endpoint);
    const events = eventBridgeClient(moto.endpoint);
    stops.push(() => {
      sqs.destroy();
      events.destroy();
    });
    const queue = async (name: string, attributes: Record<string, string> = {}) => {
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
      const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
      return { url: QueueUrl!, arn: Attributes!.QueueArn! };
    };
    // The webhook pipeline's queues and rule, with the stack's settings (infra/constructs/webhook-delivery.ts).
    await events.send(new CreateEventBusCommand({ Name: EVENT_BUS }));
    const eventsDlq = await queue('webhook-events-dlq');
    const deliveryDlq = await queue('webhook-delivery-dlq');
    const redrive = (dlq: { arn: string }, maxReceiveCount: number) => JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount });
    const eventsQueue = await queue('webhook-events', {
      VisibilityTimeout: String(WEBHOOK_QUEUES.events.visibilityTimeoutSeconds),
      RedrivePolicy: redrive(eventsDlq, WEBHOOK_QUEUES.events.maxReceiveCount),
    });
    const deliveryQueue = await queue('webhook-deliveries', {
      VisibilityTimeout: String(WEBHOOK_QUEUES.deliveries.visibilityTimeoutSeconds),
      RedrivePolicy: redrive(deliveryDlq, WEBHOOK_QUEUES.deliveries.maxReceiveCount),
    });
    const cancelQueue = await queue(CANCEL_QUEUE);
    const rule = async (name: string, pattern: object, target: { arn: string }) => {
      await events.send(new PutRuleCommand({ Name: name, EventBusName: EVENT_BUS, EventPattern: JSON.stringify(pattern) }));
      await events.send(new PutTargetsCommand({ Rule: name, EventBusName: EVENT_BUS, Targets: [{ Id: 'queue', Arn: target.arn }] }));
    };
    await rule(WEBHOOK_RULE_NAME, WEBHOOK_EVENT_PATTERN, eventsQueue);
    for (const { id, pattern } of SCHEDULE_RULES)
      await rule(id === 'Rule' ? 'cancel-scheduler' : `cancel-scheduler-${id}`, pattern, cancelQueue);

    const runtime = startBundleRuntime({
      outdir: opts.outdir,
      local: {
        region: opts.region,
        tableName: opts.tableName,
        dynamodbEndpoint: opts.dynamodbEndpoint,
        awsEndpoint: moto.endpoint,
        eventBusName: EVENT_BUS,
        deliveryQueueUrl: deliveryQueue.url,
        deliveryDeadLetterQueueUrl: deliveryDlq.url,
        backofficeJwksUrl: opts.backofficeJwksUrl,
      },
      overrides: opts.overrides,
      onInvocation: (i) => opts.log(invocationLine(i)),
    });
    stops.push(() => runtime.stop());

    // The table stream's event source mappings, each with its filter, invoking its function's bundle.
    const stream = (functionName: string, filter: Parameters<typeof startStreamPoller>[0]['filter'], file: string) =>
      startStreamPoller({
        endpoint: opts.dynamodbEndpoint,
        tableName: opts.tableName,
        filter,
        functionName,
        checkpointFile: opts.stateFile(file),
        handler: (event) => runtime.invoke(functionName, event) as never,
        // The invocation's own line already says why it failed.
        onError: (err) => opts.log(`${functionName}: ${err instanceof Error ? err.message : err}`),
      });
    const pollers: StreamPoller[] = [];
    stops.push(() => Promise.all(pollers.map((p) => p.stop())));
    pollers.push(await stream(W.outboxRelay, isOutboxInsert, 'outbox-checkpoint.json'));
    pollers.push(await stream(W.pendingMovesApplier, isPendingMovesInsert, 'pending-moves-checkpoint.json'));
    pollers.push(await stream(W.recountWorker, isRecountJobInsert, 'recount-checkpoint.json'));

    // The SQS event source mappings: batches of up to 10, at most `concurrency` invocations at once;
    // what the function does not report failed is deleted, the rest comes back after its visibility timeout.
    let stopped = false;
    const inflight = new Set<Promise<unknown>>();
    const sqsMapping = async (functionName: string, q: { url: string; arn: string }, concurrency: number) => {
      while (!stopped) {
        if (inflight.size >= concurrency) {
          await Promise.race(inflight);
          continue;
        }
        let messages: Message[];
        try {
          ({ Messages: messages = [] } = await sqs.send(
            new ReceiveMessageCommand({
              QueueUrl: q.url,
              MaxNumberOfMessages: WEBHOOK_CONSUMER_SOURCE.batchSize,
              WaitTimeSeconds: 1,
              MessageSystemAttributeNames: ['All'],
              MessageAttributeNames: ['All'],
            }),
          ));
        } catch (err) {
          if (!stopped) opts.log(`${functionName} mapping: ${err instanceof Error ? err.message : err}`);
          await new Promise((r) => setTimeout(r, 1_000));
          continue;
        }
        if (!messages.length) continue;
        const records = messages.map((m) => toSqsRecord(m, q.arn, opts.region));
        const run = runtime
          .invoke(functionName, { Records: records })
          .then(async (answer) => {
            const failed = new Set(((answer as SQSBatchResponse | null)?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
            const done = records.filter((r) => !failed.has(r.messageId));
            if (done.length)
              await sqs.send(
                new DeleteMessageBatchCommand({
                  QueueUrl: q.url,
                  Entries: done.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })),
                }),
              );
          })
          .catch(() => undefined) // a failed invocation: every message comes back (its line is logged)
          .finally(() => inflight.delete(run));
        inflight.add(run);
      }
    };
    const mappings = [
      sqsMapping(W.webhookFanOut, eventsQueue, WEBHOOK_CONSUMER_MAX_CONCURRENCY.fanOut),
      sqsMapping(W.webhookDeliver, deliveryQueue, WEBHOOK_CONSUMER_MAX_CONCURRENCY.delivery),
    ];
    stops.push(async () => {
      stopped = true;
      await Promise.all([...mappings, ...inflight]);
    });

    // The cancellation state machine's stand-in: the rule's events (its queue here) arm timers; at
    // the time, the check function's bundle is invoked with the rule's input.
    const subscribers = new Set<(event: BusEvent) => void>();
    const cancels = startLocalCancelScheduler(
      {
        subscribe: (fn) => {
          subscribers.add(fn);
          return () => subscribers.delete(fn);
        },
      },
      {
        log: opts.log,
        onError: (err) => opts.log(`cancel scheduler: ${err instanceof Error ? err.message : err}`),
        check: async (s: ScheduledCancel) =>
          (await runtime.invoke(W.cancelCheck, s)) as { due: boolean; applied?: boolean; wake_at?: string },
      },
    );
    await cancels.rearm();
    stops.push(() => cancels.stop());
    const cancelFeed = (async () => {
      while (!stopped) {
        try {
          const { Messages = [] } = await sqs.send(
            new ReceiveMessageCommand({ QueueUrl: cancelQueue.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
          );
          for (const m of Messages) {
            const event = JSON.parse(m.Body ?? '{}') as BusEvent;
            if (scheduleOf(event.detail ?? {}).length) for (const fn of subscribers) fn(event);
          }
          if (Messages.length)
            await sqs.send(
              new DeleteMessageBatchCommand({
                QueueUrl: cancelQueue.url,
                Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
              }),
            );
        } catch (err) {
          if (!stopped) opts.log(`cancel scheduler feed: ${err instanceof Error ? err.message : err}`);
          await new Promise((r) => setTimeout(r, 1_000));
        }
      }
    })();
    stops.push(() => cancelFeed);

    // The sweeper's schedule (rate: SWEEP_INTERVAL_MINUTES): once at start, then at that rate.
    const sweep = () =>
      runtime
        .invoke(W.outboxSweeper, {
          version: '0',
          id: randomUUID(),
          'detail-type': 'Scheduled Event',
          source: 'aws.events',
          account: '000000000000',
          time: `${new Date().toISOString().slice(0, 19)}Z`,
          region: opts.region,
          resources: ['arn:aws:events:local:000000000000:rule/outbox-sweeper'],
          detail: {},
        })
        .catch(() => undefined);
    const sweeping = sweep();
    const timer = setInterval(() => void sweep(), SWEEP_INTERVAL_MINUTES * 60_000);
    stops.push(async () => {
      clearInterval(timer);
      await sweeping;
    });

    return { invoke: runtime.invoke, motoEndpoint: moto.endpoint, eventBusName: EVENT_BUS, functions: runtime.bundles.length, stop };
  } catch (err) {
    await stop();
    throw err;
  }
};

/** `bundle <name> (node <v>): <answer> in <ms> ms[, cold start <ms> ms]`: one line per invocation. */
export const invocationLine = (i: Invocation): string => {
  const r = i.result as { statusCode?: number; batchItemFailures?: unknown[] } | null | undefined;
  const answer = i.error
    ? `failed: ${i.error.name}: ${i.error.message}`
    : typeof r?.statusCode === 'number'
      ? String(r.statusCode)
      : r?.batchItemFailures?.length
        ? `${r.batchItemFailures.length} failed record(s)`
        : 'ok';
  return `bundle ${i.name} (node ${i.node}): ${answer} in ${i.ms} ms${i.coldStartMs !== undefined ? `, cold start ${i.coldStartMs} ms` : ''}`;
};
