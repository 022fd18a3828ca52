/**
 * Domain errors. `lib/` modules throw these; the HTTP pipeline maps them to the bodies of
 * docs/api-conventions.md (Errors) in one place (`lib/http/errors.ts`), so domain code knows nothing of HTTP.
 */
export type FieldErrors = Record<string, string[]>;

/** The messages of docs/api-conventions.md (Errors) that several answers share (tests import them rather than retype them). */
export const INVALID_DATA = 'The given data was invalid.';
export const NOT_FOUND = 'Resource not found';
export const UNAUTHENTICATED = 'Unauthenticated.';
export const FORBIDDEN = 'This action is unauthorized.';
export const TOO_MANY_ATTEMPTS = 'Too Many Attempts.';

export class DomainError extends Error {}

/** The resource does not exist for this merchant (or is deleted). */
export class NotFoundError extends DomainError {
  constructor() {
    super(NOT_FOUND);
  }
}

/** Invalid input, per field (dot paths for nested fields). */
export class InvalidError extends DomainError {
  constructor(public readonly fields: FieldErrors) {
    super(INVALID_DATA);
  }
  static field(field: string, message: string): InvalidError {
    return new InvalidError({ [field]: [message] });
  }
}

/** A state conflict the client must resolve (e.g. a token already exists). */
export class ConflictError extends DomainError {}

/**
 * A concurrent writer won: nothing was written, and the same request may succeed on a retry (the
 * answer carries Retry-After). Raised when contention outlasts the deadline, and by operations that
 * read then write under a condition another request broke (such as a token regenerated meanwhile).
 */
export class ContentionError extends ConflictError {
  constructor(
    message = 'The resource was changed by concurrent requests. Try again.',
    public readonly retryAfterSeconds = 1,
  ) {
    super(message);
  }
}

/**
 * The merchant's MRR figures are being counted afresh for a settings change (a generation build):
 * its MRR writes wait until it switches, a few seconds (409 with Retry-After; nothing written).
 */
export class RecountingError extends ContentionError {
  constructor(
    message = "The merchant's figures are being recounted for its new settings; nothing was stored. Try again in a few seconds.",
    retryAfterSeconds = 5,
  ) {
    super(message, retryAfterSeconds);
  }
}

/** A merchant started as many recounts as an hour allows (429 with Retry-After; nothing changed). */
export class TooManyRecountsError extends DomainError {
  constructor(public readonly retryAfterSeconds: number) {
    super(TOO_MANY_ATTEMPTS);
  }
}

/**
 * A batch chunk sent, never confirmed, and not settled either way before the deadline: its items
 * may be stored or not (a batch item answers `unconfirmed`; a retry of an upsert finds what landed).
 */
export class UnconfirmedError extends DomainError {
  constructor() {
    super('The item may have been stored: its write was not confirmed in time; retry it (a retry finds what was stored).');
  }
}

/** DynamoDB kept throttling until the deadline: nothing was written, retry after `retryAfterSeconds`. */
export class ThrottledError extends DomainError {
  constructor(public readonly retryAfterSeconds = 1) {
    super('The service is busy. Try again shortly.');
  }
}
