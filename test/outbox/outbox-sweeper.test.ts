import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { keys, type Key } from '#lib/db/keys';
import { WriteSet } from '#lib/db/writes';
import { relayRecords, type Publish } from '#lib/outbox/relay';
import { sweepOutbox } from '#lib/outbox/sweeper';
import { createMerchant } from '#lib/merchants/service';
import { merchantIdPages } from '#lib/merchants/store';
import { addOutboxEvent, OUTBOX_CAPACITY, stampPublishedNow } from '#lib/outbox/store';
import { formatTimestamp } from '#lib/shared/time';
import { detailOf, streamRecord } from './support/records.ts';

/**
 * The relay stamps what it published; the sweeper publishes only events whose marks are still
 * unpublished on the table past the grace period. DynamoDB Local for the items and the pending
 * index, a PutEvents double for EventBridge, the injected clock for time.
 */
const T0 = '2026-05-01T12:00:00Z';
const at = (minutes: number) => formatTimestamp(new Date(Date.parse(T0) + minutes * 60_000));
const noPause = { sleep: async () => undefined, maxAttempts: 2 };

afterEach(() => resetClock());

/** A PutEvents double: accepts everything (ids in order, duplicates kept) unless `down`. */
const bus = () => {
  const accepted: string[] = [];
  const state = { down: false };
  const publish: Publish = async (entries) => {
    if (state.down) throw Object.assign(new Error('unavailable'), { name: 'ServiceUnavailableException' });
    accepted.push(...entries.map((e) => detailOf(e).id));
    return { FailedEntryCount: 0, Entries: entries.map(() => ({ EventId: 'eb' })) };
  };
  return { publish, accepted, state };
};

const getItem = async (key: Key) => (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;

/** Commits one event at `when` (clock time) and returns its id and the INSERT record the stream would carry. */
const commitEvent = async (merchantId: string, when: string) => {
  const ws = new WriteSet();
  const id = addOutboxEvent(ws, merchantId, 'order.created', { order_no: `O-${Math.random()}` }, when);
  await ws.commit();
  const item = (await getItem(keys.outboxEvent(merchantId, id)))!;
  return { id, record: streamRecord('INSERT', item), mark: { pk: item.mark_pk as string, sk: item.mark_sk as string } };
};

const only = (merchantId: string) =>
  (async function* () {
    yield [merchantId];
  })();

describe('the relay stamps what it published', () => {
  it('stamps each published event’s mark (published_at, out of the pending index); a replayed batch publishes again but stamps nothing twice', async () => {
    fixedClock(T0);
    const merchantId = (await createMerchant('Stamp shop')).merchant_id;
    const events = [await commitEvent(merchantId, T0), await commitEvent(merchantId, T0)];
    for (const e of events) expect(await getItem(e.mark)).toMatchObject({ gsi4pk: expect.stringContaining(merchantId) });
    const eb = bus();
    const first = await relayRecords(
      events.map((e) => e.record),
      eb.publish,
      { ...noPause, markPublished: stampPublishedNow },
    );
    expect(first.marks).toEqual({ marked: 2, already: 0, failed: 0 });
    for (const e of events) {
      const mark = await getItem(e.mark);
      expect(mark).toMatchObject({ published_at: T0, id: e.id });
      expect(mark).not.toHaveProperty('gsi4pk');
    }
    const again = await relayRecords(
      events.map((e) => e.record),
      eb.publish,
      { ...noPause, markPublished: stampPublishedNow },
    );
    expect(again.marks).toEqual({ marked: 0, already: 2, failed: 0 });
    expect(eb.accepted).toEqual([...events.map((e) => e.id), ...events.map((e) => e.id)]);
  });

  it('publishes nothing it was refused, and stamps nothing it did not publish', async () => {
    fixedClock(T0);
    const merchantId = (await createMerchant('Refused shop')).merchant_id;
    const e = await commitEvent(merchantId, T0);
    const eb = bus();
    eb.state.down = true;
    const result = await relayRecords([e.record], eb.publish, { ...noPause, markPublished: stampPublishedNow });
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: e.record.dynamodb!.SequenceNumber }]);
    expect(result.marks).toEqual({ marked: 0, already: 0, failed: 0 });
    expect(await getItem(e.mark)).not.toHaveProperty('published_at');
  });

  it('a stamp that fails does not fail the batch (it would publish it all again): the event stays pending for the sweeper', async () => {
    const clock = fixedClock(T0);
    const merchantId = (await createMerchant('Unstamped shop')).merchant_id;
    const e = await commitEvent(merchantId, T0);
    const eb = bus();
    const result = await relayRecords([e.record], eb.publish, {
      ...noPause,
      markPublished: async () => {
        throw Object.assign(new Error('throttled'), { name: 'ThrottlingException' });
      },
    });
    expect(result.batchItemFailures).toEqual([]);
    expect(result.marks).toEqual({ marked: 0, already: 0, failed: 1 });
    clock.set(at(20));
    const swept = await sweepOutbox({ publish: eb.publish, merchants: only(merchantId), ...noPause });
    expect(swept).toMatchObject({ candidates: 1, confirmed: 1, published: 1, marked: 1 });
    expect(eb.accepted).toEqual([e.id, e.id]);
  });
});

describe('the sweeper', () => {
  it('publishes only marks unpublished on the table and pending past the grace period, then stamps them', async () => {
    const clock = fixedClock(T0);
    const merchantId = (await createMerchant('Sweep shop')).merchant_id;
    const published = await commitEvent(merchantId, T0);
    const staleIndex = await commitEvent(merchantId, T0);
    const lost = await commitEvent(merchantId, T0);
    const eb = bus();
    await relayRecords([published.record], eb.publish, { ...noPause, markPublished: stampPublishedNow });
    // Stamped on the table while the index still lists it (an index lags its table): the sweeper must not trust the index.
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: staleIndex.mark,
        UpdateExpression: 'SET published_at = :t',
        ExpressionAttributeValues: { ':t': T0 },
      }),
    );
    clock.set(at(10));
    const recent = await commitEvent(merchantId, at(10));

    clock.set(at(12));
    expect(await sweepOutbox({ publish: eb.publish, merchants: only(merchantId), ...noPause })).toMatchObject({
      candidates: 0,
      published: 0,
    });

    clock.set(at(20));
    eb.accepted.length = 0;
    const first = await sweepOutbox({ publish: eb.publish, merchants: only(merchantId), ...noPause });
    expect(first).toMatchObject({ merchants: 1, candidates: 2, confirmed: 1, published: 1, marked: 1, unpublished: 0, stopped: false });
    expect(eb.accepted).toEqual([lost.id]);
    expect(await getItem(lost.mark)).toMatchObject({ published_at: at(20) });

    const second = await sweepOutbox({ publish: eb.publish, merchants: only(merchantId), ...noPause });
    expect(second).toMatchObject({ candidates: 1, confirmed: 0, published: 0 });

    clock.set(at(26));
    const third = await sweepOutbox({ publish: eb.publish, merchants: only(merchantId), ...noPause });
    expect(third).toMatchObject({ confirmed: 1, published: 1 });
    expect(eb.accepted).toEqual([lost.id, recent.id]);
  });

  it('while EventBridge refuses, leaves every event pending', async () => {
    const clock = fixedClock(T0);
    const merchantId = (await createMerchant('Down shop')).merchant_id;
    const e = await commitEvent(merchantId, T0);
    const eb = bus();
    eb.state.down = true;
    clock.set(at(30));
    expect(await sweepOutbox({ publish: eb.publish, merchants: only(merchantId), ...noPause })).toMatchObject({
      confirmed: 1,
      published: 0,
      unpublished: 1,
      stopped: true,
    });
    expect(await getItem(e.mark)).toMatchObject({ gsi4pk: expect.any(String) });
    expect(await getItem(e.mark)).not.toHaveProperty('published_at');
  });

  it('a merchant whose events EventBridge refuses stops no other: the run goes on round the rest, leaving only its events pending', async () => {
    const clock = fixedClock(T0);
    const [refused, busy, quiet] = await Promise.all(['Refused', 'Busy', 'Quiet'].map(async (n) => (await createMerchant(n)).merchant_id));
    const refusedEvents = [await commitEvent(refused, T0), await commitEvent(refused, T0)];
    const busyIds: string[] = [];
    for (let batch = 0; batch < 3; batch++) {
      const ws = new WriteSet();
      for (let i = 0; i < 40; i++) busyIds.push(addOutboxEvent(ws, busy, 'order.created', { order_no: `B-${batch}-${i}` }, T0));
      await ws.commit();
    }
    const quietEvent = await commitEvent(quiet, T0);
    // EventBridge refuses every entry of one merchant (as a throttled or malformed entry comes back).
    const accepted: string[] = [];
    const publish: Publish = async (entries) => {
      const results = entries.map((e) => (detailOf(e).merchant_id === refused ? { ErrorCode: 'ThrottlingException' } : { EventId: 'eb' }));
      for (const [i, e] of entries.entries()) if (!results[i]!.ErrorCode) accepted.push(detailOf(e).id);
      return { FailedEntryCount: results.filter((r) => r.ErrorCode).length, Entries: results };
    };
    clock.set(at(30));
    // The refused merchant comes first in the run.
    const merchants = (async function* () {
      yield [refused, busy, quiet];
    })();
    const stats = await sweepOutbox({ publish, merchants, random: () => 0, ...noPause });
    expect(stats).toMatchObject({ merchants: 3, published: 121, unpublished: 2, stopped: true });
    expect(accepted.sort()).toEqual([...busyIds, quietEvent.id].sort());
    for (const e of refusedEvents) expect(await getItem(e.mark)).toMatchObject({ gsi4pk: expect.any(String) });
    expect(await getItem(quietEvent.mark)).toMatchObject({ published_at: at(30) });
  });

  it('finds merchants through the merchant directory (written when a merchant is created)', async () => {
    const merchantId = (await createMerchant('Directory shop')).merchant_id;
    // Other tests' merchants share the table: walk the directory (not a sweep of all of them) to find this one.
    let listed = false;
    for await (const page of merchantIdPages()) listed ||= page.includes(merchantId);
    expect(listed).toBe(true);
  });
});

describe('outbox item sizes (the capacity model)', () => {
  it('a mark stays under OUTBOX_CAPACITY.markMaxBytes; an event with the largest metadata under payloadMaxBytes', () => {
    const puts: Record<string, Record<string, unknown>> = {};
    const ws = { put: (tag: string, item: Record<string, unknown>) => (puts[tag] = item), tags: () => [] } as unknown as WriteSet;
    const metadata = { note: 'é'.repeat(8 * 1024 - 20) }; // 16 KB of UTF-8: the largest metadata allowed
    expect(Buffer.byteLength(JSON.stringify(metadata))).toBeLessThanOrEqual(16 * 1024);
    const order = {
      id: 1,
      order_no: 'x'.repeat(64),
      amount: '999999999.99',
      currency: 'USD',
      status: 'paid',
      customer_id: 1,
      metadata,
      created_at: T0,
      updated_at: T0,
    };
    addOutboxEvent(ws, `mer_${'f'.repeat(20)}`, 'subscription.reactivated', order, T0);
    // DynamoDB's item size: attribute names and values in UTF-8 (numbers counted generously as their text).
    const size = (item: Record<string, unknown>) =>
      Object.entries(item).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(String(v)), 0);
    expect(size(puts['outbox-mark'])).toBeLessThanOrEqual(OUTBOX_CAPACITY.markMaxBytes);
    expect(size(puts.outbox)).toBeLessThanOrEqual(OUTBOX_CAPACITY.payloadMaxBytes);
  });
});
