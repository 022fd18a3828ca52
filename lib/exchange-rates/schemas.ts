import * as z from 'zod';
import { currency, documentedAs } from '#lib/shared/fields';
import { dataOf } from '#lib/shared/schemas';
import {
  FIRST_RATE_MONTH,
  LAST_RATE_MONTH,
  MAX_RATE_FRACTION_DIGITS,
  MAX_RATE_INTEGER_DIGITS,
  RATE_PATTERN,
} from '#lib/exchange-rates/rules';

/** A month a rate can be given for: `YYYY-MM` from 1970-01 to 2099-12. */
const rateMonth = () =>
  z
    .string({ error: 'The :field field must be a string.' })
    .refine((v) => /^\d{4}-(0[1-9]|1[0-2])$/.test(v) && v >= FIRST_RATE_MONTH && v <= LAST_RATE_MONTH, {
      message: `The :field field must be a month (YYYY-MM) from ${FIRST_RATE_MONTH} to ${LAST_RATE_MONTH}.`,
    })
    .meta({ example: '2026-01', pattern: RATE_MONTH_PATTERN, description: `YYYY-MM, from ${FIRST_RATE_MONTH} to ${LAST_RATE_MONTH}` });

/** The months from 1970-01 to 2099-12, as the document's pattern. */
const RATE_MONTH_PATTERN = '^(?:19[7-9]\\d|20\\d\\d)-(?:0[1-9]|1[0-2])$';

const RATE_MESSAGE = `The :field field must be a decimal above 0 with at most ${MAX_RATE_INTEGER_DIGITS} integer and ${MAX_RATE_FRACTION_DIGITS} fraction digits, or null to remove the month's rate.`;
/** A rate: reporting-currency units per one unit, as a decimal string (a JSON number is taken too), or null to remove. */
const rate = () =>
  z
    .union([z.string(), z.number(), z.null()], { error: RATE_MESSAGE })
    .transform((v, ctx) => {
      if (v === null) return null;
      const text = typeof v === 'number' ? String(v) : v.trim();
      if (RATE_PATTERN.test(text) && /[1-9]/.test(text)) return text;
      ctx.addIssue({ code: 'custom', message: RATE_MESSAGE });
      return z.NEVER;
    })
    .meta({
      example: '31.52',
      description: `Reporting-currency units per one unit, above 0: a decimal string of at most ${MAX_RATE_INTEGER_DIGITS} integer and ${MAX_RATE_FRACTION_DIGITS} fraction digits, or a JSON number (below 10^12, at least 0.000001, at most ${MAX_RATE_FRACTION_DIGITS} fraction digits); null removes the month`,
      override: documentedAs({
        anyOf: [
          // Trimmed, then digits with a non-zero one among them.
          {
            type: 'string',
            pattern: `^\\s*(?=[\\d.]*[1-9])\\d{1,${MAX_RATE_INTEGER_DIGITS}}(?:\\.\\d{1,${MAX_RATE_FRACTION_DIGITS}})?\\s*$`,
          },
          // A number is read as JavaScript writes it: below 0.000001 that is an exponent, which is refused.
          { type: 'number', minimum: 0.000001, exclusiveMaximum: 10 ** MAX_RATE_INTEGER_DIGITS },
          { type: 'null' },
        ],
      }),
    });

export const exchangeRatesPathParams = z.object({
  currency: currency().meta({ description: 'The currency the rates convert from (ISO 4217)', example: 'USD' }),
});

export const MAX_RATES_PER_REQUEST = 1_560;

export const exchangeRatesPutBody = z
  .object({
    rates: z
      .array(z.object({ month: rateMonth(), rate: rate() }), { error: 'The :field field must be an array of {month, rate}.' })
      .min(1, { message: 'The :field field must have at least 1 item.' })
      .max(MAX_RATES_PER_REQUEST, { message: `The :field field must not have more than ${MAX_RATES_PER_REQUEST} items.` }),
  })
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.rates.forEach((r, i) => {
      if (seen.has(r.month)) ctx.addIssue({ code: 'custom', path: ['rates', i, 'month'], message: `The :field field repeats ${r.month}.` });
      seen.add(r.month);
    });
  });
export type ExchangeRatesPut = z.output<typeof exchangeRatesPutBody>;

export const exchangeRateTableSchema = z
  .object({
    currency: z.string().meta({ example: 'USD' }),
    rates: z.array(
      z.object({
        month: z.string().meta({ example: '2026-01' }),
        rate: z.string().meta({ example: '31.52', description: 'Reporting-currency units per one unit' }),
      }),
    ),
  })
  .meta({ id: 'ExchangeRates', description: "One currency's monthly rates into the reporting currency, oldest month first" });

export const exchangeRatesListSchema = dataOf(z.array(exchangeRateTableSchema));
