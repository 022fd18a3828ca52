import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { tableName } from '#lib/db/client';
import { createRelayHandler, type Publish } from '#lib/events/relay';
import { ensureTable } from '../../../infra/local/dynamodb.ts';
import { LocalBus } from '../../../infra/local/local-bus.ts';
import { startOutboxPoller, type OutboxPoller } from '../../../infra/local/outbox-poller.ts';
import { startWebhookReceiver } from '../../../infra/local/webhook-receiver.ts';
import { startLocalWebhooks } from '../../../infra/local/webhooks.ts';
import type { useApi } from '../../support/api.ts';

/**
 * `npm start`'s event path for a test file: API → DynamoDB Local → stream → outbox poller → relay →
 * local bus → events queue → fan-out → delivery queue → delivery → a real HTTP receiver verifying
 * with `standardwebhooks`. The file gets its own table, so its stream holds its own writes only.
 */
export const useDeliveryPipeline = (label: string) => {
  const sharedTable = process.env.TABLE_NAME;
  process.env.TABLE_NAME = `${label}-${process.pid}`;
  let poller: OutboxPoller | undefined;
  let pipeline: ReturnType<typeof startLocalWebhooks> | undefined;
  const receivers: Awaited<ReturnType<typeof startWebhookReceiver>>[] = [];
  const lines: string[] = [];
  let publish: Publish | undefined;

  beforeAll(async () => {
    await ensureTable(process.env.DYNAMODB_ENDPOINT, tableName());
    const bus = new LocalBus();
    // Through a hook, so a test can make PutEvents fail.
    publish = bus.publish;
    poller = await startOutboxPoller({
      endpoint: process.env.DYNAMODB_ENDPOINT!,
      tableName: tableName(),
      handler: createRelayHandler((entries) => (hooks.publish ?? publish!)(entries), { sleep: async () => undefined }),
      intervalMs: 50,
    });
    pipeline = startLocalWebhooks(bus, { log: (l) => lines.push(l) });
  });
  afterEach(async () => {
    hooks.publish = undefined;
    for (const r of receivers.splice(0)) await r.close();
  });
  afterAll(async () => {
    await pipeline?.stop();
    await poller?.stop();
    process.env.TABLE_NAME = sharedTable;
  });

  const hooks: { publish?: Publish } = {};
  return {
    hooks,
    lines,
    get pipeline() {
      return pipeline!;
    },
    /** The bus's own publish (for a failing wrapper around it). */
    get publish() {
      return publish!;
    },
    /** A receiver verifying with the secrets pushed into `secrets` (they are known after the endpoint exists). */
    receiver: async (respond?: NonNullable<Parameters<typeof startWebhookReceiver>[0]>['respond']) => {
      const secrets: string[] = [];
      const r = await startWebhookReceiver({ secrets, respond });
      receivers.push(r);
      return Object.assign(r, { secrets });
    },
  };
};

/** Registers an endpoint at `url` and returns it with its secret. */
export const registerEndpoint = async (api: ReturnType<typeof useApi>, token: string, url: string, events: string[] = ['*']) => {
  const r = await api.post('/webhook-endpoints', token, { url, events });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data as { id: number; secret: string; url: string };
};

/** Waits until `check` returns a value (not undefined/false), polling. */
export const eventually = async <T>(check: () => T | Promise<T>, timeoutMs = 15_000, what = 'condition'): Promise<NonNullable<T>> => {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false && v !== null) return v as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};
