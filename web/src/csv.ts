/**
 * CSV (RFC 4180) for the dashboard's downloads: a field is quoted when it holds a comma, a double
 * quote, a line break, or leading or trailing white space (which spreadsheets would trim), with its
 * quotes doubled; lines end in CRLF. A text a spreadsheet would run as a formula (starting `=`,
 * `+`, `-`, `@`, tab or CR, and not a number) gets a leading `'`, as the API's own CSV does: the
 * failed items carry what an importer sent, `=HYPERLINK(…)` included.
 */
const FORMULA = /^[=+\-@\t\r]/;
const NUMBER = /^-?\d+(\.\d+)?$/;
const field = (value: string | number): string => {
  const raw = String(value);
  const s = typeof value === 'string' && FORMULA.test(raw) && !NUMBER.test(raw) ? `'${raw}` : raw;
  return /[",\r\n]|^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** A header row and the rows under it, each line ending in CRLF. */
export const toCsv = (header: readonly string[], rows: readonly (readonly (string | number)[])[]): string =>
  [header, ...rows].map((row) => `${row.map(field).join(',')}\r\n`).join('');

/** Saves `text` as a file through a temporary link (no request: the page already holds the data). */
export const saveFile = (name: string, text: string) => {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  // Released once the browser has taken the file.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
};

/**
 * A download reads at most this many pages of 100 rows: each page is a request in the merchant's
 * hourly window, which the dashboard shares with the API token. Past it, the file holds the first
 * rows and says so; the API (`Accept: text/csv` with `cursor`) gives them all.
 */
export const CSV_MAX_PAGES = 20;
export const CSV_PAGE_SIZE = 100;

export type CsvPage = { text: string; next: string | null };

/**
 * The pages of a list's CSV (as the API writes it) as one file: the first page whole, the header
 * line of each later page dropped (a header never spans lines), from the first page until one names
 * no next cursor or `maxPages` were read.
 */
export const allPagesCsv = async (
  page: (cursor: string | undefined) => Promise<CsvPage>,
  maxPages = CSV_MAX_PAGES,
): Promise<{ text: string; complete: boolean }> => {
  let text = '';
  let cursor: string | undefined;
  for (let n = 0; n < maxPages; n++) {
    const p = await page(cursor);
    const end = p.text.indexOf('\r\n');
    text += n === 0 ? p.text : end < 0 ? '' : p.text.slice(end + 2);
    if (!p.next) return { text, complete: true };
    cursor = p.next;
  }
  return { text, complete: false };
};
