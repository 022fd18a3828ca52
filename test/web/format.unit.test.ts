import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { amounts, money, prettyJson, whenExact } from '../../web/src/format.ts';

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
