import Decimal from 'decimal.js';

/** Exact decimal money (decisions §1): at most 13 integer and 2 fraction digits, not negative. */
export { Decimal };

const AMOUNT = /^\d{1,13}(\.\d{1,2})?$/;

export type AmountParse = { ok: true; value: string } | { ok: false; message: string };

/** Accepts a JSON string or number; returns the normalised 2-decimal string. */
export const parseAmount = (input: unknown, field: string): AmountParse => {
  let text: string;
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) return { ok: false, message: `The ${field} field must be a number.` };
    text = String(input);
  } else if (typeof input === 'string') {
    text = input.trim();
  } else {
    return { ok: false, message: `The ${field} field must be a number.` };
  }
  if (/^-/.test(text) && /^-\d+(\.\d+)?$/.test(text)) {
    return { ok: false, message: `The ${field} field must be at least 0.` };
  }
  if (/^\d+\.\d{3,}$/.test(text)) {
    return { ok: false, message: `The ${field} field must have at most 2 decimal places.` };
  }
  if (/^\d{14,}(\.\d+)?$/.test(text)) {
    return { ok: false, message: `The ${field} field must not have more than 13 integer digits.` };
  }
  if (!AMOUNT.test(text)) return { ok: false, message: `The ${field} field must be a number.` };
  return { ok: true, value: new Decimal(text).toFixed(2) };
};

/** Any stored numeric (number or decimal string) as a 2-decimal string. */
export const money = (value: unknown): string => new Decimal(value === undefined || value === null ? 0 : String(value)).toFixed(2);

/** Signed 2-decimal string ("-12.50"). */
export const signedMoney = (value: Decimal.Value): string => new Decimal(value).toFixed(2);
