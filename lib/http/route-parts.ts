import { idempotencyHeaders, importRunHeaders, messageBody, validationBody } from '#lib/shared/schemas';

/** Responses and settings several resources' routes share. */
export const errors = {
  401: { description: 'Unauthenticated', schema: messageBody },
  403: { description: 'Missing ability', schema: messageBody },
  429: { description: 'Too many requests', schema: messageBody },
};
/** Back-office routes: 401 without a merchant identity, 403 for a role that may not. */
export const backofficeErrors = {
  401: { description: 'No back-office identity, or its merchant does not exist', schema: messageBody },
  403: { description: 'The role may not do this (`user` may only view)', schema: messageBody },
  429: { description: 'Too many requests', schema: messageBody },
};
/** Token routes the dashboard (web/) also calls with the back-office identity: reads for both roles, writes for admins. */
export const dashboardRead = { roles: ['admin', 'user'] } as const;
export const dashboardAdmin = { roles: ['admin'] } as const;
/** The batch endpoints' headers: an idempotency key, and the import run the activity entry names. */
export const batchHeaders = idempotencyHeaders.extend(importRunHeaders);
export const notFound = { 404: { description: 'Resource not found', schema: messageBody } };
export const invalid = { 422: { description: 'Validation failed', schema: validationBody } };
