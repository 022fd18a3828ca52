import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { orderBody, outboxEvents } from '../orders/helpers.ts';
import { eventually, receiverWithEndpoint, useDeliveryPipeline, verifiedEvents } from './support/pipeline.ts';

/**
 * Volume: 1,000 orders created by 20 concurrent clients of one merchant → exactly 1,000
 * order.created deliveries, 1,000 distinct webhook-ids (the events' ids), every one verified.
 * The run time is printed (measured, not asserted).
 */
const ORDERS = 1_000;
const CLIENTS = 20;
const pipe = useDeliveryPipeline('wh-load');
const api = useApi();

describe('volume', () => {
  it(`${ORDERS} orders from ${CLIENTS} concurrent clients: exactly ${ORDERS} order.created deliveries with distinct ids, all verified`, {
    timeout: 240_000,
  }, async () => {
    const { merchantId, token } = await newMerchant();
    const { receiver } = await receiverWithEndpoint(pipe, api, token, { events: ['order.created'] });

    const started = Date.now();
    const orderNos: string[] = [];
    const failures: string[] = [];
    let retried = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < ORDERS) {
          next++;
          // One customer per order: the same customer in 20 concurrent transactions is the hot-item
          // case of test/correctness (409s to retry), not what this test measures.
          const body = orderBody({
            status: 'pending',
            customer_email: `load-${next}-${Math.random().toString(36).slice(2, 8)}@example.com`,
          });
          // As a client would: a 503 (the 10 s deadline, on a loaded machine) is sent again after its
          // Retry-After under the same idempotency key, so a retry never creates a second order.
          const key = `load-${next}-${Math.random().toString(36).slice(2)}`;
          let r = await api.post('/orders', token, body, { 'x-idempotency-key': key });
          for (let attempt = 1; r.status === 503 && attempt <= 3; attempt++) {
            retried++;
            await new Promise((done) => setTimeout(done, Number(r.headers.get('retry-after') ?? 1) * 1000));
            r = await api.post('/orders', token, body, { 'x-idempotency-key': key });
          }
          if (r.status === 201) orderNos.push(body.order_no);
          else failures.push(`${r.status} ${JSON.stringify(r.body)}`);
        }
      }),
    );
    const createdMs = Date.now() - started;
    if (retried) console.info(`[delivery-load] ${retried} orders sent again after a 503`);
    expect(failures).toEqual([]);
    expect(orderNos).toHaveLength(ORDERS);

    await eventually(() => receiver.received.length >= ORDERS, 180_000, `${ORDERS} deliveries`);
    const deliveredMs = Date.now() - started;
    await pipe.settled(60_000);

    const events = verifiedEvents(receiver.received);
    expect(receiver.received).toHaveLength(ORDERS);
    expect(events.every((e) => e.type === 'order.created')).toBe(true);
    const ids = new Set(events.map((e) => e.id));
    expect(ids.size).toBe(ORDERS);
    expect([...ids].sort()).toEqual((await outboxEvents(merchantId)).map((e) => e.id as string).sort());
    expect(events.map((e) => e.data.object.order_no).sort()).toEqual([...orderNos].sort());
    console.log(
      `webhook volume: ${ORDERS} orders by ${CLIENTS} clients created in ${createdMs} ms, all delivered after ${deliveredMs} ms, drained after ${Date.now() - started} ms`,
    );
  });
});
