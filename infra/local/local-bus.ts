import { randomUUID } from 'node:crypto';
import type { PutEventsRequestEntry, PutEventsResultEntry } from '@aws-sdk/client-eventbridge';
import type { Publish } from '#lib/outbox/relay';

/**
 * The local stack's event bus: where `npm start`'s outbox relay publishes when no EventBridge
 * emulator is named (EVENTBRIDGE_ENDPOINT). In memory, in process: a consumer (local webhook
 * delivery) subscribes and receives each event as an EventBridge rule target would.
 */
export type BusEvent = {
  version: '0';
  id: string;
  'detail-type': string;
  source: string;
  account: string;
  time: string;
  region: string;
  resources: string[];
  // biome-ignore lint/suspicious/noExplicitAny: an EventBridge event's detail is any JSON, read by each subscriber as its own shape
  detail: any;
};
export type Subscriber = (event: BusEvent) => void | Promise<void>;

export class LocalBus {
  private readonly subscribers = new Set<Subscriber>();

  /** `log` gets one line per event accepted (npm start prints them); `onError` a subscriber's failure. */
  constructor(private readonly opts: { log?: (line: string) => void; onError?: (err: unknown) => void } = {}) {}

  /** Receives every event published from now on; returns the unsubscribe function. */
  subscribe(fn: Subscriber): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  /**
   * PutEvents: validates each entry as EventBridge does (source, detail-type, a JSON object detail),
   * then hands it to every subscriber without waiting for them (like EventBridge, accepting an
   * event is not delivering it; a failing subscriber never fails the publisher).
   */
  readonly publish: Publish = async (entries) => {
    const results = entries.map((entry): PutEventsResultEntry => {
      const event = this.toEvent(entry);
      if ('ErrorCode' in event) return event;
      this.opts.log?.(`event ${event['detail-type']} ${event.detail?.id ?? event.id} (${event.detail?.merchant_id ?? '-'})`);
      for (const fn of this.subscribers) {
        void Promise.resolve()
          .then(() => fn(event))
          .catch((err) => (this.opts.onError ?? console.error)(err));
      }
      return { EventId: event.id };
    });
    return { FailedEntryCount: results.filter((r) => r.ErrorCode).length, Entries: results };
  };

  private toEvent(entry: PutEventsRequestEntry): BusEvent | { ErrorCode: string; ErrorMessage: string } {
    if (!entry.Source || !entry.DetailType) return { ErrorCode: 'InvalidArgument', ErrorMessage: 'Source and DetailType are required.' };
    let detail: unknown;
    try {
      detail = JSON.parse(entry.Detail ?? '');
    } catch {
      return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
    }
    if (detail === null || typeof detail !== 'object' || Array.isArray(detail))
      return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
    return {
      version: '0',
      id: randomUUID(),
      'detail-type': entry.DetailType,
      source: entry.Source,
      account: '000000000000',
      time: `${(entry.Time ?? new Date()).toISOString().slice(0, 19)}Z`,
      region: 'local',
      resources: entry.Resources ?? [],
      detail,
    };
  }
}
