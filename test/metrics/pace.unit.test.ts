import Decimal from 'decimal.js';
import { describe, expect, it } from 'vitest';
import { WriteSet } from '#lib/db/writes';
import { BUILD_WCU_PER_KEY, memoryShares, passPacer, type TakeShare } from '#lib/metrics/pace';

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

describe("a pass's pace", () => {
  it('books turns within the second while it has room, then from the next seconds; unpaced, every turn is now', async () => {
    let now = 1_000;
    const ledger = memoryLedger();
    const paced = passPacer(100, ledger.take, () => now);
    // 50 + 40 fit in second 1; 20 more spill into second 2, sent at its start.
    expect([await paced.book(50), await paced.book(40), await paced.book(20)]).toEqual([1_000, 1_000, 2_000]);
    // A transaction above a whole second's allowance takes whole seconds, sent at the last one's start.
    expect(await paced.book(250)).toBe(4_000);
    expect([...ledger.used.values()].every((u) => u <= 100)).toBe(true);
    // Time passing past the booked seconds: the next turn is now again.
    now = 9_500;
    expect(await paced.book(10)).toBe(9_500);
    const unpaced = passPacer(0, ledger.take, () => now);
    expect([await unpaced.book(1_000), await unpaced.book(1_000)]).toEqual([9_500, 9_500]);
  });

  it("two passes of one merchant share the second's allowance: together never above it, and nothing lost", async () => {
    const now = 0;
    const ledger = memoryLedger();
    const a = passPacer(100, ledger.take, () => now);
    const b = passPacer(100, ledger.take, () => now);
    const booked: number[] = [];
    await Promise.all(
      [a, b].map(async (p) => {
        for (let i = 0; i < 20; i++) booked.push(await p.book(7 + (i % 5)));
      }),
    );
    const total = [...ledger.used.values()].reduce((x, y) => x + y, 0);
    // Two passes booking 360 WCU at 100 a second: no second above 100, and at least 4 seconds used.
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
    const paced = passPacer(1, take, () => now);
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

  it("a generation build's key: requests of 25 items booked in memory, never above 400 WCU in a second (under half a partition's 1,000)", async () => {
    const now = 0;
    const paced = passPacer(BUILD_WCU_PER_KEY, memoryShares(), () => now);
    const perSecond = new Map<number, number>();
    // 2,000 items of 1 WCU (the whole's busiest key of a large merchant holds about that many).
    for (let i = 0; i < 80; i++) {
      const at = await paced.book(25);
      perSecond.set(Math.floor(at / 1_000), (perSecond.get(Math.floor(at / 1_000)) ?? 0) + 25);
    }
    expect(BUILD_WCU_PER_KEY).toBe(400);
    expect([...perSecond.values()]).toEqual([400, 400, 400, 400, 400]);
  });
});
