import type { ReuseAllowance } from './answer-store.js';
import type { ReuseDirectives } from './cache-control.js';
import type { ReusePolicy } from '../config/reuse-config.js';

/**
 * What a caller may take, from its directives and the operator's policy (docs/api.md §2): an
 * answer at most `max-age` old and never older than `maxAgeSeconds`; under `stale-if-error`,
 * up to that much older, still within `maxAgeSeconds`. Undefined: nothing reused, nothing
 * joined (no `max-age` nor `stale-if-error`, or `no-cache`). `only-if-cached` neither joins nor
 * leads: it takes a stored answer or nothing.
 */
export function reuseAllowance(directives: ReuseDirectives, policy: ReusePolicy): ReuseAllowance | undefined {
  if (directives.maxAgeSeconds === undefined) return undefined;
  const ceiling = policy.maxAgeSeconds * 1000;
  const maxAgeMs = Math.min(directives.maxAgeSeconds * 1000, ceiling);
  const staleMs = Math.max(
    Math.min((directives.maxAgeSeconds + directives.staleIfErrorSeconds) * 1000, ceiling) - maxAgeMs,
    0,
  );
  const takesStoredOnly = directives.onlyIfCached;
  return { maxAgeMs, staleMs, join: !takesStoredOnly, lead: !takesStoredOnly };
}
