import Decimal from 'decimal.js';
import { describe, expect, it } from 'vitest';
import { WriteSet } from '#lib/db/writes';
import { passPacer } from '#lib/metrics/restate';

describe("a pass's pace", () => {
  it('books turns one after another at the given write units a second; unpaced, every turn is now', () => {
    let now = 1_000;
    const paced = passPacer(100, () => now);
    // 50 WCU at 100 WCU/s: half a second each.
    expect([paced.book(50), paced.book(50), paced.book(20)]).toEqual([1_000, 1_500, 2_000]);
    // Time passing past the booked turns: the next starts now.
    now = 5_000;
    expect(paced.book(10)).toBe(5_000);
    expect(paced.book(10)).toBe(5_100);
    const unpaced = passPacer(0, () => now);
    expect([unpaced.book(1_000), unpaced.book(1_000)]).toEqual([5_000, 5_000]);
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
