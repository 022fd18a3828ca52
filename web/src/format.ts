/**
 * Amounts arrive as exact decimal strings; Intl formats the string itself (no float in between),
 * with the currency's symbol and the reader's grouping. Always two fraction digits, as the API.
 */
const moneyFormats = new Map<string, Intl.NumberFormat>();
export const money = (amount: string | null | undefined, currency: string): string => {
  if (amount === null || amount === undefined) return '—';
  let f = moneyFormats.get(currency);
  if (!f) {
    f = new Intl.NumberFormat(undefined, { style: 'currency', currency, minimumFractionDigits: 2, maximumFractionDigits: 2 });
    moneyFormats.set(currency, f);
  }
  return f.format(amount as `${number}`);
};

export const percent = (value: number | null | undefined, digits = 2) =>
  value === null || value === undefined
    ? '—'
    : `${value.toLocaleString(undefined, { minimumFractionDigits: digits, maximumFractionDigits: digits })} %`;

export const ratio = (value: number | null | undefined) =>
  value === null || value === undefined ? '—' : value.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });

export const count = (value: number) => value.toLocaleString();

/** `2025-07-01T10:00:00Z` → `2025-07-01 10:00 UTC` (the API's times are UTC; so are the metrics' days). */
export const when = (ts: string | null) => (ts ? `${ts.slice(0, 10)} ${ts.slice(11, 16)} UTC` : '—');

/** The currencies the stats switch offers (any ISO 4217 code works with the API). */
export const CURRENCIES = ['TWD', 'USD', 'EUR', 'JPY', 'GBP', 'AUD', 'CAD', 'SGD', 'HKD'];
