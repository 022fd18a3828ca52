import type * as z from 'zod';

/** Human wording of a field name, as Laravel-style messages write it ("per page"); the root is the body. */
const label = (path: PropertyKey[]): string => String(path[path.length - 1] ?? 'body').replace(/_/g, ' ');

/** One message per zod issue, worded like the rest of the API's validation messages. */
export const issueMessage = (issue: z.core.$ZodIssue): string => {
  const field = label(issue.path);
  // `input` is present because parses run with reportInput (zod strips it otherwise). A missing or
  // null value is "required" whichever check caught it first (type, union, enum).
  const missing = 'input' in issue && (issue as { input?: unknown }).input == null;
  if (missing && (issue.code === 'invalid_type' || issue.code === 'invalid_union' || issue.code === 'invalid_value')) {
    return `The ${field} field is required.`;
  }
  switch (issue.code) {
    case 'invalid_type':
      if (issue.expected === 'int' || issue.expected === 'number') return `The ${field} field must be an integer.`;
      if (issue.expected === 'object' || issue.expected === 'record') return `The ${field} field must be an object.`;
      if (issue.expected === 'array') return `The ${field} field must be an array.`;
      if (issue.expected === 'boolean') return `The ${field} field must be true or false.`;
      return `The ${field} field must be a ${issue.expected}.`;
    case 'too_big':
      if (issue.origin === 'string') return `The ${field} field must not be greater than ${issue.maximum} characters.`;
      if (issue.origin === 'array') return `The ${field} field must not have more than ${issue.maximum} items.`;
      return `The ${field} field must not be greater than ${issue.maximum}.`;
    case 'too_small':
      if (issue.origin === 'string') {
        return Number(issue.minimum) <= 1
          ? `The ${field} field is required.`
          : `The ${field} field must be at least ${issue.minimum} characters.`;
      }
      if (issue.origin === 'array') {
        return `The ${field} field must contain at least ${issue.minimum} item${Number(issue.minimum) === 1 ? '' : 's'}.`;
      }
      return `The ${field} field must be at least ${issue.minimum}.`;
    case 'invalid_format':
      if (issue.format === 'email') return `The ${field} field must be a valid email address.`;
      // A schema's own wording (regex checks) wins over the generic one.
      if (issue.message.includes(':field')) return issue.message.replace(/:field/g, field);
      return `The ${field} field format is invalid.`;
    case 'invalid_value':
      return selectedInvalid(field, issue.values);
    default:
      return issue.message.replace(/:field/g, field);
  }
};

/** An enumeration's 422 names what it takes ("The selected interval is invalid. Allowed: day, week, month, quarter, year."). */
export const selectedInvalid = (field: string, allowed: readonly unknown[]): string =>
  allowed.length ? `The selected ${field} is invalid. Allowed: ${allowed.map(String).join(', ')}.` : `The selected ${field} is invalid.`;
