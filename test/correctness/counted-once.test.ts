import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { allocateIds } from '#lib/db/sequences';
import { newMerchant, useApi } from '../support/api.ts';
import { lostAnswer, type Installed, type LostAnswerStats } from '../support/faults.ts';

/**
 * A counter moves once per logical update: when the answer to a counter update is lost after it
 * landed, the SDK does not send it again (it would count twice): an id allocation answers 503
 * instead, while the rate counter reads the window back and lets the request go.
 * Idempotent writes are still re-sent, which shows the fault sits under the SDK's re-send.
 */
const api = useApi();
let fault: Installed<LostAnswerStats> | undefined;
afterEach(() => fault?.uninstall());

const read = async (key: { pk: string; sk: string }) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;
const adds = (input: Record<string, any>) => /\bADD\b/.test(input.UpdateExpression ?? '');

describe('counters are never applied twice by a re-send', () => {
  it('a SET whose answer is lost is re-sent and succeeds; an ADD is sent once and fails as unanswered', async () => {
    const key = { pk: `TEST#counted-once#${Math.random()}`, sk: 'C' };
    fault = lostAnswer('UpdateItem', { when: (i) => !adds(i) });
    await db().send(
      new UpdateCommand({ TableName: tableName(), Key: key, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': 1 } }),
    );
    expect(fault.stats).toEqual({ lost: 1, sent: 2 });
    fault.uninstall();

    fault = lostAnswer('UpdateItem', { when: adds });
    await expect(
      db().send(
        new UpdateCommand({ TableName: tableName(), Key: key, UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': 1 } }),
      ),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(fault.stats).toEqual({ lost: 1, sent: 1 });
    expect((await read(key))?.n).toBe(1);
  });

  it('an id allocation whose answer is lost leaves one gap, not two', async () => {
    const { merchantId } = await newMerchant();
    await allocateIds(merchantId, { order: 1 });
    fault = lostAnswer('UpdateItem', { when: adds });
    await expect(allocateIds(merchantId, { order: 5 })).rejects.toMatchObject({ name: 'TimeoutError' });
    fault.uninstall();
    expect((await read(keys.sequences(merchantId)))?.order).toBe(6);
    expect(await allocateIds(merchantId, { order: 1 })).toEqual({ order: 7 });
  });

  it("the merchant's rate counter: a lost answer refuses nothing, and the request is counted once", async () => {
    const { token } = await newMerchant();
    const first = await api.get('/customers', token);
    expect(first.status).toBe(200);
    const limit = Number(first.headers.get('x-ratelimit-limit'));
    expect(Number(first.headers.get('x-ratelimit-remaining'))).toBe(limit - 1);
    fault = lostAnswer('UpdateItem', { when: (i) => adds(i) && String(i.Key?.pk?.S ?? i.Key?.pk).startsWith('RATE#M#') });
    const lost = await api.get('/customers', token);
    expect(lost.status).toBe(200);
    // The count landed once (never sent again); the window's count read back says so.
    expect(Number(lost.headers.get('x-ratelimit-remaining'))).toBe(limit - 2);
    expect(fault.stats).toEqual({ lost: 1, sent: 1 });
    fault.uninstall();
    // The lost request was counted once: the next one is the third.
    const next = await api.get('/customers', token);
    expect(Number(next.headers.get('x-ratelimit-remaining'))).toBe(limit - 3);
  });

  it('a batch whose transaction landed but whose answers were lost is sent again as it is: applied once, every item answered as it went', async () => {
    const { token } = await newMerchant();
    const orders = Array.from({ length: 3 }, (_, i) => ({
      order_no: `LOST-${i}`,
      amount: '10.50',
      customer_email: `lost${i}@example.com`,
      status: 'paid',
    }));
    // Every send the SDK makes of the first transaction lands and loses its answer (three of them).
    fault = lostAnswer('TransactWriteItems', { times: 3 });
    const res = await api.post('/orders/batch', token, { orders });
    expect(fault.stats.lost).toBe(3);
    expect(fault.stats.sent).toBe(4);
    fault.uninstall();
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ total: 3, created: 3, updated: 0, failed: 0 });
    // Stored once: the list, the day's figures and the activity log agree with the answer.
    expect((await api.get('/orders', token)).body.meta.total).toBe(3);
    expect((await api.get('/orders/stats', token)).body.data).toMatchObject({ today_count: 3 });
    const [entry] = (await api.get('/activity', token)).body.data;
    expect(entry).toMatchObject({ created: 3, updated: 0, failed: 0 });
    // A recorded-events batch without an idempotency key records each event once.
    const sub = await api.post('/subscriptions/batch', token, {
      subscriptions: [
        {
          external_id: 'lost-sub',
          customer_email: 'lost0@example.com',
          plan_name: 'Pro',
          mrr: '10',
          billing_cycle: 'monthly',
          started_at: '2026-01-01T00:00:00Z',
        },
      ],
    });
    expect(sub.body.data.created).toBe(1);
    fault = lostAnswer('TransactWriteItems', { times: 3 });
    const recorded = await api.post('/subscriptions/events/batch', token, {
      events: [
        {
          subscription_external_id: 'lost-sub',
          event_type: 'upgrade',
          old_amount: '10',
          new_amount: '20',
          occurred_at: '2026-02-01T00:00:00Z',
        },
      ],
    });
    fault.uninstall();
    expect(recorded.body.data, JSON.stringify(recorded.body.data)).toMatchObject({ created: 1, failed: 0 });
    const events = (await api.get('/subscriptions/events?event_type=upgrade', token)).body.data;
    expect(events).toHaveLength(1);
  });
});
