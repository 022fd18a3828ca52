import Decimal from 'decimal.js';
import { InvalidError } from '#lib/errors';

/**
 * Exchange rates (docs/exchange-rates.md), in memory: one table per currency, month → rate
 * (reporting-currency units per one unit), and what a PUT makes of it. No reads here.
 */

export const FIRST_RATE_MONTH = '1970-01';
export const LAST_RATE_MONTH = '2099-12';
export const MAX_RATE_INTEGER_DIGITS = 12;
export const MAX_RATE_FRACTION_DIGITS = 10;
export const RATE_PATTERN = new RegExp(`^\\d{1,${MAX_RATE_INTEGER_DIGITS}}(\\.\\d{1,${MAX_RATE_FRACTION_DIGITS}})?$`);

/** A currency's rates as stored (`version` null: none yet). */
export type RateTable = { currency: string; rates: Record<string, string>; version: number | null };

export type RatesChange = { month: string; rate: string | null }[];

/** What a PUT writes: the table after it, and whether anything changed (no write, no customer moved otherwise). */
export type RatesPlan = { table: RateTable; changed: boolean };

/**
 * PUT /exchange-rates/{currency}: the months named take their rate (null removes it); the others
 * stay. The reporting currency has no rate (it is 1).
 */
export const decide = (state: RateTable, change: RatesChange, reportingCurrency: string): RatesPlan => {
  if (state.currency === reportingCurrency)
    throw InvalidError.field('currency', `The currency field must not be the reporting currency (${reportingCurrency}): it needs no rate.`);
  const rates = { ...state.rates };
  for (const { month, rate } of change) {
    if (rate === null) delete rates[month];
    else rates[month] = new Decimal(rate).toFixed();
  }
  const same =
    Object.keys(rates).length === Object.keys(state.rates).length && Object.entries(rates).every(([m, r]) => state.rates[m] === r);
  return { table: { ...state, rates }, changed: !same };
};

/** The API shape of a table: its months in order. */
export const presentRates = (table: RateTable) => ({
  currency: table.currency,
  rates: Object.keys(table.rates)
    .sort()
    .map((month) => ({ month, rate: table.rates[month] })),
});
