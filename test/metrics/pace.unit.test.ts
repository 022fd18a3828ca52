import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { db } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { WriteSet } from '#lib/db/writes';
import { pacer, tableShares, type TakeShare } from '#lib/metrics/pace';

/** The ledger in memory: what the table's conditional ADD does. */
const memoryLedger = () => {
  const used = new Map<number, number>();
  const take: TakeShare = async (second, wcu, limit) => {
    const before = used.get(second) ?? 0;
    const got = before + wcu <= limit ? wcu : Math.max(0, Math.floor(limit - before));
    used.set(second, before + got);
    return got;
  };
  return { used, take };
};

describe("the pending-moves applier's pace (one metric shard of a merchant)", () => {
  it('books turns within the second while it has room, then from the next seconds; unpaced, every turn is now', async () => {
    let now = 1_000;
    const ledger = memoryLedger();
    const paced = pacer(100, ledger.take, () => now);
    // 50 + 40 fit in second 1; 20 more spill into second 2, sent at its start.
    expect([await paced.book(50), await paced.book(40), await paced.book(20)]).toEqual([1_000, 1_000, 2_000]);
    // A transaction above a whole second's allowance takes whole seconds, sent at the last one's start.
    expect(await paced.book(250)).toBe(4_000);
    expect([...ledger.used.values()].every((u) => u <= 100)).toBe(true);
    // Time passing past the booked seconds: the next turn is now again.
    now = 9_500;
    expect(await paced.book(10)).toBe(9_500);
    const unpaced = pacer(0, ledger.take, () => now);
    expect([await unpaced.book(1_000), await unpaced.book(1_000)]).toEqual([9_500, 9_500]);
  });

  it("two invocations on one shard share the second's allowance: together never above it, and nothing lost", async () => {
    const now = 0;
    const ledger = memoryLedger();
    const a = pacer(100, ledger.take, () => now);
    const b = pacer(100, ledger.take, () => now);
    const booked: number[] = [];
    await Promise.all(
      [a, b].map(async (p) => {
        for (let i = 0; i < 20; i++) booked.push(await p.book(7 + (i % 5)));
      }),
    );
    const total = [...ledger.used.values()].reduce((x, y) => x + y, 0);
    // Two invocations booking 360 WCU at 100 a second: no second above 100, and at least 4 seconds used.
    expect(Math.max(...ledger.used.values())).toBeLessThanOrEqual(100);
    expect(total).toBeGreaterThanOrEqual(360);
    expect(Math.max(...booked)).toBeGreaterThanOrEqual(3_000);
  });

  it('a share taken just before a second ends still counts for its transaction; only what is left over lapses', async () => {
    let now = 1_990;
    const ledger = memoryLedger();
    const take: TakeShare = async (second, wcu, limit) => {
      const got = await ledger.take(second, wcu, limit);
      now += 20; // the second ends while the share is taken
      return got;
    };
    const paced = pacer(1, take, () => now);
    // 2 units at 1 a second: second 1's unit and second 2's, sent then (2.03 s), never a third second.
    expect(await paced.book(2, 2_500)).toBe(2_030);
    expect([...ledger.used.entries()]).toEqual([
      [1, 1],
      [2, 1],
    ]);
    // Booking stops at the first second past the limit given: no ledger write for it.
    expect(await paced.book(5, 3_500)).toBe(4_000);
    expect(ledger.used.has(4)).toBe(false);
  });

  it("prices a transaction's busiest partition key: two units per action, a put by its size in KB", () => {
    const ws = new WriteSet(0);
    ws.update('a', { pk: 'P1', sk: 'x' }).add('n', new Decimal(1));
    ws.update('a', { pk: 'P1', sk: 'y' }).add('n', new Decimal(1));
    ws.put('b', { pk: 'P2', sk: 'z', blob: 'x'.repeat(3_000) });
    // P1: 2 updates × 2 = 4; P2: a put of about 3 KB × 2 = 6.
    expect(ws.hottestKeyWcu).toBe(6);
    expect(new WriteSet(0).hottestKeyWcu).toBe(0);
  });
});

describe('the ledger in the table (tableShares)', () => {
  afterEach(() => vi.restoreAllMocks());

  /**
   * DynamoDB's conditional ADD on the second's item, in memory: the client's `send` answers as the
   * table would (a refused condition gives the item as it was, in the low-level form).
   */
  const table = () => {
    const used = new Map<string, number>();
    const sent: UpdateCommand['input'][] = [];
    vi.spyOn(db(), 'send').mockImplementation((async (command: UpdateCommand) => {
      const input = command.input;
      sent.push(input);
      const id = `${input.Key!.pk}|${input.Key!.sk}`;
      const before = used.get(id);
      const values = input.ExpressionAttributeValues!;
      if (before !== undefined && before > values[':room'])
        throw new ConditionalCheckFailedException({
          message: 'The conditional request failed',
          $metadata: {},
          Item: { used: { N: String(before) } },
        });
      used.set(id, (before ?? 0) + values[':wcu']);
      return {};
    }) as never);
    return { used, sent };
  };
  const ledger = (second: number) => keys.applierPace('mer_pace', 3, second);

  it("adds to the second's item of the key given, under the limit, with a TTL an hour after the second", async () => {
    const { used, sent } = table();
    const take = tableShares(ledger);
    expect([await take(100, 30, 150), await take(100, 60, 150)]).toEqual([30, 60]);
    expect(sent[0]).toMatchObject({
      Key: ledger(100),
      UpdateExpression: 'ADD #used :wcu SET #ttl = if_not_exists(#ttl, :ttl)',
      ConditionExpression: 'attribute_not_exists(#used) OR #used <= :room',
      ExpressionAttributeValues: { ':wcu': 30, ':room': 120, ':ttl': 3_700 },
    });
    expect(ledger(100)).toEqual({ pk: 'M#mer_pace#PACE', sk: 'A#03#100' });
    expect([...used.values()]).toEqual([90]);
  });

  it('a second with less room than asked gives what it has left; a spent one gives nothing; the next second is whole again', async () => {
    const { used, sent } = table();
    const take = tableShares(ledger);
    await take(7, 140, 150);
    // 20 asked, 10 left: the refused ADD reads 140, and the 10 are taken rather than wasted.
    expect(await take(7, 20, 150)).toBe(10);
    expect(used.get(`${ledger(7).pk}|${ledger(7).sk}`)).toBe(150);
    const before = sent.length;
    expect(await take(7, 5, 150)).toBe(0);
    // Spent: one refused ADD, no second attempt.
    expect(sent.length - before).toBe(1);
    expect(await take(8, 150, 150)).toBe(150);
  });

  it('with a pacer: the booked write units never pass the limit in any second', async () => {
    const { used } = table();
    let now = 50_000;
    const paced = pacer(150, tableShares(ledger), () => now);
    const at: number[] = [];
    for (let i = 0; i < 12; i++) {
      at.push(await paced.book(40));
      now = Math.max(now, at[at.length - 1]);
    }
    expect(Math.max(...used.values())).toBeLessThanOrEqual(150);
    expect([...used.values()].reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(480);
    // 480 WCU at 150 a second: the last transaction sent in the fourth second.
    expect(Math.floor(Math.max(...at) / 1_000)).toBe(53);
  });
});
