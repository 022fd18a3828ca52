import { afterAll, describe, expect, it } from 'vitest';
import type { Publish } from '#lib/outbox/relay';
import { resetClock, setClock } from '#lib/clock';
import { AUTO_DISABLE_AFTER_MS, MAX_ATTEMPTS } from '#lib/webhooks/schedule';
import { newMerchant, useApi } from '../support/api.ts';
import { createOrder, outboxEvents, uniqueNo } from '../orders/helpers.ts';
import {
  deliveryLog,
  eventually,
  receiverWithEndpoint,
  registerEndpoint,
  useDeliveryPipeline,
  verifiedEvents,
} from './support/pipeline.ts';

/**
 * Delivery faults on the local stack's pipeline (the consumers npm start and AWS run): a receiver
 * failing, down, always failing, slow; PutEvents failing. The retry schedule is shortened to
 * 0.2 s pauses (read at each retry); one test stretches it to keep its receiver down a while.
 */
const SHORT_SCHEDULE = '0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2';
const savedSchedule = process.env.WEBHOOK_RETRY_DELAYS_SECONDS;
process.env.WEBHOOK_RETRY_DELAYS_SECONDS = SHORT_SCHEDULE;
afterAll(() => {
  if (savedSchedule === undefined) delete process.env.WEBHOOK_RETRY_DELAYS_SECONDS;
  else process.env.WEBHOOK_RETRY_DELAYS_SECONDS = savedSchedule;
});

const pipe = useDeliveryPipeline('wh-faults');
const api = useApi();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const countById = (ids: string[]) => {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
};

describe('webhook delivery faults', () => {
  it('a receiver answering 500 twice then 200: delivered once after two retries, the log shows attempts 1-3 (500, 500, 2xx)', async () => {
    const { token } = await newMerchant();
    const { receiver, endpoint } = await receiverWithEndpoint(pipe, api, token, { respond: (_, n) => (n <= 2 ? 500 : 200) });
    const order = await createOrder(api, token, { status: 'pending' });

    await eventually(() => receiver.received.length >= 3, 15_000, 'three attempts');
    await pipe.settled();
    expect(receiver.received).toHaveLength(3);
    const events = verifiedEvents(receiver.received);
    expect(new Set(events.map((e) => e.id)).size).toBe(1);
    expect(events[0]).toMatchObject({ type: 'order.created', data: { object: order } });
    // Same bytes every time; a fresh timestamp (and so signature) per attempt.
    expect(new Set(receiver.received.map((d) => d.body)).size).toBe(1);

    const log = await deliveryLog(api, token, endpoint.id);
    expect(log.map((d) => [d.event_id, d.attempt, d.status, d.error])).toEqual([
      [events[0].id, 3, 200, null],
      [events[0].id, 2, 500, null],
      [events[0].id, 1, 500, null],
    ]);
    // The retries waited for the schedule (≥ 0.18 s each with jitter), not for the queue's visibility timeout.
    const at = receiver.received.map((d) => d.receivedAt);
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(150);
    expect(at[2] - at[1]).toBeGreaterThanOrEqual(150);
    expect(at[2] - at[0]).toBeLessThan(20_000);
    // Each failed attempt's next_attempt_at is when the queue did try again (shown to the second, so
    // the try comes within that second or just after); the delivered one has none. Each payload is
    // the body the receiver verified.
    const [third, second, first] = log;
    for (const [failed, next] of [
      [first, at[1]],
      [second, at[2]],
    ] as const) {
      expect(failed.next_attempt_at).not.toBeNull();
      const due = Date.parse(failed.next_attempt_at!);
      expect(next).toBeGreaterThanOrEqual(due);
      expect(next - due).toBeLessThan(2_000);
    }
    expect(third.next_attempt_at).toBeNull();
    expect([first, second, third].map((d) => [d.payload, d.payload_truncated])).toEqual(receiver.received.map((d) => [d.body, false]));
  });

  it('a receiver down (connection refused) for a while, then up again on the same port: delivered after it returns', async () => {
    // Pauses long enough to see the receiver come back before the attempts run out.
    process.env.WEBHOOK_RETRY_DELAYS_SECONDS = '0.2,0.2,0.5,1,1,1,1,1';
    try {
      const { token } = await newMerchant();
      const gone = await pipe.receiver();
      const { port } = gone;
      await gone.close();
      const endpoint = await registerEndpoint(api, token, gone.url);
      const order = await createOrder(api, token, { status: 'pending' });

      const failed = await eventually(
        async () => {
          const log = await deliveryLog(api, token, endpoint.id);
          return log.length >= 3 ? log : undefined;
        },
        15_000,
        'three refused attempts',
      );
      expect(
        failed.every((d) => d.status === null && d.error === 'could not connect'),
        JSON.stringify(failed),
      ).toBe(true);

      const back = await pipe.receiver(undefined, { port });
      back.secrets.push(endpoint.secret);
      await eventually(() => back.received.length >= 1, 15_000, 'the delivery after the receiver came back');
      await pipe.settled();
      expect(back.received).toHaveLength(1);
      expect(verifiedEvents(back.received)[0]).toMatchObject({ type: 'order.created', data: { object: order } });
      const log = await deliveryLog(api, token, endpoint.id);
      expect(log[0]).toMatchObject({ attempt: log.length, status: 204, error: null });
      expect(log.slice(1).every((d) => d.error === 'could not connect')).toBe(true);
      expect(log.map((d) => d.attempt)).toEqual(log.map((_, i) => log.length - i));
    } finally {
      process.env.WEBHOOK_RETRY_DELAYS_SECONDS = SHORT_SCHEDULE;
    }
  });

  it(`failing every attempt: after attempt ${MAX_ATTEMPTS} the task is parked in the dead-letter list and nothing more is sent`, async () => {
    const { token, merchantId } = await newMerchant();
    let failing: string | undefined;
    const { receiver, endpoint } = await receiverWithEndpoint(pipe, api, token, { respond: (d) => (d.id === failing ? 503 : 204) });
    const order = await createOrder(api, token, { status: 'pending', order_no: uniqueNo('DLQ') });
    failing = (await outboxEvents(merchantId)).find((e) => e.data.object.order_no === order.order_no)!.id;

    const parked = await eventually(
      () => pipe.pipeline.deadLetters.find((d) => (d.task as { event: { id: string } }).event.id === failing),
      20_000,
      'the task in the dead-letter list',
    );
    expect(parked.task).toMatchObject({ merchant_id: merchantId, endpoint_id: endpoint.id, event: { id: failing, type: 'order.created' } });
    expect(parked.reason).toBe(`attempt ${MAX_ATTEMPTS} failed: HTTP 503`);

    // A later event to the same endpoint arrives; by then a live retry (every 0.2 s) would have shown up.
    const later = await createOrder(api, token, { status: 'pending', order_no: uniqueNo('AFTER') });
    await eventually(() => receiver.received.some((d) => d.event?.data.object.order_no === later.order_no), 15_000, 'the later event');
    await sleep(500);
    await pipe.settled();
    expect(receiver.received.filter((d) => d.id === failing)).toHaveLength(MAX_ATTEMPTS);
    expect(receiver.received).toHaveLength(MAX_ATTEMPTS + 1);
    const log = (await deliveryLog(api, token, endpoint.id)).filter((d) => d.event_id === failing);
    expect(log.map((d) => [d.attempt, d.status])).toEqual(Array.from({ length: MAX_ATTEMPTS }, (_, i) => [MAX_ATTEMPTS - i, 503]));
    // The last attempt, dead-lettered, has no next one; every earlier one had.
    expect(log.map((d) => d.next_attempt_at === null)).toEqual([true, ...Array(MAX_ATTEMPTS - 1).fill(false)]);
    // Nine failures within minutes do not disable the endpoint (that takes 5 days).
    expect((await api.get(`/webhook-endpoints/${endpoint.id}`, token)).body.data.status).toBe('enabled');
  });

  it('an endpoint failing every attempt for 5 days is disabled; its pending retries stop; enabled again, it receives', async () => {
    const { token } = await newMerchant();
    let offset = 0;
    setClock(() => new Date(Date.now() + offset));
    try {
      let failing = true;
      const { receiver, endpoint } = await receiverWithEndpoint(pipe, api, token, {
        respond: () => {
          // The first attempt has started (and will record its failure) at the real time; the
          // next one starts 5 days (and a minute) later.
          if (!failing) return 204;
          offset = AUTO_DISABLE_AFTER_MS + 60_000;
          return 500;
        },
      });
      await createOrder(api, token, { status: 'pending' });
      await eventually(
        async () => (await api.get(`/webhook-endpoints/${endpoint.id}`, token)).body.data.status === 'disabled',
        15_000,
        'the endpoint disabled',
      );
      await pipe.settled();
      // Attempt 2 (5 days after the first failure) disabled it; attempt 3 was never made.
      expect(receiver.received).toHaveLength(2);
      const log = await deliveryLog(api, token, endpoint.id);
      expect(log.map((d) => [d.attempt, d.status])).toEqual([
        [2, 500],
        [1, 500],
      ]);

      // Back to the real time, so that the receiver accepts the signature's timestamp.
      failing = false;
      offset = 0;
      expect((await api.patch(`/webhook-endpoints/${endpoint.id}`, token, { status: 'enabled' })).status).toBe(200);
      const later = await createOrder(api, token, { status: 'pending' });
      await eventually(() => receiver.received.length >= 3, 15_000, 'a delivery after re-enabling');
      await pipe.settled();
      expect(receiver.received).toHaveLength(3);
      expect(verifiedEvents(receiver.received.slice(2))[0].data.object).toEqual(later);
    } finally {
      resetClock();
    }
  });

  it('PutEvents failing (failed calls, then an entry rejected past the relay’s retries): every event delivered, duplicates only of the same webhook-id', async () => {
    const { merchantId, token } = await newMerchant();
    const { receiver } = await receiverWithEndpoint(pipe, api, token);
    const published: string[] = [];
    let calls = 0;
    let injected = 0;
    let stuck: string | undefined;
    let stuckFailures = 0;
    const ours = (entries: Parameters<Publish>[0]) => entries.some((e) => JSON.parse(e.Detail!).merchant_id === merchantId);
    pipe.hooks.publish = async (entries) => {
      // Faults only in calls carrying this test's events.
      if (!ours(entries)) return pipe.publish(entries);
      calls++;
      if (calls <= 3) {
        injected += entries.length;
        throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      }
      // Then the first entry of each call is rejected for 6 tries (more than the relay's 4 attempts
      // per invocation): the relay reports it, the poller reads the batch again from it, and the
      // entries after it that EventBridge had accepted are sent again.
      const ids = entries.map((e) => JSON.parse(e.Detail!).id as string);
      // (A call of two or more entries, so that some follow the stuck one: an order paid at creation
      // commits its two events in one transaction, so they travel together.)
      if (stuck === undefined && ids.length >= 2) stuck = ids[0];
      const failing = ids.map((id) => id === stuck && stuckFailures < 6);
      if (failing.some(Boolean)) stuckFailures++;
      const accepted = entries.filter((_, i) => !failing[i]);
      const out = await pipe.publish(accepted);
      published.push(...ids.filter((_, i) => !failing[i]));
      injected += failing.filter(Boolean).length;
      let next = 0;
      const results = failing.map((f) => (f ? { ErrorCode: 'InternalFailure', ErrorMessage: 'injected' } : out.Entries![next++]));
      return { FailedEntryCount: failing.filter(Boolean).length, Entries: results };
    };

    // Committed in one go, so the relay reads them in one batch.
    // A customer per order: concurrent orders of one customer contend on its figures, which is not under test here.
    const orders = await Promise.all(
      Array.from({ length: 6 }, (_, i) => createOrder(api, token, { status: 'paid', customer_email: `putevents-${i}@example.com` })),
    );
    const ids = (await outboxEvents(merchantId)).map((e) => e.id as string);
    expect(ids).toHaveLength(12);

    await eventually(() => new Set(receiver.received.map((d) => d.id)).size >= ids.length, 30_000, 'every event delivered');
    await sleep(300);
    await pipe.settled();
    expect(injected).toBeGreaterThan(0);
    expect(stuckFailures).toBe(6);
    const busCounts = countById(published);
    expect([...busCounts.keys()].sort()).toEqual([...ids].sort());
    // The relay really did publish some events twice or more (at-least-once upstream)…
    expect([...busCounts.values()].some((n) => n > 1)).toBe(true);

    // …and the receiver got every event, verified; any repeat carries the same webhook-id and body.
    const events = verifiedEvents(receiver.received);
    const received = countById(events.map((e) => e.id));
    expect([...received.keys()].sort()).toEqual([...ids].sort());
    for (const [id, n] of received) {
      if (n > 1) expect(new Set(receiver.received.filter((d) => d.id === id).map((d) => d.body)).size).toBe(1);
    }
    const orderNos = new Set(orders.map((o) => o.order_no));
    expect(events.every((e) => orderNos.has(e.data.object.order_no))).toBe(true);
    console.log(
      `PutEvents faults: ${injected} entries failed, ${published.length} published for ${ids.length} events, ${receiver.received.length} deliveries`,
    );
  });

  it('a slow endpoint (3 s per answer) does not delay deliveries to a fast one, nor duplicate them', async () => {
    const { token } = await newMerchant();
    const slowAnsweredAt = new Map<string, number>();
    const slow = await receiverWithEndpoint(pipe, api, token, {
      respond: async (d) => {
        await sleep(3_000);
        slowAnsweredAt.set(d.id, Date.now());
        return 204;
      },
    });
    const fast = await receiverWithEndpoint(pipe, api, token);

    const orders = await Promise.all(
      [0, 1, 2].map((i) => createOrder(api, token, { status: 'pending', customer_email: `slow-${i}@example.com` })),
    );
    await eventually(() => slowAnsweredAt.size >= 3, 30_000, 'the slow endpoint’s answers');
    // Each event reached the fast endpoint well before the slow one answered it (its task ran
    // beside the slow one's, not after it).
    const leads = [...slowAnsweredAt].map(([id, answeredAt]) => {
      const atFast = fast.receiver.received.find((d) => d.id === id);
      expect(atFast, `${id} at the fast endpoint`).toBeDefined();
      return answeredAt - atFast!.receivedAt;
    });
    expect(Math.min(...leads), `fast endpoint ahead of the slow one's answers by ${leads.join(', ')} ms`).toBeGreaterThan(1_000);
    await pipe.settled();
    for (const r of [slow.receiver, fast.receiver]) {
      const events = verifiedEvents(r.received);
      expect(events.map((e) => e.data.object.order_no).sort()).toEqual(orders.map((o) => o.order_no).sort());
    }
    const slowLog = await deliveryLog(api, token, slow.endpoint.id);
    expect(slowLog.map((d) => [d.attempt, d.status])).toEqual([
      [1, 204],
      [1, 204],
      [1, 204],
    ]);
    expect(slowLog.every((d) => d.duration_ms >= 2_900)).toBe(true);
  });
});
