import {
  ConflictError,
  ContentionError,
  FORBIDDEN,
  INVALID_DATA,
  NOT_FOUND,
  InvalidError,
  NotFoundError,
  ThrottledError,
  TOO_MANY_ATTEMPTS,
  TooManyRecountsError,
  UNAUTHENTICATED,
  type FieldErrors,
} from '#lib/errors';
import { settledError } from '#lib/db/retry';

/** Errors with their exact bodies from docs/api-conventions.md (Errors). Thrown anywhere; rendered once by the pipeline. */
export class HttpError extends Error {
  constructor(
    public readonly status: number,
    public readonly body: Record<string, unknown>,
    public readonly headers: Record<string, string> = {},
  ) {
    super(String(body.message));
  }
}

export type { FieldErrors };

export const unauthenticated = () => new HttpError(401, { message: UNAUTHENTICATED });
export const forbidden = () => new HttpError(403, { message: FORBIDDEN });
export const notFound = () => new HttpError(404, { message: NOT_FOUND });
/** A known path asked with a method it does not serve. */
export const methodNotAllowed = (allow: string[]) => new HttpError(405, { message: 'Method not allowed.' }, { Allow: allow.join(', ') });
export const invalidJson = () => new HttpError(400, { message: 'The request body is not valid JSON.' });
export const tooLarge = () => new HttpError(413, { message: 'The request body is too large.' });
export const conflict = (message: string) => new HttpError(409, { message });
export const tooManyAttempts = (retryAfterSeconds: number) =>
  new HttpError(429, { message: TOO_MANY_ATTEMPTS }, { 'Retry-After': String(retryAfterSeconds) });
export const validationFailed = (errors: FieldErrors) => new HttpError(422, { message: INVALID_DATA, errors });
/** A 422 on one field. */
export const invalidField = (field: string, message: string) => validationFailed({ [field]: [message] });
export const serverError = () => new HttpError(500, { message: 'Server Error' });

export const serviceBusy = (retryAfterSeconds: number, message: string) =>
  new HttpError(503, { message }, { 'Retry-After': String(retryAfterSeconds) });

/** The error middy throws just before the Lambda's own timeout (`timeoutEarlyInMillis`). */
const isInvocationTimeout = (err: unknown): boolean =>
  err instanceof Error && err.name === 'TimeoutError' && (err.cause as { package?: string } | undefined)?.package === '@middy/core';

/**
 * The one mapping from domain errors to HTTP (docs/api-conventions.md): not found 404, invalid 422, conflict
 * and contention 409, throttling 503 with Retry-After. Anything else is not an HttpError (→ 500).
 */
export const toHttpError = (err: unknown): HttpError | null => {
  if (err instanceof HttpError) return err;
  if (err instanceof NotFoundError) return notFound();
  if (err instanceof InvalidError) return validationFailed(err.fields);
  // Contention is worth retrying at once (a retryable 409 carries Retry-After); other conflicts are not.
  if (err instanceof ContentionError) return new HttpError(409, { message: err.message }, { 'Retry-After': String(err.retryAfterSeconds) });
  if (err instanceof ConflictError) return conflict(err.message);
  if (err instanceof ThrottledError) return serviceBusy(err.retryAfterSeconds, err.message);
  if (err instanceof TooManyRecountsError) return tooManyAttempts(err.retryAfterSeconds);
  // middy's early timeout: the invocation ran out of time (a slow dependency): busy, retry. Whatever
  // was under way either committed (an idempotent retry replays it) or did not.
  if (isInvocationTimeout(err)) return serviceBusy(1, new ThrottledError().message);
  // DynamoDB did not answer (timeout, connection lost: the outcome is unknown, the client retries),
  // or a read outside `retrying` was throttled or lost a race: still 503 / 409.
  const settled = settledError(err);
  return settled === err ? null : toHttpError(settled);
};
