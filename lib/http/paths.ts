/**
 * Path templates (`/customers/{id}`) matched as API Gateway matches them: segment by segment, a
 * `{param}` takes one non-empty segment, handed over URL-decoded (a malformed escape as sent).
 */
export const templateSegments = (template: string): string[] => template.split('/').slice(1);

const decodeSegment = (segment: string): string => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

/** The path's parameters when it fits the template's segments, else null. */
export const matchSegments = (segments: string[], path: string): Record<string, string> | null => {
  const parts = path.split('/').filter((p, i) => i > 0 || p !== '');
  if (segments.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const seg = segments[i];
    if (!seg.startsWith('{')) {
      if (seg !== parts[i]) return null;
    } else if (parts[i] === '') return null;
    else params[seg.slice(1, -1)] = decodeSegment(parts[i]);
  }
  return params;
};

/** The methods the route table serves at a path (below the base path), in the table's order: a 405's `Allow`. */
export const allowedMethods = (routes: readonly { method: string; path: string }[], path: string): string[] => [
  ...new Set(routes.filter((r) => matchSegments(templateSegments(r.path), path)).map((r) => r.method)),
];
