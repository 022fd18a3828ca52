import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { allPagesCsv, type CsvPage, toCsv } from '../../web/src/csv.ts';

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
    ).toBe('a\r\n"x,y"\r\n"say ""hi"""\r\n"two\nlines"\r\n"cr\rlf\r\n"\r\n" lead"\r\n"trail "\r\nin side\r\n\r\n\'=1+1\r\nünï©ødé\r\n');
  });

  it('neutralises what a spreadsheet would run as a formula (a leading quote), never a number', () => {
    expect(toCsv(['a'], [['=HYPERLINK("http://x.example","go")'], ['+1'], ['-cmd'], ['@SUM(A1)'], ['\tx'], ['-3.50'], [-2], ['a=b']])).toBe(
      'a\r\n"\'=HYPERLINK(""http://x.example"",""go"")"\r\n\'+1\r\n\'-cmd\r\n\'@SUM(A1)\r\n\'\tx\r\n-3.50\r\n-2\r\na=b\r\n',
    );
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

/** A list's CSV download: the API's pages joined under one header (web/src/csv.ts). */
describe('allPagesCsv', () => {
  /** Scripted pages: each request's cursor is recorded, each page names the next one's. */
  const pages = (...texts: string[]) => {
    const asked: (string | undefined)[] = [];
    const page = async (cursor: string | undefined): Promise<CsvPage> => {
      asked.push(cursor);
      const n = asked.length - 1;
      return { text: texts[n], next: n + 1 < texts.length ? `c${n + 1}` : null };
    };
    return { page, asked };
  };

  it("keeps the first header, drops each later page's header line, follows the cursors to the end", async () => {
    const { page, asked } = pages('id,name\r\n1,"a\r\nb"\r\n', 'id,name\r\n2,c\r\n', 'id,name\r\n3,"d,e"\r\n');
    const { text, complete } = await allPagesCsv(page);
    expect(text).toBe('id,name\r\n1,"a\r\nb"\r\n2,c\r\n3,"d,e"\r\n');
    expect(complete).toBe(true);
    expect(asked).toEqual([undefined, 'c1', 'c2']);
    expect(parse(text, { columns: true })).toEqual([
      { id: '1', name: 'a\r\nb' },
      { id: '2', name: 'c' },
      { id: '3', name: 'd,e' },
    ]);
  });

  it('an empty list is its header alone; a last page without rows adds nothing', async () => {
    expect(await allPagesCsv(pages('id,name\r\n').page)).toEqual({ text: 'id,name\r\n', complete: true });
    expect((await allPagesCsv(pages('id\r\n1\r\n', 'id\r\n').page)).text).toBe('id\r\n1\r\n');
  });

  it('stops after maxPages requests and says the file is not complete', async () => {
    const { page, asked } = pages('id\r\n1\r\n', 'id\r\n2\r\n', 'id\r\n3\r\n', 'id\r\n4\r\n');
    expect(await allPagesCsv(page, 2)).toEqual({ text: 'id\r\n1\r\n2\r\n', complete: false });
    expect(asked).toHaveLength(2);
  });
});
