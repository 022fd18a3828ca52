import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { prettyJson, whenExact } from '../../web/src/format.ts';

/** How the dashboard shows a webhook delivery's payload and its next retry time (web/src/format.ts). */
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
