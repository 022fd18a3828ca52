import { defineRoute } from '#lib/http/route';
import { RECOUNT_PENDING_DOC } from '#lib/shared/recount-pending-header';
import { dashboardAdmin, dashboardRead, errors, invalid } from '#lib/http/route-parts';
import { dataOf, messageBody } from '#lib/shared/schemas';
import {
  exchangeRatesListSchema,
  exchangeRatesPathParams,
  exchangeRatesPutBody,
  exchangeRateTableSchema,
} from '#lib/exchange-rates/schemas';

/** The exchange-rates routes (their handlers import only these; lib/api/routes.ts is the union). */
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
          'Recount-Pending': RECOUNT_PENDING_DOC.read,
        },
      },
      ...errors,
    },
  }),
  exchangeRatesPut: defineRoute({
    method: 'PUT',
    path: '/exchange-rates/{currency}',
    recounts: true,
    handler: 'functions/exchange-rates/put.ts',
    ability: 'analytics:write',
    dashboard: dashboardAdmin,
    writes: true,
    summary: "Set a currency's monthly exchange rates into the reporting currency",
    description:
      "Sets the rates of the months named (reporting-currency units per one unit of `currency`; `null` removes a month's rate); months not named keep theirs. The metrics in the reporting currency count each point of a subscription or recurring order in `currency` at the rate of its month, and leave it out (reported as `unconverted`) while that month has none. The table is stored at once and a change starts a recount of the figures at the new rates in the background: until it switches, every figure stays at the rates before, whole, and answers say `Recount-Pending: true` (`GET /settings` shows its progress). A PUT that changes no rate starts none; at most 10 recounts start in an hour (429 with `Retry-After` beyond, nothing changed) (docs/exchange-rates.md).",
    tags: ['settings'],
    request: { params: exchangeRatesPathParams, body: exchangeRatesPutBody },
    responses: {
      200: {
        description: "The currency's rates as they now are",
        schema: dataOf(exchangeRateTableSchema),
        headers: {
          'Recount-Pending': RECOUNT_PENDING_DOC.change,
        },
      },
      ...errors,
      409: { description: 'The rates or settings changed at the same moment: try again', schema: messageBody },
      ...invalid,
    },
  }),
};
