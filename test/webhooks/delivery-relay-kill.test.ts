import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tableName } from '#lib/db/client';
import type { EventDetail } from '#lib/outbox/relay';
import { newMerchant, useApi } from '../support/api.ts';
import { outboxEvents, uniqueNo } from '../orders/helpers.ts';
import { publishedDetails, startRelayProcess } from '../outbox/support/relay-process.ts';
import { eventually, receiverWithEndpoint, useDeliveryPipeline, verifiedEvents } from './support/pipeline.ts';

/**
 * The relay killed (kill -9) between a commit and its publish, as in test/outbox/local-relay.slow.test.ts,
 * but through to the webhook receiver: the relay runs as its own process
 * (test/outbox/support/relay-child.ts: the poller and relay handler of `npm start`, publishing to a
 * JSON-lines file); this process forwards what it publishes to the local bus of the delivery
 * pipeline (events queue → fan-out → delivery → receiver). No relay runs in this process.
 */
const pipe = useDeliveryPipeline('wh-kill', { relay: false });
const api = useApi();

let dir: string;
const children: ChildProcess[] = [];
let forwarding: NodeJS.Timeout | undefined;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'wh-kill-'));
});
afterEach(() => {
  clearInterval(forwarding);
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const published = (file: string) => publishedDetails<EventDetail>(file);

/** Publishes each event the child relay writes to `file` on the pipeline's bus, once, as PutEvents would. */
const forward = (file: string) => {
  let done = 0;
  forwarding = setInterval(() => {
    const details = published(file).slice(done);
    done += details.length;
    if (details.length) {
      void pipe.bus.publish(
        details.map((d) => ({
          Source: 'revenue-analytics-api',
          DetailType: d.type,
          Detail: JSON.stringify(d),
          Time: new Date(d.created_at),
        })),
      );
    }
  }, 50);
};

const startRelayChild = (env: Record<string, string>) => startRelayProcess(env, children);

describe('relay killed between commit and publish', () => {
  it('kill -9 while publishing: after a restart the events are published and delivered, each once', { timeout: 60_000 }, async () => {
    const { merchantId, token } = await newMerchant();
    const { receiver } = await receiverWithEndpoint(pipe, api, token);
    const env = { CHECKPOINT_FILE: join(dir, 'checkpoint.json'), OUT_FILE: join(dir, 'published.jsonl'), TABLE_NAME: tableName() };
    forward(env.OUT_FILE);

    const first = await startRelayChild({ ...env, HANG_MERCHANT: merchantId });
    const orderNo = uniqueNo('KILL');
    const order = await api.post('/orders', token, {
      order_no: orderNo,
      amount: '42.00',
      customer_email: 'kill@example.com',
      status: 'paid',
    });
    expect(order.status).toBe(201);
    const ids = (await outboxEvents(merchantId)).map((e) => e.id as string);
    expect(ids).toHaveLength(2);

    // The relay has read the committed records and is publishing them…
    await eventually(() => first.output().includes('publishing'), 20_000, 'the publish');
    for (const id of ids) expect(first.output()).toContain(id);
    // …and dies before it returns.
    const exited = new Promise((r) => (first.child.exitCode !== null ? r(null) : first.child.once('exit', r)));
    first.child.kill('SIGKILL');
    await exited;
    expect(first.child.signalCode).toBe('SIGKILL');
    expect(published(env.OUT_FILE).filter((e) => e.merchant_id === merchantId)).toEqual([]);
    expect(receiver.received).toEqual([]);

    await startRelayChild(env);
    await eventually(() => receiver.received.length >= 2, 20_000, 'the deliveries after the restart');
    await new Promise((r) => setTimeout(r, 300));
    await pipe.settled();
    const events = verifiedEvents(receiver.received);
    expect(events.map((e) => e.id).sort()).toEqual([...ids].sort());
    expect(events.map((e) => e.type).sort()).toEqual(['order.created', 'order.paid']);
    for (const e of events) expect(e.data.object).toEqual(order.body.data);
    expect(
      published(env.OUT_FILE)
        .filter((e) => e.merchant_id === merchantId)
        .map((e) => e.id),
    ).toEqual(ids);
  });
});
