import Decimal from 'decimal.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  contributions,
  movementsOf,
  setAt,
  standingAt,
  standingFromSteps,
  standingSteps,
  type Flag,
  type Timeline,
} from '#lib/metrics/timeline';

const CCY = 'TWD';

/** A customer's standing (MRR and latest subscription status) and its movements, from the timeline alone. */

const tl = (lines: Record<string, [string, string, Flag][]>): Timeline => lines;

describe('standing: MRR and latest subscription status at an instant', () => {
  const history = tl({
    S1: [
      ['2026-01-10T00:00:00Z', '100', 'a'],
      ['2026-03-01T00:00:00Z', '0', 'c'],
    ],
    S2: [
      ['2026-04-01T00:00:00Z', '50', 'a'],
      ['2026-05-01T00:00:00Z', '50', 'p'],
    ],
    'OA-1': [
      ['2026-02-15T00:00:00Z', '10.5000000000', 'o'],
      ['2026-03-15T00:00:00Z', '0', 'o'],
    ],
  });

  it('sums every line at that instant; the status is the subscription started last', () => {
    expect(standingAt(history, CCY, '2026-01-01T00:00:00Z')).toEqual({ mrr: '0', subscription_status: null });
    expect(standingAt(history, CCY, '2026-01-10T00:00:00Z')).toEqual({ mrr: '100', subscription_status: 'active' });
    expect(standingAt(history, CCY, '2026-02-20T00:00:00Z')).toEqual({ mrr: '110.5', subscription_status: 'active' });
    expect(standingAt(history, CCY, '2026-03-02T00:00:00Z')).toEqual({ mrr: '10.5', subscription_status: 'cancelled' });
    expect(standingAt(history, CCY, '2026-04-02T00:00:00Z')).toEqual({ mrr: '50', subscription_status: 'active' });
    expect(standingAt(history, CCY, '2026-06-01T00:00:00Z')).toEqual({ mrr: '50', subscription_status: 'paused' });
  });

  it('stored steps answer every later instant the same way, and say when they run out', () => {
    const { steps, complete } = standingSteps(history, CCY, '2026-02-01T00:00:00Z');
    expect(complete).toBe(true);
    expect(steps.map((s) => s[0])).toEqual([
      '2026-02-01T00:00:00Z',
      '2026-02-15T00:00:00Z',
      '2026-03-01T00:00:00Z',
      '2026-03-15T00:00:00Z',
      '2026-04-01T00:00:00Z',
      '2026-05-01T00:00:00Z',
    ]);
    expect(standingFromSteps(steps, complete, '2026-01-31T00:00:00Z')).toBeNull(); // before the write
    const cut = standingSteps(history, CCY, '2026-02-01T00:00:00Z', 3);
    expect(cut.complete).toBe(false);
    expect(standingFromSteps(cut.steps, false, '2026-02-20T00:00:00Z')).toEqual({ mrr: '110.5', subscription_status: 'active' });
    expect(standingFromSteps(cut.steps, false, '2026-03-02T00:00:00Z')).toBeNull(); // past what the cut steps know
  });

  it('property: steps from any instant agree with the timeline at every later instant', () => {
    const at = fc.integer({ min: 0, max: 40 }).map((d) => new Date(Date.UTC(2026, 0, 1 + d)).toISOString().replace('.000', ''));
    const point = fc.tuple(at, fc.constantFrom('0', '10', '25.5', '3.3333333333'), fc.constantFrom<Flag>('a', 'p', 'c'));
    const line = fc.tuple(fc.constantFrom('S1', 'S2', 'S3', 'OX', 'I'), fc.array(point, { minLength: 1, maxLength: 5 }));
    fc.assert(
      fc.property(fc.array(line, { maxLength: 5 }), at, at, fc.integer({ min: 1, max: 6 }), (lines, from, probe, limit) => {
        let t: Timeline = {};
        for (const [name, pts] of lines)
          for (const [when, amount, flag] of pts) t = setAt(t, name, when, amount, name.startsWith('S') ? flag : 'o');
        const { steps, complete } = standingSteps(t, CCY, from, limit);
        const stored = standingFromSteps(steps, complete, probe);
        if (probe < from) expect(stored).toBeNull();
        else if (stored) expect(stored).toEqual(standingAt(t, CCY, probe));
        else expect(complete).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});

describe("a customer's movements", () => {
  it('classifies each change of the total as the aggregates do, naming the line that moved most', () => {
    const t = tl({
      S1: [
        ['2026-01-10T00:00:00Z', '100', 'a'],
        ['2026-02-10T00:00:00Z', '150', 'a'],
        ['2026-03-10T00:00:00Z', '0', 'c'],
      ],
      'O#7': [
        ['2026-02-10T00:00:00Z', '5', 'o'],
        ['2026-03-10T00:00:00Z', '0', 'o'],
      ],
      S2: [['2026-05-01T00:00:00Z', '80', 'a']],
    });
    expect(
      movementsOf(t, CCY).map((m) => [m.at.slice(0, 10), m.kind, m.amount.toFixed(), m.before.toFixed(), m.after.toFixed(), m.line]),
    ).toEqual([
      ['2026-01-10', 'new', '100', '0', '100', 'S1'],
      ['2026-02-10', 'expansion', '55', '100', '155', 'S1'],
      ['2026-03-10', 'churn', '-155', '155', '0', 'S1'],
      ['2026-05-01', 'reactivation', '80', '0', '80', 'S2'],
    ]);
  });

  it('property: per month, the movements add up to what the aggregates count', () => {
    const at = fc.integer({ min: 0, max: 120 }).map((d) => new Date(Date.UTC(2026, 0, 1 + d)).toISOString().replace('.000', ''));
    const point = fc.tuple(at, fc.constantFrom('0', '10', '25.5', '3.3333333333'), fc.constantFrom<Flag>('a', 'p', 'c'));
    const line = fc.tuple(fc.constantFrom('S1', 'S2', 'OX', 'I'), fc.array(point, { minLength: 1, maxLength: 6 }));
    fc.assert(
      fc.property(fc.array(line, { maxLength: 5 }), (lines) => {
        let t: Timeline = {};
        for (const [name, pts] of lines)
          for (const [when, amount, flag] of pts) t = setAt(t, name, when, amount, name.startsWith('S') ? flag : 'o');
        const byMonth = new Map<string, Decimal>();
        for (const m of movementsOf(t, CCY)) {
          const k = `M#${m.at.slice(0, 7)}|${m.kind}`;
          byMonth.set(k, (byMonth.get(k) ?? new Decimal(0)).plus(m.amount));
        }
        const counted = new Map<string, Decimal>();
        for (const [item, attrs] of contributions(t, CCY))
          if (item.startsWith('M#'))
            for (const [attr, v] of attrs)
              if (['new', 'expansion', 'contraction', 'churn', 'reactivation'].includes(attr)) counted.set(`${item}|${attr}`, v);
        const nonZero = (m: Map<string, Decimal>) =>
          [...m]
            .filter(([, v]) => !v.isZero())
            .map(([k, v]) => [k, v.toFixed()])
            .sort();
        expect(nonZero(byMonth)).toEqual(nonZero(counted));
      }),
      { numRuns: 300 },
    );
  });
});
