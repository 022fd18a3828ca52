import { settingsPutBody, settingsSchema } from '#lib/settings/schemas';
import { defineRoute } from '#lib/http/route';
import { RECOUNT_PENDING_DOC } from '#lib/shared/recount-pending-header';
import { dataOf, messageBody } from '#lib/shared/schemas';
import { backofficeErrors, dashboardRead, errors, invalid } from '#lib/http/route-parts';

/** The settings routes (their handlers import only these; lib/api/routes.ts is the union). */
export const routes = {
  // The merchant's settings (docs/settings.md): read with the API token or the back office; changed by a back-office admin.
  settingsGet: defineRoute({
    method: 'GET',
    path: '/settings',
    handler: 'functions/settings/get.ts',
    ability: 'analytics:read',
    dashboard: dashboardRead,
    writes: false,
    summary: "The merchant's settings: reporting time zone, currency and delinquency days",
    description:
      "The merchant's reporting time zone (IANA name; `UTC` unless changed), reporting currency, `delinquency_days` (30 unless changed), and its last recount after a change of zone or rates (docs/settings.md).",
    tags: ['settings'],
    responses: {
      200: {
        description: 'The settings',
        schema: dataOf(settingsSchema),
        headers: {
          'Recount-Pending': RECOUNT_PENDING_DOC.read,
        },
      },
      ...errors,
    },
  }),
  settingsPut: defineRoute({
    method: 'PUT',
    path: '/settings',
    handler: 'functions/settings/put.ts',
    recounts: true,
    ability: null,
    auth: 'backoffice',
    roles: ['admin'],
    writes: true,
    summary: 'Change the reporting time zone or the delinquency days (back-office admins)',
    description:
      "Sets the merchant's `delinquency_days` (1–90: how long a subscription may stay past due before it is cancelled as delinquent; applied to the subscriptions past due now as well), its reporting time zone, or both. The time zone is an IANA name such as `Asia/Taipei`. The zone is stored at once and starts a recount of the figures in it in the background: until it switches (`recount.status` becomes `done`), every figure, `GET /orders/stats` included, stays in the zone before, whole, and answers say `Recount-Pending: true`. Setting the zone already set starts none; at most 10 recounts start in an hour (429 with `Retry-After` beyond, nothing changed). Timestamps on the wire stay UTC (docs/settings.md). Admins only.",
    tags: ['settings'],
    request: { body: settingsPutBody },
    responses: {
      200: {
        description: 'The settings as changed',
        schema: dataOf(settingsSchema),
        headers: {
          'Recount-Pending': RECOUNT_PENDING_DOC.change,
        },
      },
      ...backofficeErrors,
      409: { description: 'The token changed at the same moment: try again', schema: messageBody },
      ...invalid,
    },
  }),
};
