import { eventually } from '../support/eventually.ts';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBBatchResponse } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tableName } from '#lib/db/client';
import { createRelayHandler, type Publish } from '#lib/outbox/relay';
import { ensureTable } from '../../infra/local/dynamodb.ts';
import { LocalBus, type BusEvent } from '../../infra/local/local-bus.ts';
import { startOutboxPoller, type OutboxPoller, type StreamHandler } from '../../infra/local/outbox-poller.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { outboxEvents, uniqueNo } from '../orders/helpers.ts';
import { publishedDetails, startRelayProcess } from './support/relay-process.ts';

/**
 * The local relay end to end: API → DynamoDB Local (one transaction: change + outbox item) →
 * table stream → infra/local/outbox-poller.ts → relay handler → local bus. Then the faults:
 * PutEvents failing, and the relay dying between a commit and its publish.
 *
 * This file uses its own table in the run's DynamoDB Local, so its stream holds this file's
 * writes only (the API reads TABLE_NAME at each call).
 */
const sharedTable = process.env.TABLE_NAME;
process.env.TABLE_NAME = `relay-local-${process.pid}`;

const api = useApi();
let dir: string;
beforeAll(async () => {
  await ensureTable(process.env.DYNAMODB_ENDPOINT, tableName());
  dir = mkdtempSync(join(tmpdir(), 'relay-local-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  process.env.TABLE_NAME = sharedTable;
});

const pollers: OutboxPoller[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const p of pollers.splice(0)) await p.stop();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

let checkpoints = 0;
const newCheckpointFile = () => join(dir, `checkpoint-${++checkpoints}.json`);

/** The poller `npm start` runs, invoking `handler` (by default the relay publishing with `publish`). */
const startRelay = async (opts: { publish?: Publish; handler?: StreamHandler; checkpointFile?: string; intervalMs?: number }) => {
  const poller = await startOutboxPoller({
    endpoint: process.env.DYNAMODB_ENDPOINT!,
    tableName: tableName(),
    handler: opts.handler ?? createRelayHandler(opts.publish!),
    checkpointFile: opts.checkpointFile ?? newCheckpointFile(),
    intervalMs: opts.intervalMs ?? 100,
  });
  pollers.push(poller);
  return poller;
};

/** A local bus recording what it receives. */
const recordingBus = () => {
  const bus = new LocalBus();
  const received: BusEvent[] = [];
  bus.subscribe((e) => void received.push(e));
  const of = (merchantId: string) => received.filter((e) => e.detail.merchant_id === merchantId);
  return { bus, received, of };
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const waitFor = (check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000) => eventually(check, timeoutMs, what);
const countById = (ids: string[]) => {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
};

const paidOrder = async (token: string, orderNo = uniqueNo('EVT')) => {
  // A customer per order: concurrent orders of one customer contend on its figures (tested elsewhere), not the relay.
  const r = await api.post('/orders', token, {
    order_no: orderNo,
    amount: '99.50',
    customer_email: `events-${orderNo.toLowerCase()}@example.com`,
    status: 'paid',
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data;
};
/** The merchant's outbox event ids, in commit order of their orders (each order: created, then paid). */
const outboxIdsByOrder = async (merchantId: string, orderNos: string[]) => {
  const events = await outboxEvents(merchantId);
  return orderNos.flatMap((no) =>
    ['order.created', 'order.paid'].map((type) => events.find((e) => e.data.object.order_no === no && e.type === type)!.id as string),
  );
};

describe('local relay: API → stream → poller → relay handler → local bus', () => {
  it('orders and subscriptions created through the API reach the bus once each, carrying the API object', async () => {
    const { bus, of } = recordingBus();
    await startRelay({ publish: bus.publish });
    const { merchantId, token } = await newMerchant();
    const order = await paidOrder(token);
    const customer = (await api.post('/customers', token, { email: 'subscriber@example.com', name: 'Sub' })).body.data;
    const sub = await api.post('/subscriptions', token, {
      customer_id: customer.id,
      plan_name: 'Basic',
      mrr: '100.00',
      billing_cycle: 'monthly',
    });
    expect(sub.status).toBe(201);

    await waitFor(() => of(merchantId).length >= 3, 'three events');
    await sleep(500); // anything more would be a duplicate
    const events = of(merchantId);
    expect(events.map((e) => e['detail-type']).sort()).toEqual(['order.created', 'order.paid', 'subscription.created']);
    const stored = await outboxEvents(merchantId);
    for (const event of events) {
      const item = stored.find((s) => s.id === event.detail.id)!;
      expect(item, event.detail.id).toBeDefined();
      expect(event).toMatchObject({ source: 'revenue-analytics-api', 'detail-type': item.type, time: item.created_at });
      expect(Object.keys(event.detail)).toEqual(['id', 'type', 'created_at', 'merchant_id', 'data']);
      const object = item.type === 'subscription.created' ? sub.body.data : order;
      expect(event.detail).toEqual({
        id: item.id,
        type: item.type,
        created_at: item.created_at,
        merchant_id: merchantId,
        data: { object },
      });
    }
  });

  it('PutEvents failing for a moment (failed calls, then a partial failure) is absorbed by the relay: each event once', async () => {
    const { bus, of } = recordingBus();
    const { merchantId, token } = await newMerchant();
    let calls = 0;
    let injected = 0;
    const publish: Publish = async (entries) => {
      // Faults only in calls carrying this test's events (the relay also replays the file's history).
      if (!entries.some((e) => JSON.parse(e.Detail!).merchant_id === merchantId)) return bus.publish(entries);
      calls++;
      if (calls <= 2) {
        injected += entries.length;
        throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      }
      if (calls === 3) {
        // Every other entry rejected; the rest accepted.
        const out = await bus.publish(entries.filter((_, i) => i % 2 === 1));
        let accepted = 0;
        const results = entries.map((_, i) =>
          i % 2 === 1 ? out.Entries![accepted++] : { ErrorCode: 'InternalFailure', ErrorMessage: 'injected' },
        );
        injected += entries.length - out.Entries!.length;
        return { FailedEntryCount: results.filter((r) => r.ErrorCode).length, Entries: results };
      }
      return bus.publish(entries);
    };
    const orderNos = [uniqueNo('T'), uniqueNo('T'), uniqueNo('T')];
    for (const no of orderNos) await paidOrder(token, no);
    await startRelay({ publish });
    const ids = await outboxIdsByOrder(merchantId, orderNos);
    await waitFor(() => of(merchantId).length >= ids.length, 'every event');
    await sleep(500);
    expect(injected).toBeGreaterThan(0);
    expect(
      of(merchantId)
        .map((e) => e.detail.id)
        .sort(),
    ).toEqual([...ids].sort());
  });

  it('an entry failing longer than the relay retries: re-read from it until it passes; nothing lost, duplicates only after it', async () => {
    const { bus, of } = recordingBus();
    const { merchantId, token } = await newMerchant();
    // Committed while no relay runs: one batch when it starts.
    const orderNos = [uniqueNo('S'), uniqueNo('S'), uniqueNo('S'), uniqueNo('S')];
    for (const no of orderNos) await paidOrder(token, no);
    const ids = await outboxIdsByOrder(merchantId, orderNos);
    const stuck = ids[2]; // order 2's order.created
    let outage = true;
    const publish: Publish = async (entries) => {
      const failing = entries.map((e) => outage && JSON.parse(e.Detail!).id === stuck);
      const out = await bus.publish(entries.filter((_, i) => !failing[i]));
      let next = 0;
      const results = failing.map((f) => (f ? { ErrorCode: 'InternalFailure', ErrorMessage: 'injected' } : out.Entries![next++]));
      return { FailedEntryCount: failing.filter(Boolean).length, Entries: results };
    };
    const reported: DynamoDBBatchResponse[] = [];
    const relay = createRelayHandler(publish);
    await startRelay({
      handler: async (event, context) => {
        const report = await relay(event, context);
        reported.push(report);
        return report;
      },
    });

    await waitFor(() => reported.filter((r) => r.batchItemFailures.length).length >= 2, 'two batches reported failed');
    expect(of(merchantId).map((e) => e.detail.id)).not.toContain(stuck);
    outage = false;
    await waitFor(() => of(merchantId).some((e) => e.detail.id === stuck), 'the stuck event');
    await sleep(500);

    const counts = countById(of(merchantId).map((e) => e.detail.id));
    expect([...counts.keys()].sort()).toEqual([...ids].sort());
    // Before the failed record: checkpointed, never sent again. The failed one: once, when it passed.
    expect(ids.slice(0, 3).map((id) => counts.get(id))).toEqual([1, 1, 1]);
    // After it: sent with every retry of the batch (at-least-once), the receivers dedupe on the id.
    for (const id of ids.slice(3)) expect(counts.get(id)).toBeGreaterThanOrEqual(2);
  });
});

describe('local relay: restarts', () => {
  const startChild = (env: Record<string, string>) => startRelayProcess(env, children);
  const published = publishedDetails;

  it('the relay killed (kill -9) between the commit and the publish: the event is delivered after a restart', {
    timeout: 60_000,
  }, async () => {
    const { merchantId, token } = await newMerchant();
    const env = { CHECKPOINT_FILE: newCheckpointFile(), OUT_FILE: join(dir, 'killed.jsonl'), TABLE_NAME: tableName() };
    const first = await startChild({ ...env, HANG_MERCHANT: merchantId });
    const orderNo = uniqueNo('K');
    await paidOrder(token, orderNo);
    const ids = await outboxIdsByOrder(merchantId, [orderNo]);
    // The relay has read the committed records and is publishing them…
    await waitFor(() => first.output().includes('publishing'), 'the publish');
    expect(first.output()).toContain(ids[0]);
    // …and dies before it returns.
    const exited = new Promise((r) => (first.child.exitCode !== null ? r(null) : first.child.once('exit', r)));
    first.child.kill('SIGKILL');
    await exited;
    expect(first.child.signalCode).toBe('SIGKILL');
    expect(published(env.OUT_FILE).filter((e) => e.merchant_id === merchantId)).toEqual([]);

    const second = await startChild(env);
    await waitFor(() => published(env.OUT_FILE).filter((e) => e.merchant_id === merchantId).length >= 2, 'the events after the restart');
    await sleep(500);
    expect(
      published(env.OUT_FILE)
        .filter((e) => e.merchant_id === merchantId)
        .map((e) => e.id),
    ).toEqual(ids);
    second.child.kill('SIGTERM');
  });

  it('a relay stopped and started again resumes after its checkpoint: later events delivered, earlier ones not sent again', async () => {
    const { bus, of } = recordingBus();
    const checkpointFile = newCheckpointFile();
    const { merchantId, token } = await newMerchant();
    const first = await startRelay({ publish: bus.publish, checkpointFile });
    const before = uniqueNo('R');
    await paidOrder(token, before);
    await waitFor(() => of(merchantId).length >= 2, 'the first order’s events');
    await first.stop();

    const after = uniqueNo('R');
    await paidOrder(token, after); // committed while no relay runs
    await startRelay({ publish: bus.publish, checkpointFile });
    await waitFor(() => of(merchantId).length >= 4, 'the second order’s events');
    await sleep(500);
    expect(of(merchantId).map((e) => e.detail.id)).toEqual(await outboxIdsByOrder(merchantId, [before, after]));
  });
});

describe('relay cost', () => {
  it('PutEvents calls per event, 200 paid orders (400 events): created while the relay runs, and as a backlog', {
    timeout: 180_000,
  }, async () => {
    const { bus, of } = recordingBus();
    let calls: number[] = []; // entries per PutEvents call
    let invocations: number[] = []; // events per relay invocation
    const publish: Publish = async (entries) => {
      calls.push(entries.length);
      return bus.publish(entries);
    };
    const relay = createRelayHandler(publish);
    const handler: StreamHandler = async (event, context) => {
      invocations.push(event.Records.length);
      return relay(event, context);
    };
    const checkpointFile = newCheckpointFile();
    const createOrders = async (token: string, n: number, concurrency = 4) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < n) {
            next++;
            await paidOrder(token);
          }
        }),
      );
    };
    const figures = () => {
      const events = calls.reduce((a, b) => a + b, 0);
      const minimal = invocations.reduce((a, n) => a + Math.ceil(n / 10), 0);
      return {
        events,
        calls: calls.length,
        minimal,
        maxEntries: Math.max(...calls),
        invocations: invocations.length,
        callsPerEvent: +(calls.length / events).toFixed(3),
        entriesPerCall: +(events / calls.length).toFixed(2),
      };
    };

    // Caught up with the table's history first (a sentinel event arrives last).
    // npm start's poll interval (250 ms), which plays the part of the mapping's batching window (1 s).
    const live = await startRelay({ handler, checkpointFile, intervalMs: 250 });
    const sentinel = await newMerchant();
    await paidOrder(sentinel.token);
    await waitFor(() => of(sentinel.merchantId).length === 2, 'catching up');
    calls = [];
    invocations = [];

    const a = await newMerchant();
    const started = Date.now();
    await createOrders(a.token, 200);
    await waitFor(() => of(a.merchantId).length >= 400, 'the live events', 60_000);
    const liveFigures = { ...figures(), ms: Date.now() - started };
    await live.stop();

    const b = await newMerchant();
    await createOrders(b.token, 200);
    calls = [];
    invocations = [];
    const backlogStart = Date.now();
    await startRelay({ handler, checkpointFile, intervalMs: 250 });
    await waitFor(() => of(b.merchantId).length >= 400, 'the backlog', 60_000);
    const backlogFigures = { ...figures(), ms: Date.now() - backlogStart };

    console.log(`relay cost (live, 4 clients): ${JSON.stringify(liveFigures)}`);
    console.log(`relay cost (backlog): ${JSON.stringify(backlogFigures)}`);
    for (const f of [liveFigures, backlogFigures]) {
      expect(f.events).toBe(400);
      // Never more than 10 entries a call, and no more calls than each invocation's ⌈events / 10⌉.
      expect(f.maxEntries).toBeLessThanOrEqual(10);
      expect(f.calls).toBe(f.minimal);
    }
    // Healthy PutEvents: each event exactly once.
    await sleep(300);
    expect(new Set(of(a.merchantId).map((e) => e.detail.id)).size).toBe(400);
    expect(of(a.merchantId)).toHaveLength(400);
    expect(of(b.merchantId)).toHaveLength(400);
  });
});
