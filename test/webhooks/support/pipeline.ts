import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { tableName } from '#lib/db/client';
import { createRelayHandler, type Publish } from '#lib/outbox/relay';
import { ensureTable } from '../../../infra/local/dynamodb.ts';
import { LocalBus } from '../../../infra/local/local-bus.ts';
import { startOutboxPoller, type OutboxPoller } from '../../../infra/local/outbox-poller.ts';
import { startWebhookReceiver, type ReceivedDelivery, type ReceiverOptions } from '../../../infra/local/webhook-receiver.ts';
import { startLocalWebhooks } from '../../../infra/local/webhooks.ts';
import type { useApi } from '../../support/api.ts';

/**
 * `npm start`'s event path for a test file: API → DynamoDB Local → stream → outbox poller → relay →
 * local bus → events queue → fan-out → delivery queue → delivery → a real HTTP receiver verifying
 * with `standardwebhooks`. The file gets its own table, so its stream holds its own writes only.
 * With `relay: false` no poller runs in this process: the test publishes to `bus` itself (a relay
 * in a child process, which the test may kill). The poller polls an idle stream every 50 ms unless
 * told (`npm start`: 250 ms).
 */
export const useDeliveryPipeline = (label: string, opts: { relay?: boolean; pollIntervalMs?: number } = {}) => {
  const sharedTable = process.env.TABLE_NAME;
  process.env.TABLE_NAME = `${label}-${process.pid}`;
  let poller: OutboxPoller | undefined;
  let pipeline: ReturnType<typeof startLocalWebhooks> | undefined;
  const receivers: Awaited<ReturnType<typeof startWebhookReceiver>>[] = [];
  const lines: string[] = [];
  let publish: Publish | undefined;
  let bus: LocalBus | undefined;

  beforeAll(async () => {
    await ensureTable(process.env.DYNAMODB_ENDPOINT, tableName());
    bus = new LocalBus();
    // Through a hook, so a test can make PutEvents fail.
    publish = bus.publish;
    if (opts.relay !== false) {
      poller = await startOutboxPoller({
        endpoint: process.env.DYNAMODB_ENDPOINT!,
        tableName: tableName(),
        handler: createRelayHandler((entries) => (hooks.publish ?? publish!)(entries), { sleep: async () => undefined }),
        intervalMs: opts.pollIntervalMs ?? 50,
      });
    }
    pipeline = startLocalWebhooks(bus, { log: (l) => lines.push(l) });
  });
  afterEach(async () => {
    hooks.publish = undefined;
    // Deliveries still in flight finish before their receivers close: one cut off by the close would
    // fail, wait for its retry (10 s, then a minute) and keep the next test's settle from draining.
    // Bounded, as a test may leave a retry due later on purpose.
    await Promise.race([pipeline?.drained(), new Promise((r) => setTimeout(r, 3_000).unref())]);
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
    get bus() {
      return bus!;
    },
    /** The bus's own publish (for a failing wrapper around it). */
    get publish() {
      return publish!;
    },
    /**
     * A receiver verifying with the secrets pushed into `secrets` (they are known after the endpoint
     * exists), closed after the test. `port` reopens a receiver where an earlier one listened.
     */
    receiver: async (respond?: ReceiverOptions['respond'], options: Pick<ReceiverOptions, 'port'> = {}) => {
      const secrets: string[] = [];
      const r = await startWebhookReceiver({ secrets, respond, ...options });
      receivers.push(r);
      return Object.assign(r, { secrets });
    },
    /** Resolves once both queues are empty and idle (every task delivered, parked or dropped). */
    settled: (timeoutMs = 20_000) =>
      Promise.race([
        pipeline!.drained(),
        new Promise<never>((_, reject) =>
          setTimeout(
            () =>
              // What is still queued, and the pipeline's last lines: a task waiting on a retry, or one still running.
              reject(
                new Error(
                  `timed out waiting for the delivery queues to drain (events ${pipeline!.events.depth}, deliveries ${pipeline!.deliveries.depth} left; ` +
                    `last lines: ${JSON.stringify(lines.slice(-8))})`,
                ),
              ),
            timeoutMs,
          ).unref(),
        ),
      ]),
  };
};

export type Receiver = Awaited<ReturnType<ReturnType<typeof useDeliveryPipeline>['receiver']>>;

/** Registers an endpoint at `url` and returns it with its secret. */
export const registerEndpoint = async (api: ReturnType<typeof useApi>, token: string, url: string, events: string[] = ['*']) => {
  const r = await api.post('/webhook-endpoints', token, { url, events });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data as { id: number; secret: string; url: string };
};

/** A receiver with an endpoint registered at it, verifying with that endpoint's secret. */
export const receiverWithEndpoint = async (
  pipe: ReturnType<typeof useDeliveryPipeline>,
  api: ReturnType<typeof useApi>,
  token: string,
  opts: { events?: string[]; respond?: ReceiverOptions['respond'] } = {},
) => {
  const receiver = await pipe.receiver(opts.respond);
  const endpoint = await registerEndpoint(api, token, receiver.url, opts.events);
  receiver.secrets.push(endpoint.secret);
  return { receiver, endpoint };
};

export type DeliveryLogRow = {
  event_id: string;
  event_type: string;
  attempt: number;
  status: number | null;
  error: string | null;
  duration_ms: number;
  at: string;
  next_attempt_at: string | null;
  payload: string | null;
  payload_truncated: boolean;
};

/** Every entry of an endpoint's delivery log (GET /webhook-endpoints/{id}/deliveries, all pages), newest first. */
export const deliveryLog = async (api: ReturnType<typeof useApi>, token: string, endpointId: number): Promise<DeliveryLogRow[]> => {
  const rows: DeliveryLogRow[] = [];
  for (let page = 1; ; page++) {
    const r = await api.get(`/webhook-endpoints/${endpointId}/deliveries?per_page=100&page=${page}`, token);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    rows.push(...r.body.data);
    if (r.body.data.length < 100) return rows;
  }
};

/** What a receiver got, as [type, object] of the verified deliveries (an unverified one fails the test). */
export const verifiedEvents = (received: ReceivedDelivery[]) =>
  received.map((d) => {
    expect(d.event, `delivery ${d.id} did not verify: ${d.error}`).not.toBeNull();
    expect(d.id).toBe(d.event!.id);
    return d.event!;
  });

export { eventually } from '../../support/eventually.ts';
