/**
 * Free text (a plan name, a cancellation reason, a metadata pair) as part of a table key:
 * URI-encoded. A lone surrogate, which input validation refuses, becomes U+FFFD rather than
 * making encodeURIComponent throw.
 */
export const keyText = (v: string): string => encodeURIComponent(v.replace(/\p{Cs}/gu, '\uFFFD'));
