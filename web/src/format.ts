/**
 * Amounts arrive as exact decimal strings; Intl formats the string itself (no float in between),
 * with the currency's symbol (or its code) and the reader's grouping. Always two fraction digits, as the API.
 */
const moneyFormats = new Map<string, Intl.NumberFormat>();
const moneyFormat = (currency: string, display: 'symbol' | 'code') => {
  const key = `${currency} ${display}`;
  let f = moneyFormats.get(key);
  if (!f) {
    f = new Intl.NumberFormat(undefined, {
      style: 'currency',
      currency,
      currencyDisplay: display,
      minimumFractionDigits: 2,
      maximumFractionDigits: 2,
    });
    moneyFormats.set(key, f);
  }
  return f;
};
export const money = (amount: string | null | undefined, currency: string): string =>
  amount === null || amount === undefined ? '—' : moneyFormat(currency, 'symbol').format(amount as `${number}`);

/**
 * Amounts per currency (`{USD: '120.00', EUR: '3.00'}`, as `unconverted` gives them) written with
 * each currency's code, in the object's order: `USD 120.00, EUR 3.00`; `none` when it is empty.
 */
export const amounts = (byCurrency: Record<string, string>): string => {
  const entries = Object.entries(byCurrency);
  if (entries.length === 0) return 'none';
  return entries.map(([currency, amount]) => moneyFormat(currency, 'code').format(amount as `${number}`)).join(', ');
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
/** `2025-07-01T10:00:21Z` → `2025-07-01 10:00:21 UTC`: to the second, for times seconds apart (webhook retries). */
export const whenExact = (ts: string | null) => (ts ? `${ts.slice(0, 10)} ${ts.slice(11, 19)} UTC` : '—');

/**
 * JSON text indented two spaces a level, as `JSON.stringify(value, null, 2)` writes it, without
 * parsing it: every token stays as sent (a number too long for a double, an escape), and a text cut
 * short (a truncated webhook payload) is indented as far as it goes.
 */
export const prettyJson = (text: string): string => {
  let out = '';
  let depth = 0;
  let inString = false;
  const newline = () => `\n${'  '.repeat(depth)}`;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      if (text[i + 1] === close) {
        out += c + close;
        i++;
      } else {
        depth++;
        out += c + newline();
      }
    } else if (c === '}' || c === ']') {
      depth = Math.max(0, depth - 1);
      out += newline() + c;
    } else if (c === ',') out += c + newline();
    else if (c === ':') out += ': ';
    else if (c !== ' ' && c !== '\n' && c !== '\r' && c !== '\t') out += c;
  }
  return out;
};

/** The currencies the stats switch offers (any ISO 4217 code works with the API). */
export const CURRENCIES = ['TWD', 'USD', 'EUR', 'JPY', 'GBP', 'AUD', 'CAD', 'SGD', 'HKD'];

/** From this size (in absolute value) an amount in a card is written short (`NT$1.53M`), its exact value beside it for hover and screen readers. */
export const COMPACT_FROM = 1_000_000;
const compactFormats = new Map<string, Intl.NumberFormat>();
/** An amount written short when it is large (`NT$18.36M`), else null (write it whole). */
export const compactMoney = (amount: string | null | undefined, currency: string): string | null => {
  if (amount === null || amount === undefined || Math.abs(Number(amount)) < COMPACT_FROM) return null;
  let f = compactFormats.get(currency);
  if (!f) {
    f = new Intl.NumberFormat(undefined, {
      style: 'currency',
      currency,
      notation: 'compact',
      minimumFractionDigits: 0,
      maximumFractionDigits: 2,
    });
    compactFormats.set(currency, f);
  }
  return f.format(Number(amount));
};

/** A count written short when it is large (`1.2M`), else null. */
export const compactCount = (value: number): string | null =>
  Math.abs(value) < COMPACT_FROM ? null : new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 2 }).format(value);

/** Seconds as a reader says them: `45 s`, `12 min`, `2 h 5 min`, `3 d 4 h`; `—` for none. */
export const duration = (seconds: number | null | undefined): string => {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
};

/** A customer as the lists name them: name, else email, else `#id`. */
export const customerLabel = (c: { customer_id: number; customer_name?: string | null; customer_email?: string | null }) =>
  c.customer_name ?? c.customer_email ?? `#${c.customer_id}`;

/** What a headline figure's change compares with: `from` after a number (`up 4 % from …`), `in` alone (`no figure … to compare`). */
export type Compared = { from: string; in: string };
const LAST_MONTH: Compared = { from: 'last month', in: 'last month' };

/** A headline figure's change in words: a percentage of the earlier value (last month's by default), or points for a rate. */
export const change = (
  h: {
    kind: 'money' | 'count' | 'percent';
    raw: string | number | null;
    previous: string | number | null;
  },
  than: Compared = LAST_MONTH,
): { text: string; direction: 'up' | 'down' | 'flat' | 'none' } => {
  if (h.raw === null || h.previous === null) return { text: `no figure ${than.in} to compare`, direction: 'none' };
  const [now, before] = [Number(h.raw), Number(h.previous)];
  const direction = now > before ? 'up' : now < before ? 'down' : 'flat';
  if (direction === 'flat') return { text: `no change from ${than.from}`, direction };
  const word = direction === 'up' ? 'up' : 'down';
  if (h.kind === 'percent') {
    const points = Math.abs(now - before).toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    return { text: `${word} ${points} points from ${than.from}`, direction };
  }
  if (before === 0) return { text: `${word} from 0 ${than.in}`, direction };
  return { text: `${word} ${percent((Math.abs(now - before) / Math.abs(before)) * 100, 1)} from ${than.from}`, direction };
};

/** A status or event type as words (`past_due` → `past due`). */
export const words = (value: string) => value.replace(/_/g, ' ');

/** Whole days from `now` to `at` (ISO times), rounded up: a part of a day left counts as a day; 0 or less when it has passed. */
export const daysUntil = (at: string, now = Date.now()) => Math.ceil((Date.parse(at) - now) / 86_400_000) || 0;

/** An ISO time `days` whole days later (`2026-03-01T10:00:00Z` + 30 → `2026-03-31T10:00:00Z`), as the API writes times. */
export const plusDays = (ts: string, days: number) => new Date(Date.parse(ts) + days * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
