import type * as z from 'zod';
import { validationFailed, type FieldErrors } from '#lib/http/errors';
import { issueMessage } from '#lib/shared/validation';

export { issueMessage };

/** Dot path of an issue as the client sent the field (`metadata.plan`, `customers.3.email`). */
export const issuePath = (issue: z.core.$ZodIssue): string => (issue.path.length ? issue.path.map(String).join('.') : 'body');

export const toFieldErrors = (issues: z.core.$ZodIssue[]): FieldErrors => {
  const errors: FieldErrors = {};
  for (const issue of issues) {
    const path = issuePath(issue);
    (errors[path] ??= []).push(issueMessage(issue));
  }
  return errors;
};

/** Parses with a schema or throws the 422. */
export const parseOr422 = <S extends z.ZodType>(schema: S, input: unknown): z.output<S> => {
  const result = schema.safeParse(input, { reportInput: true });
  if (!result.success) throw validationFailed(toFieldErrors(result.error.issues));
  return result.data;
};
