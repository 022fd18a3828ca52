/** Metadata is stored as its JSON text (see `metadata()` in lib/http/fields.ts); this reads it back. */
export const decodeMetadata = (stored: unknown): Record<string, unknown> | null => {
  if (stored === null || stored === undefined) return null;
  return typeof stored === 'string' ? (JSON.parse(stored) as Record<string, unknown>) : (stored as Record<string, unknown>);
};
