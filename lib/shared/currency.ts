/** ISO 4217 codes known to the runtime's ICU data. */
const CODES = new Set(Intl.supportedValuesOf('currency'));

export const isCurrency = (code: string): boolean => /^[A-Za-z]{3}$/.test(code) && CODES.has(code.toUpperCase());

/** One letter in either case, as a pattern (JSON Schema patterns have no case-insensitive flag). */
const eitherCase = (c: string) => `[${c}${c.toLowerCase()}]`;
/**
 * The codes `isCurrency` accepts, in any case, as one pattern (the OpenAPI document's): grouped by
 * their first two letters so that it stays a few kilobytes.
 */
export const CURRENCY_PATTERN = (() => {
  const byPrefix = new Map<string, string[]>();
  for (const code of [...CODES].filter((c) => /^[A-Z]{3}$/.test(c)).sort()) {
    const list = byPrefix.get(code.slice(0, 2)) ?? [];
    list.push(code[2]);
    byPrefix.set(code.slice(0, 2), list);
  }
  const groups = [...byPrefix].map(([p, last]) => `${eitherCase(p[0])}${eitherCase(p[1])}[${last.join('')}${last.join('').toLowerCase()}]`);
  return `^(?:${groups.join('|')})$`;
})();

/**
 * Currencies whose ISO 4217 minor unit is 0 (ISO's list, not ICU's display digits, which differ
 * for some codes): an amount in them has no fraction.
 */
export const ZERO_DECIMAL_CURRENCIES: ReadonlySet<string> = new Set([
  'BIF',
  'CLP',
  'DJF',
  'GNF',
  'ISK',
  'JPY',
  'KMF',
  'KRW',
  'PYG',
  'RWF',
  'UGX',
  'UYI',
  'VND',
  'VUV',
  'XAF',
  'XOF',
  'XPF',
]);

/** Why `amount` (a decimal string) cannot be in `currency` (a fraction other than zero), or null when it can. */
export const amountCurrencyError = (amount: string, currency: string, field = ':field'): string | null =>
  ZERO_DECIMAL_CURRENCIES.has(currency.toUpperCase()) && /\.\d*[1-9]/.test(amount)
    ? `The ${field} field must be a whole number in ${currency.toUpperCase()}, which has no minor unit.`
    : null;
