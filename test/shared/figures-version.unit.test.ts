import Decimal from 'decimal.js';
import { describe, expect, it } from 'vitest';
import { keys, METRIC_SHARDS } from '#lib/db/keys';
import { WriteSet } from '#lib/db/writes';

/**
 * Every transaction that writes items of the aggregates adds 1 to its shard's figures version, in
 * its lane (lib/db/writes.ts): what lets a metrics read see each write whole. In memory: the
 * actions a WriteSet would send.
 */
const M = 'mer_unit';
const versionsOf = (ws: WriteSet) =>
  ws
    .toTransactItems('t')
    .flatMap((a) => (a.Update && String(a.Update.Key?.pk).includes('#FIGURES#') ? [String(a.Update.Key?.pk)] : []))
    .sort();

/** The lane of a figures-version key. */
const laneOf = (pk: string) => Number(pk.slice(-3));

describe('the figures version a transaction adds to', () => {
  it("a live write: its own counter shard's lane (shard 13 writes metric shard 5)", () => {
    const ws = new WriteSet(13);
    ws.update('metrics', keys.metricsDay(M, '2026-11-20', ws.shard)).add('n', new Decimal(10));
    ws.update('metrics', keys.metricsMonth(M, '2026-11', ws.shard, { dimension: 'plan', value: 'Pro' })).add('n', new Decimal(10));
    ws.update('metrics', keys.churnReason(M, 'D', '2026-11-20', 'price', ws.shard)).add('c', new Decimal(1));
    expect(versionsOf(ws)).toEqual([keys.figuresVersion(M, 13).pk]);
    expect(ws.toTransactItems('t').find((a) => a.Update?.Key?.pk === keys.figuresVersion(M, 13).pk)?.Update?.UpdateExpression).toMatch(
      /^ADD /,
    );
  });

  it("the applier (lane 0) applying moves of metric shard 3: one of that shard's lanes, spread over them by transaction", () => {
    const lanes = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const ws = new WriteSet(0);
      ws.update('moves', keys.metricsDay(M, '2026-11-20', 3)).add('n', new Decimal(1));
      ws.delete('pending-moves', { pk: keys.metricsDay(M, '2026-11-20', 3).pk, sk: 'M#0000-00#P#g#000' });
      const [pk, ...more] = versionsOf(ws);
      expect(more).toEqual([]);
      // Fixed for the transaction: the actions sent again name the same lane.
      expect(versionsOf(ws)).toEqual([pk]);
      lanes.add(laneOf(pk));
    }
    expect([...lanes].sort((a, b) => a - b)).toEqual([3, 11, 19, 27, 35, 43]);
  });

  it("a pending-moves item of churn by reason names no shard: the transaction's, unless its moves name theirs", () => {
    const ws = new WriteSet(20);
    ws.put('pending-moves', { pk: `M#${M}#CHURN_REASONS`, sk: 'M#0000-00#P#g#000', moves: '[]' });
    expect(versionsOf(ws)).toEqual([keys.figuresVersion(M, 20).pk]);
    const applier = new WriteSet(0);
    applier.update('moves', keys.churnReason(M, 'M', '2026-11', 'price', 6)).add('c', new Decimal(1));
    applier.delete('pending-moves', { pk: `M#${M}#CHURN_REASONS`, sk: 'M#0000-00#P#g#000' });
    const [pk, ...more] = versionsOf(applier);
    expect(more).toEqual([]);
    expect(laneOf(pk) % METRIC_SHARDS).toBe(6);
  });

  it('no aggregate written, no version: a check of one, an update that adds nothing, other items', () => {
    const ws = new WriteSet(9);
    ws.check('c', keys.metricsDay(M, '2026-11-20', 9), { expression: 'attribute_exists(pk)' });
    ws.update('metrics', keys.metricsMonth(M, '2026-11', 9));
    ws.update('totals', keys.totals(M, 'ORDERS', 9)).add('n', new Decimal(1));
    expect(versionsOf(ws)).toEqual([]);
  });
});
