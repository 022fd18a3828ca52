import type { DynamoDBRecord, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { firstFailedRecord, processQueueBatch, processStreamBatch } from '#lib/shared/batch';
import { inOrderPerKey, limiter } from '#lib/shared/in-turn';

/**
 * The consumers' batch loop (lib/shared/batch.ts: Powertools' batch processing) and the two helpers
 * their record handlers use (lib/shared/in-turn.ts), in memory.
 */
const streamRecord = (seq: string): DynamoDBRecord => ({ eventName: 'INSERT', dynamodb: { SequenceNumber: seq } });
const message = (id: string): SQSRecord => ({ messageId: id, body: id }) as SQSRecord;
const tick = () => new Promise((r) => setTimeout(r, 1));

describe('processStreamBatch / processQueueBatch', () => {
  it("reports the records whose handler throws, by sequence number or message id, and runs every record's handler", async () => {
    const seen: string[] = [];
    const stream = await processStreamBatch(['1', '2', '3'].map(streamRecord), async (r) => {
      seen.push(r.dynamodb!.SequenceNumber!);
      if (r.dynamodb!.SequenceNumber === '2') throw new Error('no');
    });
    expect(stream).toEqual({ batchItemFailures: [{ itemIdentifier: '2' }] });
    expect(seen).toEqual(['1', '2', '3']);
    const queue = await processQueueBatch(['a', 'b'].map(message), async (r) => {
      if (r.messageId === 'b') throw new Error('no');
    });
    expect(queue).toEqual({ batchItemFailures: [{ itemIdentifier: 'b' }] });
  });

  it('answers a batch whose every record failed like any other (no error thrown), and an empty batch with no failure', async () => {
    const all = await processQueueBatch(['a', 'b'].map(message), async () => {
      throw new Error('down');
    });
    expect(all.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['a', 'b']);
    expect(await processStreamBatch([], async () => undefined)).toEqual({ batchItemFailures: [] });
  });

  it('starts every handler at once, in batch order, and keeps batches processed at once apart', async () => {
    const started: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const batch = (ids: string[], fail: string) =>
      processQueueBatch(ids.map(message), async (r) => {
        started.push(r.messageId);
        await gate;
        if (r.messageId === fail) throw new Error('no');
      });
    const both = Promise.all([batch(['a1', 'a2', 'a3'], 'a2'), batch(['b1', 'b2'], 'b1')]);
    await tick();
    expect(started).toEqual(['a1', 'a2', 'a3', 'b1', 'b2']);
    release();
    expect(await both).toEqual([{ batchItemFailures: [{ itemIdentifier: 'a2' }] }, { batchItemFailures: [{ itemIdentifier: 'b1' }] }]);
  });

  it('firstFailedRecord: the lowest reported record in stream order, where Lambda resumes', () => {
    const records = ['10', '11', '12', '13'].map(streamRecord);
    const failures = (...ids: string[]) => ({ batchItemFailures: ids.map((itemIdentifier) => ({ itemIdentifier })) });
    expect(firstFailedRecord(records, failures('13', '11', '12'))).toEqual(failures('11'));
    expect(firstFailedRecord(records, failures())).toEqual(failures());
  });
});

describe('limiter', () => {
  it('runs at most n tasks at once, the others in the order handed in; a failing task frees its place', async () => {
    const limit = limiter(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const task = (i: number) => async () => {
      running++;
      most = Math.max(most, running);
      order.push(i);
      await tick();
      running--;
      if (i === 1) throw new Error('failed');
      return i;
    };
    const results = await Promise.allSettled([0, 1, 2, 3, 4].map((i) => limit(task(i))));
    expect(most).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(running).toBe(0);
  });
});

describe('inOrderPerKey', () => {
  it("runs one key's tasks one after another in the order handed in (past a failure), other keys' at once", async () => {
    const inOrder = inOrderPerKey();
    const log: string[] = [];
    const task =
      (name: string, fail = false) =>
      async () => {
        log.push(`start ${name}`);
        await tick();
        log.push(`end ${name}`);
        if (fail) throw new Error(name);
      };
    const runs = [inOrder('a', task('a1', true)), inOrder('b', task('b1')), inOrder('a', task('a2'))];
    const results = await Promise.allSettled(runs);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    // b1 starts while a1 runs; a2 only after a1 has ended.
    expect(log.indexOf('start b1')).toBeLessThan(log.indexOf('end a1'));
    expect(log.indexOf('start a2')).toBeGreaterThan(log.indexOf('end a1'));
  });
});
