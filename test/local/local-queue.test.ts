import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalQueue } from '../../infra/local/local-queue.ts';
import { lambdaContext } from '../../infra/local/server.ts';

/**
 * npm start's in-memory SQS + event source (the webhook queues): the semantics the consumers rely
 * on — partial batch failures, visibility (default and changed), receive counts, redrive to the
 * dead-letter list, and invocations that do not wait for each other.
 */
const queues: LocalQueue[] = [];
afterEach(async () => {
  for (const q of queues.splice(0)) await q.stop();
});

const queue = (
  opts: { visibilityTimeoutSeconds?: number; maxReceiveCount?: number; batchSize?: number; onError?: (e: unknown) => void } = {},
) => {
  const q = new LocalQueue(`test-${queues.length}`, { context: () => lambdaContext('test', 'r'), ...opts });
  queues.push(q);
  return q;
};

type Seen = { body: string; receiveCount: number; at: number };

describe('LocalQueue', () => {
  it('a successful batch is deleted; a reported failure comes back after the visibility timeout with its receive count', async () => {
    const q = queue({ visibilityTimeoutSeconds: 0.2 });
    const seen: Seen[] = [];
    q.consume(async (event: SQSEvent): Promise<SQSBatchResponse> => {
      for (const r of event.Records)
        seen.push({ body: r.body, receiveCount: Number(r.attributes.ApproximateReceiveCount), at: Date.now() });
      const first = seen.filter((s) => s.body === 'b').length === 1;
      return { batchItemFailures: event.Records.filter((r) => r.body === 'b' && first).map((r) => ({ itemIdentifier: r.messageId })) };
    });
    const sent = Date.now();
    q.send('a');
    q.send('b');
    await q.drained();
    expect(seen.map((s) => [s.body, s.receiveCount])).toEqual([
      ['a', 1],
      ['b', 1],
      ['b', 2],
    ]);
    expect(seen[2].at - sent).toBeGreaterThanOrEqual(190);
    expect(q.depth).toBe(0);
  });

  it('changeVisibility postpones a received message to the time the consumer asks', async () => {
    const q = queue({ visibilityTimeoutSeconds: 30 });
    const seen: Seen[] = [];
    q.consume(async (event) => {
      const r = event.Records[0];
      seen.push({ body: r.body, receiveCount: Number(r.attributes.ApproximateReceiveCount), at: Date.now() });
      if (seen.length === 1) {
        q.changeVisibility(r.receiptHandle, 0.3);
        return { batchItemFailures: [{ itemIdentifier: r.messageId }] };
      }
      return { batchItemFailures: [] };
    });
    q.send('x');
    await q.drained();
    expect(seen).toHaveLength(2);
    expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(290);
    expect(seen[1].at - seen[0].at).toBeLessThan(5_000);
  });

  it('a message failing more than maxReceiveCount times goes to the dead-letter list; a throwing consumer fails its whole batch', async () => {
    const errors: unknown[] = [];
    const q = queue({ visibilityTimeoutSeconds: 0.05, maxReceiveCount: 3, onError: (e) => errors.push(e) });
    let calls = 0;
    q.consume(async () => {
      calls++;
      throw new Error('consumer crashed');
    });
    q.send('poison');
    await q.drained();
    expect(calls).toBe(3);
    expect(errors).toHaveLength(3);
    expect(q.deadLetters).toEqual([{ body: 'poison', reason: 'received 3 times' }]);
  });

  it('invocations do not wait for each other: a slow batch does not hold back the next messages', async () => {
    const q = queue({ batchSize: 1 });
    const done: string[] = [];
    q.consume(async (event) => {
      const body = event.Records[0].body;
      if (body === 'slow') await new Promise((r) => setTimeout(r, 500));
      done.push(body);
      return { batchItemFailures: [] };
    });
    q.send('slow');
    q.send('fast');
    await q.drained();
    expect(done).toEqual(['fast', 'slow']);
  });
});
