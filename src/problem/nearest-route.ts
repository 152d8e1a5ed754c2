/**
 * The caller API's paths (docs/api.md), for the 404 of a mistyped one: the nearest is named.
 * Only the main port's caller paths: the ops routes (console, admin, metrics, docs) may live on
 * another port (OPS_PORT) and are never revealed here. Kept in step with the served routes by
 * src/problem/nearest-route.spec.ts.
 */
export const CALLER_PATHS = [
  '/v1/kyc/shahkar',
  '/v1/kyc/iban',
  '/v1/inquiries/{trackId}',
  '/v1/budget',
  '/health/live',
  '/health/ready',
  '/health/startup',
];

/** Edits (insert, delete, replace) between two short strings. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}

/** Paths longer than this are nobody's typo: not compared (the loop above is quadratic). */
const MAX_COMPARED_LENGTH = 128;

/**
 * The caller path nearest to `path` (a parameter segment such as `{trackId}` matches any one
 * segment), when it is a plausible typo of it: at most a third of its letters differ.
 */
export function nearestCallerPath(path: string, addedOperations: Iterable<string> = []): string | undefined {
  if (path.length > MAX_COMPARED_LENGTH) return undefined;
  const segments = path.split('/');
  let best: { path: string; edits: number } | undefined;
  // The operations the operator added are caller paths too (docs/api.md §10), bounded by the catalog's 50.
  for (const candidate of [...CALLER_PATHS, ...[...addedOperations].map((name) => `/v1/kyc/${name}`)]) {
    const parts = candidate.split('/');
    if (parts.length !== segments.length) continue;
    const edits = parts.reduce(
      (sum, part, index) => sum + (part.startsWith('{') ? 0 : distance(part, segments[index].toLowerCase())),
      0,
    );
    if (edits <= Math.max(1, Math.floor(candidate.replace(/\{\w+\}/g, '').length / 3)) && (!best || edits < best.edits))
      best = { path: candidate, edits };
  }
  return best?.path;
}
