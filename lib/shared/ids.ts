/**
 * A resource id from a path segment: a positive integer, or 0 for anything else, which no stored
 * resource has — so a malformed id is simply unknown (404), like an absent one.
 */
export const idFromPath = (segment: string): number => (/^[1-9]\d{0,15}$/.test(segment) ? Number(segment) : 0);
