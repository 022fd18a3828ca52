import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  amounts,
  change,
  COMPACT_FROM,
  compactMoney,
  customerLabel,
  daysUntil,
  duration,
  money,
  plusDays,
  prettyJson,
  whenExact,
  words,
} from '../../web/src/format.ts';
import { previousRange, previousWords } from '../../web/src/dates.ts';

/** How the dashboard shows a webhook delivery's payload, its next retry time and amounts per currency (web/src/format.ts). */
describe('prettyJson', () => {
  it('indents as JSON.stringify(value, null, 2) does, for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        expect(prettyJson(text)).toBe(JSON.stringify(JSON.parse(text), null, 2));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps every token as sent: a number too long for a double, escapes, brackets inside strings', () => {
    const text = '{"n":12345678901234567890123,"s":"a\\"b\\\\","t":"{[,:]}","e":{},"a":[]}';
    expect(prettyJson(text)).toBe('{\n  "n": 12345678901234567890123,\n  "s": "a\\"b\\\\",\n  "t": "{[,:]}",\n  "e": {},\n  "a": []\n}');
  });

  it('indents a text cut short as far as it goes, dropping nothing but whitespace', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), (value, at) => {
        const text = JSON.stringify(value);
        const cut = text.slice(0, at % (text.length + 1));
        const shown = prettyJson(cut);
        expect(shown.replace(/\s/g, '')).toBe(cut.replace(/\s/g, ''));
        // As far as it goes, it is the whole body's indentation.
        expect(prettyJson(text).startsWith(shown.trimEnd())).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('whenExact', () => {
  it('shows a UTC time to the second, and a dash for none', () => {
    expect(whenExact('2026-03-01T10:00:21Z')).toBe('2026-03-01 10:00:21 UTC');
    expect(whenExact(null)).toBe('—');
  });
});

describe('amounts', () => {
  it('writes each currency by its code with its exact amount, in the order given; none when empty', () => {
    const nbsp = /\u00a0/g;
    expect(amounts({})).toBe('none');
    expect(amounts({ USD: '120.00' }).replace(nbsp, ' ')).toBe(
      new Intl.NumberFormat(undefined, { style: 'currency', currency: 'USD', currencyDisplay: 'code' }).format(120).replace(nbsp, ' '),
    );
    const shown = amounts({ USD: '12345678901234567.89', EUR: '3.00' });
    const [usd, eur] = shown.split(', ');
    expect(usd).toContain('USD');
    expect(usd.replace(/[^0-9]/g, '')).toBe('1234567890123456789');
    expect(eur).toContain('EUR');
    // The code form of a currency is cached apart from its symbol form (money).
    expect(money('3.00', 'EUR')).toBe(new Intl.NumberFormat(undefined, { style: 'currency', currency: 'EUR' }).format(3));
  });
});

describe('compactMoney', () => {
  it('writes an amount from a million short, with its currency, and leaves smaller ones whole (null)', () => {
    expect(compactMoney('999999.99', 'TWD')).toBeNull();
    expect(compactMoney('-999999.99', 'TWD')).toBeNull();
    expect(compactMoney(null, 'TWD')).toBeNull();
    const short = compactMoney('18363514.37', 'USD')!;
    expect(short).toMatch(/18[.,]36\s?M/);
    expect(short).toContain('$');
    expect(compactMoney('-2500000000.00', 'USD')).toMatch(/-.*2[.,]5\s?B|−.*2[.,]5\s?B/);
    expect(compactMoney(String(COMPACT_FROM), 'EUR')).toMatch(/1\s?M/);
  });
});

describe('duration', () => {
  it('says seconds as a reader does', () => {
    expect(duration(null)).toBe('—');
    expect(duration(0)).toBe('0 s');
    expect(duration(59)).toBe('59 s');
    expect(duration(60)).toBe('1 min');
    expect(duration(7_500)).toBe('2 h 5 min');
    expect(duration(7_200)).toBe('2 h');
    expect(duration(86_400 * 3 + 3_600 * 4 + 59)).toBe('3 d 4 h');
    expect(duration(86_400)).toBe('1 d');
  });
});

describe('customerLabel', () => {
  it('names a customer by name, else email, else #id', () => {
    expect(customerLabel({ customer_id: 12, customer_name: 'Ana', customer_email: 'ana@example.com' })).toBe('Ana');
    expect(customerLabel({ customer_id: 12, customer_name: null, customer_email: 'ana@example.com' })).toBe('ana@example.com');
    expect(customerLabel({ customer_id: 12, customer_name: null, customer_email: null })).toBe('#12');
  });
});

describe("a headline figure's change from last month", () => {
  it('in per cent of last month, in points for a rate, and in words when there is nothing to compare', () => {
    expect(change({ kind: 'money', raw: '110.00', previous: '100.00' })).toEqual({ text: 'up 10.0 % from last month', direction: 'up' });
    expect(change({ kind: 'count', raw: 3, previous: 4 })).toEqual({ text: 'down 25.0 % from last month', direction: 'down' });
    expect(change({ kind: 'money', raw: '5.00', previous: '0.00' })).toEqual({ text: 'up from 0 last month', direction: 'up' });
    expect(change({ kind: 'percent', raw: 4.5, previous: 2 })).toEqual({ text: 'up 2.50 points from last month', direction: 'up' });
    expect(change({ kind: 'percent', raw: null, previous: 2 }).direction).toBe('none');
    expect(change({ kind: 'count', raw: 2, previous: 2 })).toEqual({ text: 'no change from last month', direction: 'flat' });
  });

  it('against the range before, for the trials and recovery figures', () => {
    const than = { from: 'the previous 12 months', in: 'in the previous 12 months' };
    expect(change({ kind: 'count', raw: 4, previous: 1 }, than)).toEqual({
      text: 'up 300.0 % from the previous 12 months',
      direction: 'up',
    });
    expect(change({ kind: 'percent', raw: 50, previous: null }, than)).toEqual({
      text: 'no figure in the previous 12 months to compare',
      direction: 'none',
    });
    expect(change({ kind: 'count', raw: 2, previous: 0 }, than).text).toBe('up from 0 in the previous 12 months');
  });
});

describe('the range before a range, past-due days and statuses in words', () => {
  it('the same length just before: days back from the first day, or whole months', () => {
    expect(previousRange('30d', '2026-11-30')).toEqual({ start_date: '2026-10-02', end_date: '2026-10-31' });
    expect(previousRange('12m', '2026-11-30')).toEqual({ start_date: '2024-12-01', end_date: '2025-11-30' });
    expect(previousRange('6m', '2026-03-15')).toEqual({ start_date: '2025-04-01', end_date: '2025-09-30' });
    expect(previousWords('90d')).toBe('the previous 90 days');
    expect(previousWords('24m')).toBe('the previous 24 months');
  });

  it('the delinquent cancellation delinquency_days after the failure, in whole days left (a part of a day counts)', () => {
    expect(plusDays('2026-11-25T02:08:00Z', 30)).toBe('2026-12-25T02:08:00Z');
    const now = Date.parse('2026-11-30T02:00:00Z');
    expect(daysUntil('2026-12-25T02:08:00Z', now)).toBe(26);
    expect(daysUntil('2026-12-25T02:00:00Z', now)).toBe(25);
    expect(daysUntil('2026-11-30T01:00:00Z', now)).toBe(0);
    expect(words('past_due')).toBe('past due');
    expect(words('trial_converted')).toBe('trial converted');
  });
});
