import { apiTokenIssuedSchema, apiTokenSchema, backofficeSessionSchema } from '#lib/merchants/schemas';
import { defineRoute } from '#lib/http/route';
import { dataOf, messageBody } from '#lib/shared/schemas';
import { backofficeErrors } from '#lib/http/route-parts';

/** The backoffice routes (their handlers import only these; lib/api/routes.ts is the union). */
export const routes = {
  // The back office (docs/authentication-and-limits.md): the merchant's API token, for back-office users (Cognito).
  backofficeTokenView: defineRoute({
    method: 'GET',
    path: '/backoffice/api-token',
    handler: 'functions/backoffice/view.ts',
    ability: null,
    auth: 'backoffice',
    roles: ['admin', 'user'],
    writes: false,
    summary: "View the merchant's API token (prefix, last four characters, abilities, times)",
    description:
      "Shows the merchant's valid API token without its secret: its prefix, last four characters, abilities and times. For the back-office user signed in to the dashboard (docs/backoffice-and-dashboard.md).",
    tags: ['backoffice'],
    responses: {
      200: { description: 'The valid token', schema: dataOf(apiTokenSchema) },
      ...backofficeErrors,
      404: { description: 'The merchant has no valid token', schema: messageBody },
    },
  }),
  backofficeMe: defineRoute({
    method: 'GET',
    path: '/backoffice/me',
    handler: 'functions/backoffice/me.ts',
    ability: null,
    auth: 'backoffice',
    roles: ['admin', 'user'],
    writes: false,
    summary: 'The signed-in back-office user: merchant, its reporting currency, and role (the dashboard starts here)',
    description:
      "Who the signed-in back-office user is: the merchant it acts for, that merchant's reporting currency, and the user's role. The dashboard calls it first.",
    tags: ['backoffice'],
    responses: { 200: { description: 'The caller', schema: dataOf(backofficeSessionSchema) }, ...backofficeErrors },
  }),
  backofficeTokenCreate: defineRoute({
    method: 'POST',
    path: '/backoffice/api-token',
    handler: 'functions/backoffice/create.ts',
    ability: null,
    auth: 'backoffice',
    roles: ['admin'],
    writes: true,
    tokens: true,
    summary: 'Create the API token (every ability); refused while a valid one exists',
    description:
      "Issues the merchant's API token with every ability. The secret is in this answer only. A merchant has at most one valid token: while one exists the answer is 409 (revoke or regenerate it instead). Admins only.",
    tags: ['backoffice'],
    responses: {
      201: { description: 'The new token, shown this once', schema: dataOf(apiTokenIssuedSchema) },
      ...backofficeErrors,
      409: { description: 'A valid token exists: revoke it first', schema: messageBody },
    },
  }),
  backofficeTokenRegenerate: defineRoute({
    method: 'POST',
    path: '/backoffice/api-token/regenerate',
    handler: 'functions/backoffice/regenerate.ts',
    ability: null,
    auth: 'backoffice',
    roles: ['admin'],
    writes: true,
    tokens: true,
    summary: 'Replace the valid token: the old one is refused from the next request',
    description:
      'Replaces the valid token with a new one (same abilities); the old one is refused from the next request. The new secret is in this answer only. Admins only.',
    tags: ['backoffice'],
    responses: {
      200: { description: 'The new token (same abilities), shown this once', schema: dataOf(apiTokenIssuedSchema) },
      ...backofficeErrors,
      404: { description: 'The merchant has no valid token', schema: messageBody },
    },
  }),
  backofficeTokenRevoke: defineRoute({
    method: 'DELETE',
    path: '/backoffice/api-token',
    handler: 'functions/backoffice/revoke.ts',
    ability: null,
    auth: 'backoffice',
    roles: ['admin'],
    writes: true,
    tokens: true,
    summary: 'Revoke the valid token, immediately and irreversibly',
    description: 'Revokes the valid token at once; it cannot be undone. Create a new one afterwards. Admins only.',
    tags: ['backoffice'],
    responses: {
      204: { description: 'Revoked' },
      ...backofficeErrors,
      404: { description: 'The merchant has no valid token', schema: messageBody },
    },
  }),
};
