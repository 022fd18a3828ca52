import { createHash, randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';

/**
 * The local stack's SQS queue with a Lambda event source on it, in memory: what `npm start` uses
 * for the webhook events and delivery queues (AWS: SQS + event source mappings, see
 * infra/constructs/webhook-delivery.ts). It keeps the semantics the consumers rely on:
 *
 * - a received message is invisible for the visibility timeout, or until the time the consumer
 *   sets with `changeVisibility` (how failed deliveries wait for their next attempt);
 * - the consumer answers partial batch failures: the others are deleted, the failed ones come
 *   back when visible again; a consumer that throws fails its whole batch;
 * - a message received more than `maxReceiveCount` times is moved to the dead-letter list;
 * - batches are handed over as soon as messages are visible, each invocation on its own (Lambda
 *   scales out), so one slow invocation never holds back the next messages.
 *
 * Messages live as long as the process: a restart forgets queued deliveries (documented in docs/webhooks.md, "Locally").
 */
export type SqsConsumer = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
export type LocalQueueOptions = {
  /** Seconds a received message stays invisible unless the consumer changes it (SQS default 30). */
  visibilityTimeoutSeconds?: number;
  /** Receives before a message is moved to the dead-letter list (the redrive policy). */
  maxReceiveCount?: number;
  /** Messages per invocation (the event source's batch size). */
  batchSize?: number;
  /** The Lambda context of one invocation (its deadline). */
  context: () => Context;
  onDeadLetter?: (body: string, reason: string) => void;
  onError?: (err: unknown) => void;
};

type Message = {
  id: string;
  body: string;
  sentAt: number;
  visibleAt: number;
  receiveCount: number;
  receiptHandle?: string;
  firstReceivedAt?: number;
};

export class LocalQueue {
  readonly arn: string;
  readonly deadLetters: { body: string; reason: string }[] = [];
  private readonly messages = new Map<string, Message>();
  private readonly inflight = new Set<Promise<void>>();
  private consumer?: SqsConsumer;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(
    readonly name: string,
    private readonly opts: LocalQueueOptions,
  ) {
    this.arn = `arn:aws:sqs:local:000000000000:${name}`;
  }

  /** Starts handing messages to `consumer` (the event source mapping). */
  consume(consumer: SqsConsumer): this {
    this.consumer = consumer;
    this.schedule();
    return this;
  }

  /** SendMessage: visible after `delaySeconds`. */
  send(body: string, delaySeconds = 0): string {
    const id = randomUUID();
    const at = Date.now();
    this.messages.set(id, { id, body, sentAt: at, visibleAt: at + delaySeconds * 1000, receiveCount: 0 });
    this.schedule();
    return id;
  }

  /** ChangeMessageVisibility: the message with this (current) receipt handle is visible again in `seconds`. */
  changeVisibility(receiptHandle: string, seconds: number): void {
    const m = [...this.messages.values()].find((x) => x.receiptHandle === receiptHandle);
    if (!m) throw Object.assign(new Error('ReceiptHandleIsInvalid'), { name: 'ReceiptHandleIsInvalid' });
    m.visibleAt = Date.now() + seconds * 1000;
    this.schedule();
  }

  /** Messages not yet deleted (in flight or waiting). */
  get depth(): number {
    return this.messages.size;
  }

  /** Resolves once no message is left and no invocation runs. */
  drained(): Promise<void> {
    if (!this.messages.size && !this.inflight.size) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** Stops handing out messages; resolves when the invocations under way have finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.all([...this.inflight]);
  }

  private schedule(): void {
    if (this.stopped || !this.consumer) return;
    clearTimeout(this.timer);
    let next = Infinity;
    for (const m of this.messages.values()) next = Math.min(next, m.visibleAt);
    if (next === Infinity) return;
    this.timer = setTimeout(() => this.pump(), Math.max(0, next - Date.now()));
  }

  private pump(): void {
    if (this.stopped) return;
    const at = Date.now();
    const visible = [...this.messages.values()].filter((m) => m.visibleAt <= at).sort((a, b) => a.visibleAt - b.visibleAt);
    const max = this.opts.maxReceiveCount ?? Infinity;
    const batchSize = this.opts.batchSize ?? 10;
    let batch: Message[] = [];
    for (const m of visible) {
      if (m.receiveCount >= max) {
        this.messages.delete(m.id);
        this.deadLetters.push({ body: m.body, reason: `received ${m.receiveCount} times` });
        this.opts.onDeadLetter?.(m.body, `received ${m.receiveCount} times`);
        continue;
      }
      m.receiveCount++;
      m.firstReceivedAt ??= at;
      m.receiptHandle = randomUUID();
      m.visibleAt = at + (this.opts.visibilityTimeoutSeconds ?? 30) * 1000;
      batch.push(m);
      if (batch.length === batchSize) {
        this.invoke(batch);
        batch = [];
      }
    }
    if (batch.length) this.invoke(batch);
    this.schedule();
    this.notifyIfIdle();
  }

  private record(m: Message): SQSRecord {
    return {
      messageId: m.id,
      receiptHandle: m.receiptHandle!,
      body: m.body,
      attributes: {
        ApproximateReceiveCount: String(m.receiveCount),
        SentTimestamp: String(m.sentAt),
        SenderId: 'local',
        ApproximateFirstReceiveTimestamp: String(m.firstReceivedAt),
      },
      messageAttributes: {},
      md5OfBody: createHash('md5').update(m.body).digest('hex'),
      eventSource: 'aws:sqs',
      eventSourceARN: this.arn,
      awsRegion: 'local',
    };
  }

  private invoke(batch: Message[]): void {
    const handles = new Map(batch.map((m) => [m.id, m.receiptHandle]));
    const run = (async () => {
      try {
        const out = await this.consumer!({ Records: batch.map((m) => this.record(m)) }, this.opts.context());
        const failed = new Set((out?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
        for (const [id, handle] of handles) {
          // Deleted with the receipt handle of this receive only (a later receive owns it otherwise).
          if (!failed.has(id) && this.messages.get(id)?.receiptHandle === handle) this.messages.delete(id);
        }
      } catch (err) {
        (this.opts.onError ?? console.error)(err);
      }
    })();
    this.inflight.add(run);
    void run.finally(() => {
      this.inflight.delete(run);
      this.schedule();
      this.notifyIfIdle();
    });
  }

  private notifyIfIdle(): void {
    if (this.messages.size || this.inflight.size) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
