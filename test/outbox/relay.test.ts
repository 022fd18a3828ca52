import type { PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import type { Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { logger } from '#lib/logger';
import {
  createRelayHandler,
  entrySize,
  PUBLISH_ATTEMPTS,
  PUT_EVENTS_MAX_BYTES,
  relayRecords,
  type Publish,
  type PutEventsOutput,
} from '#lib/outbox/relay';
import { detailOf, outboxInsert, outboxItem, streamRecord } from './support/records.ts';

/**
 * The relay core with a fake PutEvents: which records become events, their shape, batching, and
 * what is reported to the stream when PutEvents fails.
 */
const noPause = { sleep: async () => undefined };

/** A PutEvents double: records every call; `fail(entry, call)` names the entries to reject. */
const fakePublisher = (fail: (entry: PutEventsRequestEntry, call: number) => string | undefined = () => undefined) => {
  const calls: PutEventsRequestEntry[][] = [];
  /** Event ids EventBridge accepted, in order, duplicates kept. */
  const accepted: string[] = [];
  const publish: Publish = async (entries) => {
    calls.push(entries);
    const call = calls.length;
    const results = entries.map((e) => {
      const code = fail(e, call);
      if (code) return { ErrorCode: code, ErrorMessage: `injected ${code}` };
      accepted.push(detailOf(e).id);
      return { EventId: `eb-${accepted.length}` };
    });
    return { FailedEntryCount: results.filter((r) => 'ErrorCode' in r).length, Entries: results } satisfies PutEventsOutput;
  };
  return { publish, calls, accepted };
};

const idOf = (record: ReturnType<typeof outboxInsert>) => record.dynamodb!.NewImage!.id.S!;
const seqOf = (record: ReturnType<typeof outboxInsert>) => record.dynamodb!.SequenceNumber!;

afterEach(() => vi.restoreAllMocks());

describe('relayRecords: which records', () => {
  it('publishes only INSERTs of outbox items (not other items, updates or TTL removals), in stream order', async () => {
    const first = outboxInsert('mer_a', 'order.created');
    const second = outboxInsert('mer_a', 'order.paid');
    const records = [
      streamRecord('INSERT', { pk: 'RATE#M#mer_a#1', sk: 'RATE', n: 1 }),
      first,
      streamRecord('MODIFY', outboxItem('mer_a', 'order.refunded', {})),
      streamRecord('INSERT', { ...outboxItem('mer_a', 'order.failed', {}), entity: 'order' }),
      streamRecord('REMOVE', outboxItem('mer_a', 'order.cancelled', {})),
      second,
      streamRecord('MODIFY', { pk: 'M#mer_a', sk: 'TOTALS', n: 2 }),
    ];
    const fake = fakePublisher();
    const result = await relayRecords(records, fake.publish, noPause);
    expect(result.batchItemFailures).toEqual([]);
    expect(fake.calls).toHaveLength(1);
    expect(fake.accepted).toEqual([idOf(first), idOf(second)]);
    expect(result.stats).toEqual({ records: 7, events: 2, published: 2, calls: 1, retried: 0 });
  });

  it('makes no call for a batch without outbox inserts', async () => {
    const fake = fakePublisher();
    const result = await relayRecords([streamRecord('INSERT', { pk: 'x', sk: 'y' })], fake.publish, noPause);
    expect(result).toEqual({ batchItemFailures: [], stats: { records: 1, events: 0, published: 0, calls: 0, retried: 0 } });
  });
});

describe('relayRecords: the event', () => {
  it('source, detail-type = type, detail = {id, type, created_at, merchant_id, data: {object}}, time, bus', async () => {
    const object = { order_no: 'A-1', amount: '12.00', metadata: { deep: { n: 1 } } };
    const item = outboxItem('mer_shape', 'order.paid', object, '2026-03-01T10:00:05Z');
    const fake = fakePublisher();
    await relayRecords([streamRecord('INSERT', item)], fake.publish, { ...noPause, source: 'test-source', eventBusName: 'test-bus' });
    const [entry] = fake.calls[0];
    expect(entry).toEqual({
      Source: 'test-source',
      DetailType: 'order.paid',
      Detail: expect.any(String),
      Time: new Date('2026-03-01T10:00:05Z'),
      EventBusName: 'test-bus',
    });
    // Exact keys and order: what consumers (webhook delivery) read.
    expect(Object.keys(detailOf(entry))).toEqual(['id', 'type', 'created_at', 'merchant_id', 'data']);
    expect(detailOf(entry)).toEqual({
      id: item.id,
      type: 'order.paid',
      created_at: '2026-03-01T10:00:05Z',
      merchant_id: 'mer_shape',
      data: { object },
    });
    expect(item.id).toMatch(/^evt_[0-9a-f]{24}$/);
  });

  it('takes the source and bus from the environment (EVENT_SOURCE, EVENT_BUS_NAME); no bus: the default bus', async () => {
    vi.stubEnv('EVENT_BUS_NAME', 'env-bus');
    const fake = fakePublisher();
    await relayRecords([outboxInsert('mer_env')], fake.publish, noPause);
    expect(fake.calls[0][0]).toMatchObject({ Source: 'revenue-analytics-api', EventBusName: 'env-bus' });
    vi.stubEnv('EVENT_BUS_NAME', '');
    vi.stubEnv('EVENT_SOURCE', 'other-source');
    await relayRecords([outboxInsert('mer_env')], fake.publish, noPause);
    expect(fake.calls[1][0].Source).toBe('other-source');
    expect(fake.calls[1][0]).not.toHaveProperty('EventBusName');
    vi.unstubAllEnvs();
  });
});

describe('relayRecords: batching', () => {
  it('sends at most 10 entries per PutEvents call, in stream order', async () => {
    const records = Array.from({ length: 25 }, () => outboxInsert('mer_chunks'));
    const fake = fakePublisher();
    const result = await relayRecords(records, fake.publish, noPause);
    expect(fake.calls.map((c) => c.length)).toEqual([10, 10, 5]);
    expect(fake.accepted).toEqual(records.map(idOf));
    expect(result.stats).toMatchObject({ events: 25, published: 25, calls: 3 });
  });

  it('also keeps each call within 256 KiB of entries', async () => {
    const big = { order_no: 'BIG', metadata: { blob: 'x'.repeat(100 * 1024) } };
    const records = Array.from({ length: 5 }, () => outboxInsert('mer_big', 'order.created', big));
    const fake = fakePublisher();
    await relayRecords(records, fake.publish, noPause);
    expect(fake.calls.map((c) => c.length)).toEqual([2, 2, 1]);
    for (const call of fake.calls) expect(call.reduce((n, e) => n + entrySize(e), 0)).toBeLessThanOrEqual(PUT_EVENTS_MAX_BYTES);
  });
});

describe('relayRecords: PutEvents failures', () => {
  it('a partial failure sends only the failed entries again, then succeeds: each event published once', async () => {
    const records = Array.from({ length: 12 }, () => outboxInsert('mer_partial'));
    const flaky = new Set([idOf(records[2]), idOf(records[7])]);
    const fake = fakePublisher((e, call) => (call === 1 && flaky.has(detailOf(e).id) ? 'ThrottlingException' : undefined));
    const result = await relayRecords(records, fake.publish, noPause);
    expect(result.batchItemFailures).toEqual([]);
    expect(fake.calls.map((c) => c.map((e) => detailOf(e).id))).toEqual([
      records.slice(0, 10).map(idOf),
      [idOf(records[2]), idOf(records[7])],
      records.slice(10).map(idOf),
    ]);
    expect([...fake.accepted].sort()).toEqual(records.map(idOf).sort());
    expect(result.stats).toMatchObject({ published: 12, calls: 3, retried: 2 });
  });

  it('a failed call (throttled, 5xx, network) is a failure of each of its entries, sent again', async () => {
    const records = Array.from({ length: 3 }, () => outboxInsert('mer_throw'));
    const inner = fakePublisher();
    let calls = 0;
    const publish: Publish = async (entries) => {
      if (++calls <= 2) throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      return inner.publish(entries);
    };
    const result = await relayRecords(records, publish, noPause);
    expect(result.batchItemFailures).toEqual([]);
    expect(inner.accepted).toEqual(records.map(idOf));
    expect(result.stats).toMatchObject({ calls: 3, retried: 6, published: 3 });
  });

  it('entries still failing: reports the first failed record; later chunks wait for the retry; nothing is lost', async () => {
    const records = [streamRecord('INSERT', { pk: 'RATE#IP#1', sk: 'R' }), ...Array.from({ length: 24 }, () => outboxInsert('mer_stuck'))];
    const stuck = [idOf(records[16]), idOf(records[13])];
    let failing = true;
    const fake = fakePublisher((e) => (failing && stuck.includes(detailOf(e).id) ? 'InternalFailure' : undefined));
    const warn = vi.spyOn(logger, 'warn');
    const result = await relayRecords(records, fake.publish, noPause);
    // Lambda retries from the LOWEST failed sequence number: the first failed record in stream order.
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: seqOf(records[13]) }]);
    // Chunk 1 (records 1–10) once; chunk 2 (11–20) then its two failures, PUBLISH_ATTEMPTS in all; chunk 3 never.
    expect(fake.calls.map((c) => c.length)).toEqual([10, 10, ...Array(PUBLISH_ATTEMPTS - 1).fill(2)]);
    expect(result.stats).toMatchObject({ events: 24, published: 18, calls: 1 + PUBLISH_ATTEMPTS, retried: 2 * (PUBLISH_ATTEMPTS - 1) });
    expect(warn).toHaveBeenCalledWith('outbox events not published', expect.objectContaining({ attempts: PUBLISH_ATTEMPTS }));

    // Lambda's retry: the batch again from the reported record, EventBridge healthy again.
    failing = false;
    const from = records.findIndex((r) => r.dynamodb!.SequenceNumber === result.batchItemFailures[0].itemIdentifier);
    const retry = await relayRecords(records.slice(from), fake.publish, noPause);
    expect(retry.batchItemFailures).toEqual([]);
    const ids = records.slice(1).map(idOf);
    expect(new Set(fake.accepted)).toEqual(new Set(ids));
    // Duplicates only where at-least-once allows them: published after the first failed record, before the retry.
    const counts = new Map<string, number>();
    for (const id of fake.accepted) counts.set(id, (counts.get(id) ?? 0) + 1);
    const duplicated = ids.filter((id) => counts.get(id)! > 1);
    expect(duplicated).toEqual(
      records
        .slice(14, 21)
        .filter((r) => !stuck.includes(idOf(r)))
        .map(idOf),
    );
  });

  it('never pauses past the deadline: no time left means no second attempt', async () => {
    const records = [outboxInsert('mer_deadline')];
    const fake = fakePublisher(() => 'ThrottlingException');
    const sleep = vi.fn(async () => undefined);
    const result = await relayRecords(records, fake.publish, { sleep, deadline: Date.now() });
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: seqOf(records[0]) }]);
    expect(fake.calls).toHaveLength(1);
    expect(sleep).not.toHaveBeenCalled();
  });

  it('a malformed outbox item fails at its record (to the on-failure destination), without logging its data', async () => {
    const good = outboxInsert('mer_bad');
    const bad = streamRecord('INSERT', { ...outboxItem('mer_bad', 'order.created', {}), data: '{"object": SECRET-DATA' });
    const after = outboxInsert('mer_bad');
    const error = vi.spyOn(logger, 'error');
    const fake = fakePublisher();
    const result = await relayRecords([good, bad, after], fake.publish, noPause);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: seqOf(bad) }]);
    expect(fake.accepted).toEqual([idOf(good)]);
    expect(error).toHaveBeenCalledTimes(1);
    expect(JSON.stringify(error.mock.calls)).not.toContain('SECRET-DATA');
  });
});

describe('the relay handler', () => {
  const context = (remainingMs: number) =>
    ({ getRemainingTimeInMillis: () => remainingMs, awsRequestId: 'req-1', functionName: 'relay' }) as unknown as Context;

  it('answers a DynamoDB stream batch with batchItemFailures only, and logs no event data', async () => {
    const info = vi.spyOn(logger, 'info');
    const fake = fakePublisher();
    const handler = createRelayHandler(fake.publish, noPause);
    const records = [outboxInsert('mer_handler', 'order.created', { order_no: 'PRIVATE-ORDER-NO' })];
    await expect(handler({ Records: records }, context(10_000))).resolves.toEqual({ batchItemFailures: [] });
    expect(fake.accepted).toEqual([idOf(records[0])]);
    expect(info).toHaveBeenCalledWith('outbox relay batch', expect.objectContaining({ records: 1, events: 1, published: 1, calls: 1 }));
    expect(JSON.stringify(info.mock.calls)).not.toContain('PRIVATE-ORDER-NO');
  });

  it('keeps its retries within the invocation: with under 1.5 s left, a failure is reported at once', async () => {
    const fake = fakePublisher(() => 'InternalFailure');
    const records = [outboxInsert('mer_handler')];
    const result = await createRelayHandler(fake.publish)({ Records: records }, context(1_000));
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: seqOf(records[0]) }] });
    expect(fake.calls).toHaveLength(1);
  });
});
