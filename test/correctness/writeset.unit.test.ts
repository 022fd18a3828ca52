import Decimal from 'decimal.js';
import { describe, expect, it } from 'vitest';
import { mergeConditions, WriteSet } from '#lib/db/writes';

describe('WriteSet', () => {
  it('gives each merged condition its own placeholder namespace', () => {
    const ws = new WriteSet(0);
    ws.update('a', { pk: 'P', sk: 'S' })
      .when({ expression: '#n = :v', names: { '#n': 'email' }, values: { ':v': 'a@example.com' } })
      .when({ expression: '#n = :v', names: { '#n': 'external_id' }, values: { ':v': 'ext-1' } })
      .set('name', 'x');
    const [action] = ws.toTransactItems('t');
    const u = action.Update!;
    expect(u.ConditionExpression).toBe('(#c0_n = :c0_v) AND (#c1_n = :c1_v)');
    expect(u.ExpressionAttributeNames).toMatchObject({ '#c0_n': 'email', '#c1_n': 'external_id' });
    expect(u.ExpressionAttributeValues).toMatchObject({ ':c0_v': 'a@example.com', ':c1_v': 'ext-1' });
    // The update's own placeholders never collide with the conditions'.
    expect(Object.keys(u.ExpressionAttributeValues!).filter((k) => k.startsWith(':u'))).toHaveLength(1);
  });

  it('leaves placeholders a condition does not own alone and renames only whole tokens', () => {
    const merged = mergeConditions([
      { expression: ':a < :ab AND attribute_exists(pk)', values: { ':a': 1, ':ab': 2 } },
      { expression: ':a = :a', values: { ':a': 3 } },
    ]);
    expect(merged.ConditionExpression).toBe('(:c0_a < :c0_ab AND attribute_exists(pk)) AND (:c1_a = :c1_a)');
    expect(merged.ExpressionAttributeValues).toEqual({ ':c0_a': 1, ':c0_ab': 2, ':c1_a': 3 });
  });

  it('refuses ADD and SET (or REMOVE) of one attribute in one update', () => {
    const ws = new WriteSet(0);
    ws.update('a', { pk: 'P', sk: 'S' }).add('count', new Decimal(1));
    expect(() => ws.update('b', { pk: 'P', sk: 'S' }).set('count', 5)).toThrow(/count is both ADD and SET/);
    expect(() => ws.update('b', { pk: 'P', sk: 'S' }).remove('count')).toThrow(/count is both ADD and REMOVE/);
    ws.update('c', { pk: 'P', sk: 'S' }).set('name', 'x');
    expect(() => ws.update('d', { pk: 'P', sk: 'S' }).add('name', new Decimal(1))).toThrow(/name is both SET and ADD/);
    expect(() => ws.update('d', { pk: 'P', sk: 'S' }).set('name', 'y')).toThrow(/set to two different values/);
    // The same value twice, and ADDs from two contributors, merge.
    ws.update('e', { pk: 'P', sk: 'S' }).set('name', 'x').add('count', new Decimal(2));
    const u = ws.toTransactItems('t')[0].Update!;
    expect(Object.values(u.ExpressionAttributeValues!).map(String)).toContain('3');
  });

  it('counts the actions it will send (empty updates send none) and keeps one shard per transaction', () => {
    const ws = new WriteSet(7);
    ws.update('noop', { pk: 'P', sk: 'A' }).add('n', new Decimal(0));
    ws.put('p', { pk: 'P', sk: 'B' });
    expect(ws.size).toBe(2);
    expect(ws.actions).toBe(1);
    expect(ws.shard).toBe(7);
  });
});
