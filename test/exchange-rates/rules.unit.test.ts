import { describe, expect, it } from 'vitest';
import { decide, presentRates } from '#lib/exchange-rates/rules';

const CCY = 'TWD';

describe('a rate table (PUT /exchange-rates/{currency})', () => {
  const state = { currency: 'USD', rates: { '2026-01': '31.5', '2026-02': '32' }, version: 3 };
  it('merges by month: named months change, null removes one, the others stay; rates in plain form', () => {
    const plan = decide(
      state,
      [
        { month: '2026-02', rate: null },
        { month: '2026-03', rate: '30.50' },
      ],
      CCY,
    );
    expect(plan.changed).toBe(true);
    expect(presentRates(plan.table)).toEqual({
      currency: 'USD',
      rates: [
        { month: '2026-01', rate: '31.5' },
        { month: '2026-03', rate: '30.5' },
      ],
    });
    expect(decide(state, [{ month: '2026-01', rate: '31.50' }], CCY).changed).toBe(false);
  });

  it('refuses the reporting currency', () => {
    expect(() => decide({ currency: CCY, rates: {}, version: null }, [{ month: '2026-01', rate: '1' }], CCY)).toThrow(
      expect.objectContaining({ fields: { currency: ['The currency field must not be the reporting currency (TWD): it needs no rate.'] } }),
    );
  });
});
