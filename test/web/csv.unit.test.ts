import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { toCsv } from '../../web/src/csv.ts';

/** The dashboard's CSV download (web/src/csv.ts): quoting checked literally, and read back by a real CSV parser. */
describe('toCsv', () => {
  it('writes plain fields as they are, one CRLF-ended line per row under the header', () => {
    expect(toCsv(['index', 'identifier', 'reason', 'message'], [[0, 'a@example.com', 'validation_error', 'Bad']])).toBe(
      'index,identifier,reason,message\r\n0,a@example.com,validation_error,Bad\r\n',
    );
    expect(toCsv(['index', 'identifier'], [])).toBe('index,identifier\r\n');
  });

  it('quotes commas, quotes (doubled), line breaks and edge spaces, and nothing else', () => {
    expect(
      toCsv(
        ['a'],
        [['x,y'], ['say "hi"'], ['two\nlines'], ['cr\rlf\r\n'], [' lead'], ['trail '], ['in side'], [''], ['=1+1'], ['ünï©ødé']],
      ),
    ).toBe('a\r\n"x,y"\r\n"say ""hi"""\r\n"two\nlines"\r\n"cr\rlf\r\n"\r\n" lead"\r\n"trail "\r\nin side\r\n\r\n=1+1\r\nünï©ødé\r\n');
  });

  it('reads back to the same values with csv-parse, whatever they hold', () => {
    const rows = [
      [3, 'E2E "bad", one', 'validation_error', 'The amount field must be a number, like "10.00".'],
      [7, 'multi\r\nline', 'rejected', ' spaced '],
      [12, '', 'invalid_line', '"'],
    ];
    const back = parse(toCsv(['index', 'identifier', 'reason', 'message'], rows), { columns: true }) as Record<string, string>[];
    expect(back).toEqual(rows.map(([index, identifier, reason, message]) => ({ index: String(index), identifier, reason, message })));
  });
});
