import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { orderBody } from '../orders/helpers.ts';
import { eventually, receiverWithEndpoint, useDeliveryPipeline, verifiedEvents } from './support/pipeline.ts';

/**
 * Commit → delivery latency on the local stack, measured (not asserted: the machine is shared, the
 * figures go to docs/benchmarks.md by hand). 200 orders created one after another by one client; for each,
 * the time from its POST /orders answer (the commit) to the receiver getting its order.created,
 * split at the moment the local bus accepted the event (relay: stream poll + PutEvents; delivery:
 * events queue → fan-out → delivery queue → signed POST). The poller polls an idle stream every
 * 250 ms as `npm start` does (LATENCY_POLL_MS overrides).
 */
const EVENTS = 200;
const pollIntervalMs = Number(process.env.LATENCY_POLL_MS ?? 250);
const pipe = useDeliveryPipeline('wh-latency', { pollIntervalMs });
const api = useApi();

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const summary = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  return { median: percentile(s, 50), p95: percentile(s, 95), max: s[s.length - 1] };
};

describe('latency budget', () => {
  it(`commit → delivery over ${EVENTS} order.created events (printed, not asserted)`, { timeout: 120_000 }, async () => {
    const { merchantId, token } = await newMerchant();
    const { receiver } = await receiverWithEndpoint(pipe, api, token, { events: ['order.created'] });
    const published = new Map<string, number>();
    pipe.bus.subscribe((e) => {
      if (e.detail.merchant_id === merchantId) published.set(e.detail.data.object.order_no, Date.now());
    });

    const committed = new Map<string, number>();
    const started = Date.now();
    for (let i = 0; i < EVENTS; i++) {
      const body = orderBody({ status: 'pending' });
      const r = await api.post('/orders', token, body);
      expect(r.status).toBe(201);
      committed.set(body.order_no, Date.now());
    }
    await eventually(() => receiver.received.length >= EVENTS, 60_000, `${EVENTS} deliveries`);
    await pipe.settled();

    const events = verifiedEvents(receiver.received);
    expect(events).toHaveLength(EVENTS);
    const total: number[] = [];
    const relay: number[] = [];
    const delivery: number[] = [];
    receiver.received.forEach((d, i) => {
      const no = events[i].data.object.order_no as string;
      total.push(d.receivedAt - committed.get(no)!);
      relay.push(published.get(no)! - committed.get(no)!);
      delivery.push(d.receivedAt - published.get(no)!);
    });
    const figures = {
      events: EVENTS,
      pollIntervalMs,
      total: summary(total),
      relay: summary(relay),
      delivery: summary(delivery),
      runMs: Date.now() - started,
    };
    console.log(`webhook latency, commit → receiver (ms): ${JSON.stringify(figures)}`);
    expect(new Set(events.map((e) => e.id)).size).toBe(EVENTS);
  });
});
