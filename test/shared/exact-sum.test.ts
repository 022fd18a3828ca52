import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Decimal, ExactSum } from '#lib/shared/money';

// Exact reference: Decimal with enough precision for every digit of these sums.
const Exact = Decimal.clone({ precision: 200 });

/** Stored numbers as DynamoDB gives them back: safe integers as numbers, decimals as strings. */
const stored = fc.oneof(
  fc.integer({ min: -1e9, max: 1e9 }),
  fc
    .tuple(fc.bigInt({ min: -(10n ** 23n), max: 10n ** 23n }), fc.integer({ min: 0, max: 12 }))
    .map(([n, scale]) => new Exact(n.toString()).div(new Exact(10).pow(scale)).toFixed()),
  fc.constantFrom('1e-7', '-2.5E+3', '0.00000000001', '-0', '123456789012.3456789012'),
  // Near the Number accumulators' limits (2^52 units): sums of these cross it and are carried exactly.
  fc.constantFrom('999999999999999.9999999999', '-999999999999999.9999999999', 9007199254740991, -4503599627370496, 4503599627370495),
);

describe('ExactSum', () => {
  it('adds and subtracts stored numbers exactly (to the last digit, any scale)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(stored, fc.constantFrom(1 as const, -1 as const)), { maxLength: 120 }), (values) => {
        const sum = new ExactSum();
        let expected = new Exact(0);
        for (const [v, sign] of values) {
          sum.add(v, sign);
          expected = sign === 1 ? expected.plus(String(v)) : expected.minus(String(v));
        }
        expect(new Exact(sum.value().toFixed()).eq(expected), `${sum.value().toFixed()} vs ${expected.toFixed()}`).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps every digit where a default-precision Decimal would round (23 significant digits)', () => {
    const sum = new ExactSum();
    sum.add('1234567890123.4567890123');
    sum.add('0.0000000001');
    expect(sum.value().toFixed()).toBe('1234567890123.4567890124');
  });
});
