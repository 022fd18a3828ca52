import Decimal from 'decimal.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { convertedLtv, ltvPartOf, otherLtvCurrencies, type LtvPart } from '#lib/customers/model';
import { localDateOfIso } from '#lib/shared/zone';

/** The parts a list of payments leaves (what the order writes ADD), keyed like the stored items. */
const partsOf = (payments: [currency: string, paidAt: string, amount: string][]): LtvPart[] => {
  const parts = new Map<string, LtvPart>();
  for (const [currency, paidAt, amount] of payments) {
    const { year, attr } = ltvPartOf(paidAt);
    const part = parts.get(`${currency}#${year}`) ?? { currency, year };
    part[attr] = new Decimal(String(part[attr] ?? 0)).plus(amount).toString();
    parts.set(`${currency}#${year}`, part);
  }
  return [...parts.values()];
};

const ZONES = [
  'UTC',
  'Asia/Taipei',
  'Asia/Kathmandu',
  'Pacific/Kiritimati',
  'Pacific/Pago_Pago',
  'America/New_York',
  'Australia/Lord_Howe',
];

describe("a customer's ltv in the reporting currency", () => {
  it('keeps a payment by month inside its UTC month, by quarter-hour near its ends', () => {
    expect(ltvPartOf('2026-03-15T10:20:30Z')).toEqual({ year: '2026', attr: 'm03' });
    expect(ltvPartOf('2026-03-31T23:59:59Z')).toEqual({ year: '2026', attr: 'q03312345' });
    expect(ltvPartOf('2026-04-01T14:59:59Z')).toEqual({ year: '2026', attr: 'q04011445' });
    expect(ltvPartOf('2026-04-01T15:00:00Z')).toEqual({ year: '2026', attr: 'm04' });
    expect(ltvPartOf('2026-12-31T09:00:00Z')).toEqual({ year: '2026', attr: 'q12310900' });
  });

  it('converts each payment at the rate of its month in the zone as it is at read time, exactly, leaving months without a rate out', () => {
    const item = { ltv_TWD: 1000, ltv_USD: 40, ltv_JPY: 500 };
    expect(otherLtvCurrencies(item, 'TWD')).toEqual(['JPY', 'USD']);
    // 28 February 20:00 UTC is 1 March 04:00 in Taipei: February's rate in UTC, March's there.
    const parts = partsOf([
      ['USD', '2026-02-10T00:00:00Z', '10.05'],
      ['USD', '2026-02-28T20:00:00Z', '20'],
      ['USD', '2026-04-10T00:00:00Z', '9.95'],
      ['JPY', '2026-02-10T00:00:00Z', '500'],
    ]);
    const rates = new Map([
      [
        'USD',
        new Map([
          ['2026-02', '30.5'],
          ['2026-03', '31.555'],
        ]),
      ],
    ]);
    // UTC: 1000 + 30.05 × 30.5 = 1916.525 (April has no rate, JPY none at all).
    expect(convertedLtv(item, 'TWD', parts, rates, 'UTC').toFixed()).toBe('1916.525');
    // Taipei: 1000 + 10.05 × 30.5 + 20 × 31.555 = 1937.625.
    expect(convertedLtv(item, 'TWD', parts, rates, 'Asia/Taipei').toFixed()).toBe('1937.625');
  });

  it('finds, in every zone, the same month for a payment as its own time has there (property)', () => {
    fc.assert(
      fc.property(
        // From 1980: every zone's offset since is a whole quarter-hour (Pacific/Kiritimati was -10:40 until 1979).
        fc.integer({ min: Date.parse('1980-01-01T00:00:00Z'), max: Date.parse('2099-12-31T00:00:00Z') }),
        fc.constantFrom(...ZONES),
        (ms, zone) => {
          const paidAt = `${new Date(ms).toISOString().slice(0, 19)}Z`;
          const month = localDateOfIso(paidAt, zone).slice(0, 7);
          // A rate of 1 for that month only: the payment counts in full if and only if its part is found in that month.
          const rates = new Map([['USD', new Map([[month, '1']])]]);
          expect(convertedLtv({}, 'TWD', partsOf([['USD', paidAt, '7']]), rates, zone).toFixed()).toBe('7');
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('near month ends too: every second within 16 hours of a boundary (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1980, max: 2098 }),
        fc.integer({ min: 0, max: 11 }),
        fc.integer({ min: -16 * 3_600, max: 16 * 3_600 }),
        fc.constantFrom(...ZONES),
        (year, month, offset, zone) => {
          const paidAt = `${new Date(Date.UTC(year, month, 1) + offset * 1_000).toISOString().slice(0, 19)}Z`;
          const local = localDateOfIso(paidAt, zone).slice(0, 7);
          const rates = new Map([['USD', new Map([[local, '1']])]]);
          expect(convertedLtv({}, 'TWD', partsOf([['USD', paidAt, '7']]), rates, zone).toFixed()).toBe('7');
        },
      ),
      { numRuns: 3_000 },
    );
  });
});
