import Decimal from 'decimal.js';

/** Exact decimal money (docs/api-conventions.md): at most 13 integer and 2 fraction digits, not negative. */
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

/** Fraction digits `ExactSum` keeps as integers (stored amounts have at most 10: order shares). */
export const EXACT_SUM_SCALE = 10;
const FRACTION_UNIT = 10 ** EXACT_SUM_SCALE;
const PLAIN = /^(-?)(\d{1,15})(?:\.(\d{1,10}))?$/;
/**
 * Decimal arithmetic rounds to 20 significant digits by default; a sum of stored amounts may need
 * more (13 integer digits and 10 fraction digits of a converted amount are 23): values made with
 * this constructor keep 100, and so does every result computed from them.
 */
export const ExactDecimal = Decimal.clone({ precision: 100 });
const Wide = ExactDecimal;
/** Beyond this a Number accumulator could lose a unit: it is moved into the BigInt first. */
const FLUSH_AT = 2 ** 52;

/**
 * An exact running sum of stored numbers (numbers or decimal strings), for reads that add
 * thousands of aggregate items: whole units and 10^-10 units are added as integer Numbers (exact
 * below 2^53, moved into a BigInt before they could get there), several times faster than a
 * Decimal per addition. Anything else (more digits, an exponent) is added as a Decimal, still exact.
 */
export class ExactSum {
  private units = 0;
  private fraction = 0;
  private big = 0n;
  private rest: InstanceType<typeof Wide> | null = null;

  add(value: number | string, sign: 1 | -1 = 1): void {
    if (typeof value === 'number' && Number.isSafeInteger(value) && Math.abs(value) < FLUSH_AT) {
      this.units += sign * value;
    } else {
      const text = String(value);
      const m = PLAIN.exec(text);
      if (!m) {
        const d = new Wide(text);
        this.rest = (this.rest ?? new Wide(0)).plus(sign === 1 ? d : d.negated());
        return;
      }
      const s = m[1] === '-' ? -sign : sign;
      this.units += s * Number(m[2]);
      if (m[3]) this.fraction += s * Number(m[3].padEnd(EXACT_SUM_SCALE, '0'));
    }
    if (Math.abs(this.units) >= FLUSH_AT || Math.abs(this.fraction) >= FLUSH_AT) this.flush();
  }

  /** Adds another running sum (its value as it is now). */
  addSum(other: ExactSum): void {
    this.units += other.units;
    this.fraction += other.fraction;
    this.big += other.big;
    if (other.rest) this.rest = (this.rest ?? new Wide(0)).plus(other.rest);
    if (Math.abs(this.units) >= FLUSH_AT || Math.abs(this.fraction) >= FLUSH_AT) this.flush();
  }

  private flush(): void {
    this.big += BigInt(this.units) * BigInt(FRACTION_UNIT) + BigInt(this.fraction);
    this.units = 0;
    this.fraction = 0;
  }

  value(): Decimal {
    this.flush();
    const negative = this.big < 0n;
    const digits = (negative ? -this.big : this.big).toString().padStart(EXACT_SUM_SCALE + 1, '0');
    const whole = `${negative ? '-' : ''}${digits.slice(0, -EXACT_SUM_SCALE)}.${digits.slice(-EXACT_SUM_SCALE)}`;
    return new Decimal(this.rest ? this.rest.plus(whole).toFixed() : whole);
  }
}

/**
 * Exchange rates as a write knows them (docs/metrics.md, "Currency conversion"): currency → month
 * (`yyyy-mm`) → reporting-currency units per one unit.
 */
export type RateBook = ReadonlyMap<string, ReadonlyMap<string, string>>;
/** Fraction digits a converted amount keeps (half up): sums of them stay exact in DynamoDB numbers (38 digits). */
export const CONVERSION_SCALE = 10;
