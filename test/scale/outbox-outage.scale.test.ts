import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db, tableName, tallied } from '#lib/db/client';
import { keys, OUTBOX_SHARDS } from '#lib/db/keys';
import { WriteSet } from '#lib/db/writes';
import { relayRecords, type Publish } from '#lib/outbox/relay';
import { sweepOutbox, SWEEP_GRACE_MS } from '#lib/outbox/sweeper';
import { createMerchant } from '#lib/merchants/service';
import { addOutboxEvent, OUTBOX_SHARD_LIST, pendingMarkPages, stampPublishedNow } from '#lib/outbox/store';
import { formatTimestamp } from '#lib/shared/time';
import { detailOf, streamRecord } from '../outbox/support/records.ts';

/**
 * EventBridge down for 30 simulated hours, then back: the table's stream keeps records 24 h, so
 * the events of the first 6 hours leave it unpublished while the relay's shard waits; the sweeper
 * publishes them once EventBridge answers again. Real DynamoDB (Local) for the outbox, the marks
 * and the pending index; the stream and its event source mapping are simulated on the injected
 * clock (no waiting), with the mapping's settings: retried without limit, in order, until the
 * record leaves the stream.
 */
const HOUR = 3_600_000;
const MINUTE = 60_000;
const STREAM_RETENTION_MS = 24 * HOUR;
const T0 = Date.parse('2026-04-01T00:00:00Z');
const OUTAGE_ENDS = T0 + 30 * HOUR;
const STEP = 5 * MINUTE;
const SWEEP_EVERY_STEPS = 6;

afterEach(() => resetClock());

/** One stream shard as the event source mapping reads it: a checkpoint, records trimmed after 24 h. */
class SimulatedShard {
  private records: { at: number; record: DynamoDBRecord; id: string }[] = [];
  /** Events whose record left the stream before the relay checkpointed past it. */
  readonly expired: string[] = [];

  append(at: number, record: DynamoDBRecord, id: string) {
    this.records.push({ at, record, id });
  }

  /** Trims what the stream no longer keeps; the records from the checkpoint on (at most 100). */
  batch(t: number): DynamoDBRecord[] {
    while (this.records.length && this.records[0].at <= t - STREAM_RETENTION_MS) this.expired.push(this.records.shift()!.id);
    return this.records.slice(0, 100).map((r) => r.record);
  }

  /** Checkpoints before the first failed record (or past the whole batch). */
  checkpoint(batch: DynamoDBRecord[], failed: string | undefined) {
    const done = failed === undefined ? batch.length : batch.findIndex((r) => r.dynamodb?.SequenceNumber === failed);
    this.records.splice(0, done);
  }
}

describe('an EventBridge outage of 30 hours', { timeout: 600_000 }, () => {
  it('loses no committed event: the relay publishes what the stream still holds, the sweeper the rest; after dedupe on the event id each is received once', async () => {
    const clock = fixedClock(new Date(T0).toISOString());
    const merchantId = (await createMerchant('Outage shop')).merchant_id;
    const sweepThis = async function* () {
      yield [merchantId];
    };
    const shard = new SimulatedShard();

    // EventBridge: every call fails while it is down; afterwards every entry is accepted, by path.
    let down = true;
    const received: { id: string; by: 'relay' | 'sweeper' }[] = [];
    const publisher =
      (by: 'relay' | 'sweeper'): Publish =>
      async (entries) => {
        if (down) throw Object.assign(new Error('EventBridge is unavailable'), { name: 'ServiceUnavailableException' });
        for (const e of entries) received.push({ id: detailOf(e).id, by });
        return { FailedEntryCount: 0, Entries: entries.map((_, i) => ({ EventId: `eb-${received.length}-${i}` })) };
      };
    const noPause = { sleep: async () => undefined, maxAttempts: 2 };

    // 40 committed changes over the first 10 hours, every fifth announcing two events (created, paid).
    const committed: { id: string; at: number }[] = [];
    const commitTimes = Array.from({ length: 40 }, (_, i) => T0 + 7 * MINUTE + i * 15 * MINUTE);
    let relayAlready = 0;
    let sweeps = 0;
    for (let t = T0, step = 0; t <= OUTAGE_ENDS + 2 * HOUR; t += STEP, step++) {
      clock.set(new Date(t).toISOString());
      while (commitTimes.length && commitTimes[0] <= t) {
        const at = commitTimes.shift()!;
        clock.set(new Date(at).toISOString());
        const ws = new WriteSet();
        const iso = formatTimestamp(new Date(at));
        const ids = [addOutboxEvent(ws, merchantId, 'order.created', { order_no: `O-${committed.length}` }, iso)];
        if (committed.length % 5 === 0) ids.push(addOutboxEvent(ws, merchantId, 'order.paid', { order_no: `O-${committed.length}` }, iso));
        await ws.commit();
        for (const id of ids) {
          // The INSERT record the stream carries: the stored event item as its new image.
          const { Item } = await db().send(
            new GetCommand({ TableName: tableName(), Key: keys.outboxEvent(merchantId, id), ConsistentRead: true }),
          );
          shard.append(at, streamRecord('INSERT', Item!), id);
          committed.push({ id, at });
        }
        clock.set(new Date(t).toISOString());
      }
      down = t < OUTAGE_ENDS;
      // The sweeper runs before the relay in a step, so at recovery it publishes what the relay then publishes again.
      if (step % SWEEP_EVERY_STEPS === 0) {
        await sweepOutbox({ publish: publisher('sweeper'), merchants: sweepThis(), ...noPause });
        sweeps++;
      }
      const batch = shard.batch(t);
      if (batch.length) {
        const result = await relayRecords(batch, publisher('relay'), { ...noPause, markPublished: stampPublishedNow });
        relayAlready += result.marks?.already ?? 0;
        shard.checkpoint(batch, result.batchItemFailures[0]?.itemIdentifier);
      }
    }

    const committedIds = committed.map((c) => c.id).sort();
    // Only events older than the stream's retention when EventBridge came back left the stream.
    const expectedExpired = committed.filter((c) => c.at <= OUTAGE_ENDS - STREAM_RETENTION_MS).map((c) => c.id);
    expect(expectedExpired.length).toBeGreaterThan(0);
    expect(expectedExpired.length).toBeLessThan(committed.length);
    expect([...shard.expired].sort()).toEqual([...expectedExpired].sort());

    // The receiver dedupes on the event id (the webhook-id): each committed event exactly once.
    const seen = new Map<string, number>();
    for (const r of received) seen.set(r.id, (seen.get(r.id) ?? 0) + 1);
    expect([...seen.keys()].sort()).toEqual(committedIds);
    const duplicates = received.length - seen.size;
    // The events expired from the stream reached the bus through the sweeper only.
    const bySweeper = new Set(received.filter((r) => r.by === 'sweeper').map((r) => r.id));
    const byRelay = new Set(received.filter((r) => r.by === 'relay').map((r) => r.id));
    for (const id of expectedExpired) expect(byRelay.has(id), id).toBe(false);
    for (const id of expectedExpired) expect(bySweeper.has(id), id).toBe(true);
    // At recovery the sweeper (first in the step) published every pending event; the relay then sent
    // the ones still in the stream again: those are the duplicates, and the relay found their marks stamped.
    expect(duplicates).toBe(committed.length - expectedExpired.length);
    expect(relayAlready).toBe(duplicates);
    console.log(
      `outage: ${committed.length} events committed, ${expectedExpired.length} expired from the stream, ${received.length} received (${duplicates} duplicates before dedupe), ${sweeps} sweeps`,
    );

    // Every mark is stamped published and gone from the pending index.
    for (const id of committedIds) {
      const event = (
        await db().send(new GetCommand({ TableName: tableName(), Key: keys.outboxEvent(merchantId, id), ConsistentRead: true }))
      ).Item!;
      const mark = (
        await db().send(new GetCommand({ TableName: tableName(), Key: { pk: event.mark_pk, sk: event.mark_sk }, ConsistentRead: true }))
      ).Item!;
      expect(mark.published_at, id).toEqual(expect.any(String));
      expect(mark.gsi4pk, id).toBeUndefined();
    }
    for (const s of OUTBOX_SHARD_LIST) {
      for await (const page of pendingMarkPages(merchantId, s, '0', '9999')) expect(page).toEqual([]);
    }

    // An idle sweep of a merchant costs one Query per shard (nothing pending, nothing read).
    const { result, tally } = await tallied(() =>
      sweepOutbox({ publish: publisher('sweeper'), merchants: sweepThis(), graceMs: SWEEP_GRACE_MS }),
    );
    expect(result).toMatchObject({ merchants: 1, candidates: 0, published: 0 });
    expect(tally.byCommand).toEqual({ QueryCommand: OUTBOX_SHARDS });
  });
});
