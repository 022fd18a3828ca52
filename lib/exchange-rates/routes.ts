import { defineRoute, PASS_FUNCTION_TIMEOUT_SECONDS } from '#lib/http/route';
import { RESTATE_PENDING_DOC } from '#lib/shared/restate-pending-header';
import { dashboardAdmin, dashboardRead, errors, invalid } from '#lib/http/route-parts';
import { dataOf, messageBody } from '#lib/shared/schemas';
import {
  exchangeRatesListSchema,
  exchangeRatesPathParams,
  exchangeRatesPutBody,
  exchangeRateTableSchema,
} from '#lib/exchange-rates/schemas';

/** The exchange-rates routes (their handlers import only these; lib/http/routes.ts is the union). */
export const routes = {
  exchangeRatesList: defineRoute({
    method: 'GET',
    path: '/exchange-rates',
    handler: 'functions/exchange-rates/list.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    summary: "The merchant's exchange rates, per currency and month",
    description:
      'Every currency that has rates, in code order, each with its months (oldest first) and rates: reporting-currency units per one unit (docs/exchange-rates.md).',
    tags: ['settings'],
    responses: {
      200: {
        description: 'The rates',
        schema: exchangeRatesListSchema,
        headers: {
          'Restate-Pending': RESTATE_PENDING_DOC.read,
        },
      },
      ...errors,
    },
  }),
  exchangeRatesPut: defineRoute({
    method: 'PUT',
    path: '/exchange-rates/{currency}',
    timeoutSeconds: PASS_FUNCTION_TIMEOUT_SECONDS,
    recounts: true,
    handler: 'functions/exchange-rates/put.ts',
    ability: 'analytics:write',
    dashboard: dashboardAdmin,
    writes: true,
    summary: "Set a currency's monthly exchange rates into the reporting currency",
    description:
      "Sets the rates of the months named (reporting-currency units per one unit of `currency`; `null` removes a month's rate); months not named keep theirs. The metrics in the reporting currency count each point of a subscription or recurring order in `currency` at the rate of its month, and leave it out (reported as `unconverted`) while that month has none. Customers with lines in `currency` are counted again before the answer, as many as its time allows; the rest in the background, and then the answer says `Restate-Pending: true` (docs/exchange-rates.md).",
    tags: ['settings'],
    request: { params: exchangeRatesPathParams, body: exchangeRatesPutBody },
    responses: {
      200: {
        description: "The currency's rates as they now are",
        schema: dataOf(exchangeRateTableSchema),
        headers: {
          'Restate-Pending': RESTATE_PENDING_DOC.change,
        },
      },
      ...errors,
      409: { description: 'The rates changed at the same moment: try again', schema: messageBody },
      ...invalid,
    },
  }),
};
