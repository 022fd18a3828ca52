/** Errors with their exact bodies from decisions.md §2. Thrown anywhere; rendered once by the pipeline. */
export class HttpError extends Error {
  constructor(
    public readonly status: number,
    public readonly body: Record<string, unknown>,
    public readonly headers: Record<string, string> = {},
  ) {
    super(String(body.message));
  }
}

export type FieldErrors = Record<string, string[]>;

export const unauthenticated = () => new HttpError(401, { message: 'Unauthenticated.' });
export const forbidden = () => new HttpError(403, { message: 'This action is unauthorized.' });
export const notFound = () => new HttpError(404, { message: 'Resource not found' });
export const invalidJson = () => new HttpError(400, { message: 'The request body is not valid JSON.' });
export const tooLarge = () => new HttpError(413, { message: 'The request body is too large.' });
export const conflict = (message: string) => new HttpError(409, { message });
/** Concurrent writers kept winning every retry: the client may simply try again. */
export const contended = () => conflict('The resource was changed by concurrent requests. Try again.');
export const tooManyAttempts = (retryAfterSeconds: number) =>
  new HttpError(429, { message: 'Too Many Attempts.' }, { 'Retry-After': String(retryAfterSeconds) });
export const validationFailed = (errors: FieldErrors) =>
  new HttpError(422, { message: 'The given data was invalid.', errors });
/** A 422 on one field. */
export const invalidField = (field: string, message: string) => validationFailed({ [field]: [message] });
export const serverError = () => new HttpError(500, { message: 'Server Error' });
