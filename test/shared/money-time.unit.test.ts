import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { amountCurrencyError } from '#lib/shared/currency';
import { ExactSum, parseAmount } from '#lib/shared/money';
import {
  DATE_DOC_PATTERN,
  DATE_OR_DATETIME_PATTERN,
  DATETIME_DOC_PATTERN,
  formatTimestamp,
  isoWeekStart,
  monthLastDay,
  parseDate,
  parseTimestamp,
  plusDays,
  plusMonths,
  timestampPlusMonths,
} from '#lib/shared/time';

/** Money and time on the wire (docs/api-conventions.md), in memory. */
describe('amounts', () => {
  it('takes a decimal string or number and keeps two fraction digits', () => {
    expect(parseAmount('1200', 'amount')).toEqual({ ok: true, value: '1200.00' });
    expect(parseAmount(' 19.9 ', 'amount')).toEqual({ ok: true, value: '19.90' });
    expect(parseAmount(0.1, 'amount')).toEqual({ ok: true, value: '0.10' });
  });

  it('refuses what is not exact money, with the message a client sees', () => {
    expect(parseAmount('1.234', 'amount')).toEqual({ ok: false, message: 'The amount field must have at most 2 decimal places.' });
    expect(parseAmount('-5', 'amount')).toEqual({ ok: false, message: 'The amount field must be at least 0.' });
    expect(parseAmount('12345678901234', 'amount')).toEqual({
      ok: false,
      message: 'The amount field must not have more than 13 integer digits.',
    });
    expect(parseAmount('1e3', 'amount')).toEqual({ ok: false, message: 'The amount field must be a number.' });
    expect(parseAmount(Number.NaN, 'amount')).toEqual({ ok: false, message: 'The amount field must be a number.' });
    expect(parseAmount(null, 'amount')).toEqual({ ok: false, message: 'The amount field must be a number.' });
  });

  it('refuses a fraction in a currency without a minor unit, in any case', () => {
    expect(amountCurrencyError('100.50', 'jpy', 'amount')).toBe('The amount field must be a whole number in JPY, which has no minor unit.');
    expect(amountCurrencyError('100.00', 'JPY')).toBeNull();
    expect(amountCurrencyError('100.50', 'TWD')).toBeNull();
  });

  it('sums exactly, whatever the order (no binary floating point)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -10_000_000, max: 10_000_000 }), { maxLength: 50 }), (cents) => {
        const forward = new ExactSum();
        const backward = new ExactSum();
        for (const c of cents) forward.add((c / 100).toFixed(2));
        for (const c of [...cents].reverse()) backward.add((c / 100).toFixed(2));
        const expected = (cents.reduce((a, b) => a + b, 0) / 100).toFixed(2);
        expect(forward.value().toFixed(2)).toBe(expected);
        expect(backward.value().toFixed(2)).toBe(expected);
      }),
      { numRuns: 200 },
    );
  });
});

describe('time', () => {
  it('reads ISO 8601 with Z or an offset, seconds optional, and writes UTC to the second', () => {
    expect(formatTimestamp(parseTimestamp('2026-11-24T08:00Z')!)).toBe('2026-11-24T08:00:00Z');
    expect(formatTimestamp(parseTimestamp('2026-11-24T08:00:00.999+08:00')!)).toBe('2026-11-24T00:00:00Z');
    expect(formatTimestamp(parseTimestamp('2026-11-24T23:30:00-0130')!)).toBe('2026-11-25T01:00:00Z');
  });

  it('refuses a missing zone, an impossible date or a space for T', () => {
    for (const bad of ['2026-11-24T08:00:00', '2026-02-30T00:00Z', '2026-11-24 08:00Z', '2026-11-24T24:00Z', '2026-11-24'])
      expect(parseTimestamp(bad), bad).toBeNull();
    expect(parseDate('2026-02-29')).toBeNull();
    expect(parseDate('2024-02-29')?.toISOString()).toBe('2024-02-29T00:00:00.000Z');
  });

  it('the OpenAPI patterns accept everything the server accepts', () => {
    const dateTime = new RegExp(DATETIME_DOC_PATTERN);
    const either = new RegExp(DATE_OR_DATETIME_PATTERN);
    const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
    const inputs = fc
      .tuple(
        fc.integer({ min: 1, max: 9999 }),
        two(13),
        two(32),
        fc.constantFrom('T', 't'),
        two(25),
        two(60),
        fc.option(two(60)),
        fc.constantFrom('Z', 'z', '+08:00', '-0130', '+14:00', ''),
      )
      .map(([y, mo, d, t, h, mi, s, zone]) => `${String(y).padStart(4, '0')}-${mo}-${d}${t}${h}:${mi}${s === null ? '' : `:${s}`}${zone}`);
    fc.assert(
      fc.property(inputs, (input) => {
        if (parseTimestamp(input)) {
          expect(dateTime.test(input), input).toBe(true);
          expect(either.test(input), input).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
    expect(either.test('2026-11-24')).toBe(true);
    expect(dateTime.test('2026-11-24')).toBe(false);
  });

  it('the OpenAPI patterns refuse impossible months, days and times, as the server does', () => {
    const dateTime = new RegExp(DATETIME_DOC_PATTERN);
    const date = new RegExp(DATE_DOC_PATTERN);
    const impossible = [
      '2026-13-45T00:00Z',
      '2026-13-01T00:00Z',
      '2026-00-01T00:00Z',
      '2026-01-00T00:00Z',
      '2026-01-32T00:00Z',
      '2026-02-29T00:00Z',
      '1900-02-29T00:00Z',
      '2026-02-30T00:00Z',
      '2026-04-31T00:00Z',
      '2026-06-31T00:00Z',
      '2026-09-31T00:00Z',
      '2026-11-31T00:00Z',
      '2026-01-01T24:00Z',
      '2026-01-01T23:60Z',
      '2026-01-01T23:59:60Z',
      '2026-01-01T00:00+24:00',
      '2026-01-01T00:00-00:60',
    ];
    for (const bad of impossible) {
      expect(parseTimestamp(bad), bad).toBeNull();
      expect(dateTime.test(bad), bad).toBe(false);
      const day = bad.slice(0, 10);
      if (!parseDate(day)) expect(date.test(day), day).toBe(false);
    }
    expect(date.test('0000-01-01')).toBe(false);
    expect(parseDate('0000-01-01')).toBeNull();
    for (const leap of ['2000-02-29', '2024-02-29', '0400-02-29', '1600-02-29']) {
      expect(parseDate(leap), leap).not.toBeNull();
      expect(date.test(leap), leap).toBe(true);
    }
  });

  it('the date-time pattern and the server agree on every shape, away from the years an offset can leave', () => {
    const dateTime = new RegExp(DATETIME_DOC_PATTERN);
    const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
    const inputs = fc
      .tuple(
        fc.integer({ min: 2, max: 9998 }),
        two(13),
        two(32),
        two(25),
        two(60),
        fc.option(two(61)),
        fc.constantFrom('Z', '+08:00', '-0130', '+14:00', '+23:59', '+24:00', '-00:60', '+99:99', ''),
      )
      .map(([y, mo, d, h, mi, s, zone]) => `${String(y).padStart(4, '0')}-${mo}-${d}T${h}:${mi}${s === null ? '' : `:${s}`}${zone}`);
    fc.assert(
      fc.property(inputs, (input) => {
        expect(dateTime.test(input), input).toBe(parseTimestamp(input) !== null);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('calendar arithmetic on UTC days (date-fns)', () => {
  it('steps days, months and weeks across leap days, years and the ends of the calendar', () => {
    expect(plusDays('2024-02-28', 1)).toBe('2024-02-29');
    expect(plusDays('2023-02-28', 1)).toBe('2023-03-01');
    expect(plusDays('2026-01-01', -1)).toBe('2025-12-31');
    expect(plusDays('0001-01-02', -1)).toBe('0001-01-01');
    expect(plusDays('0099-12-31', 1)).toBe('0100-01-01');
    expect(plusMonths('2026-11', 2)).toBe('2027-01');
    expect(plusMonths('0050-03', -11)).toBe('0049-04');
    expect(monthLastDay('2024-02')).toBe('2024-02-29');
    expect(monthLastDay('1900-02')).toBe('1900-02-28');
    expect(monthLastDay('0004-02')).toBe('0004-02-29');
    expect(isoWeekStart('2026-01-01')).toBe('2025-12-29');
    expect(isoWeekStart('2026-01-05')).toBe('2026-01-05');
    expect(isoWeekStart('2026-01-11')).toBe('2026-01-05');
    expect(timestampPlusMonths('2024-01-31T23:59:59Z', 1)).toBe('2024-02-29T23:59:59Z');
    expect(timestampPlusMonths('0099-12-31T00:00:00Z', 2)).toBe('0100-02-28T00:00:00Z');
  });

  it('steps UTC days whatever the process time zone (each day of 2026 against the UTC milliseconds)', () => {
    for (let t = Date.UTC(2026, 0, 1); t < Date.UTC(2027, 0, 1); t += 86_400_000) {
      const day = new Date(t).toISOString().slice(0, 10);
      expect(plusDays(day, 1)).toBe(new Date(t + 86_400_000).toISOString().slice(0, 10));
    }
  });
});
