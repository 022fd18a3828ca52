import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { allocateIds } from '#lib/db/sequences';
import { newMerchant, useApi } from '../support/api.ts';
import { lostAnswer, type Installed, type LostAnswerStats } from '../support/faults.ts';

/**
 * A counter moves once per logical update: when the answer to a counter update is lost after it
 * landed, the SDK does not send it again (it would count twice); the request answers 503 instead.
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

  it("the merchant's rate counter: a lost answer is a 503 with Retry-After, and the request is counted once", async () => {
    const { token } = await newMerchant();
    const first = await api.get('/customers', token);
    expect(first.status).toBe(200);
    const limit = Number(first.headers.get('x-ratelimit-limit'));
    expect(Number(first.headers.get('x-ratelimit-remaining'))).toBe(limit - 1);
    fault = lostAnswer('UpdateItem', { when: (i) => adds(i) && String(i.Key?.pk?.S ?? i.Key?.pk).startsWith('RATE#M#') });
    const lost = await api.get('/customers', token);
    expect(lost.status).toBe(503);
    expect(Number(lost.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(fault.stats).toEqual({ lost: 1, sent: 1 });
    fault.uninstall();
    // The lost request was counted once: the next one is the third.
    const next = await api.get('/customers', token);
    expect(Number(next.headers.get('x-ratelimit-remaining'))).toBe(limit - 3);
  });
});
