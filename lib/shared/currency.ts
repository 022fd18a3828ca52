/** ISO 4217 codes known to the runtime's ICU data. */
const CODES = new Set(Intl.supportedValuesOf('currency'));

export const isCurrency = (code: string): boolean => /^[A-Za-z]{3}$/.test(code) && CODES.has(code.toUpperCase());
