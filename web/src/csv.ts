/**
 * CSV (RFC 4180) for the dashboard's downloads: a field is quoted when it holds a comma, a double
 * quote, a line break, or leading or trailing white space (which spreadsheets would trim), with its
 * quotes doubled; lines end in CRLF. Values are written as they are, never rewritten.
 */
const field = (value: string | number): string => {
  const s = String(value);
  return /[",\r\n]|^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** A header row and the rows under it, each line ending in CRLF. */
export const toCsv = (header: readonly string[], rows: readonly (readonly (string | number)[])[]): string =>
  [header, ...rows].map((row) => `${row.map(field).join(',')}\r\n`).join('');
