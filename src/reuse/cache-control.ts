import { ProblemException } from '../problem/problem.js';
import { CACHE_CONTROL_HEADER } from '../vocabulary/headers.js';

/** Seconds above this are taken as this (RFC 9111 §1.2.2: delta-seconds beyond 2^31). */
export const MAX_DELTA_SECONDS = 2 ** 31;

/**
 * What a request's `Cache-Control` asks of reuse (docs/api.md §2, "Reusing answers"), with the
 * contract's readings already applied: `stale-if-error` without `max-age` implies `max-age=0`,
 * and `no-cache` turns reuse off (it wins over `max-age` and never joins).
 */
export interface ReuseDirectives {
  /**
   * How old a reused answer may be, in seconds; undefined: nothing reused and nothing joined
   * (no `max-age`, or `no-cache`). 0 joins an identical inquiry in flight only.
   */
  maxAgeSeconds?: number;
  /** How much older still an answer may be when the fresh inquiry fails upstream (RFC 5861); 0 when absent. */
  staleIfErrorSeconds: number;
  /** The caller sent `max-age` or `stale-if-error` and not `no-store`: its fresh answer is kept for reuse. */
  keep: boolean;
  /** `no-cache`: a fresh inquiry, never a join. */
  noCache: boolean;
  /** `no-store`: nothing kept for reuse (the record, the ledger and idempotent replays are untouched). */
  noStore: boolean;
  /** `only-if-cached`: with nothing reusable, 504 `not_cached`, nothing sent. */
  onlyIfCached: boolean;
}

/**
 * RFC 9111 §5.2: directives are comma-separated (several header lines count as one list), each
 * `name [= token / quoted-string]`, names case-insensitive. Unknown directives are ignored; of
 * a directive given twice the first counts (§4.2.1). A `max-age` or `stale-if-error` that is
 * not a non-negative integer is 400 `validation_failed` naming `Cache-Control`: a caller who
 * asked for reuse and misspelt it must not silently pay.
 *
 * Hand-written, as prefer.ts: the grammar is small and unit-tested (cache-control.spec.ts).
 */
export function parseCacheControl(header: string | string[] | undefined): ReuseDirectives {
  const seen = new Map<string, string | undefined>();
  if (header !== undefined) {
    for (const directive of splitDirectives(Array.isArray(header) ? header.join(',') : header)) {
      const equals = directive.indexOf('=');
      const name = (equals < 0 ? directive : directive.slice(0, equals)).trim().toLowerCase();
      if (name === '') continue;
      const value = equals < 0 ? undefined : unquote(directive.slice(equals + 1).trim());
      if (name === 'max-age' || name === 'stale-if-error') deltaSeconds(name, value);
      if (!seen.has(name)) seen.set(name, value);
    }
  }
  const maxAge = seen.has('max-age') ? deltaSeconds('max-age', seen.get('max-age')) : undefined;
  const staleIfError = seen.has('stale-if-error')
    ? deltaSeconds('stale-if-error', seen.get('stale-if-error'))
    : undefined;
  const noCache = seen.has('no-cache');
  const noStore = seen.has('no-store');
  const asked = maxAge ?? (staleIfError !== undefined ? 0 : undefined);
  return {
    ...(asked !== undefined && !noCache ? { maxAgeSeconds: asked } : {}),
    staleIfErrorSeconds: staleIfError ?? 0,
    keep: asked !== undefined && !noStore,
    noCache,
    noStore,
    onlyIfCached: seen.has('only-if-cached'),
  };
}

/** Splits on commas outside quoted strings (a quoted value may hold a comma or an escaped quote). */
function splitDirectives(list: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (quoted && c === '\\' && i + 1 < list.length) {
      current += c + list[++i];
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === ',' && !quoted) {
      parts.push(current);
      current = '';
    } else current += c;
  }
  parts.push(current);
  return parts;
}

function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"')
    ? value.slice(1, -1).replace(/\\(.)/g, '$1')
    : value;
}

/** A delta-seconds value (RFC 9111 §1.2.2), capped at 2^31; anything else is the caller's error. */
function deltaSeconds(name: string, value: string | undefined): number {
  if (value === undefined || !/^\d+$/.test(value)) {
    throw ProblemException.validation(
      [{ field: CACHE_CONTROL_HEADER, message: `${name} must be a whole number of seconds, 0 or more` }],
      `The ${CACHE_CONTROL_HEADER} header is invalid.`,
    );
  }
  // More than ten digits is beyond 2^31 whatever they are; Number() is exact below that.
  return value.replace(/^0+(?=\d)/, '').length > 10 ? MAX_DELTA_SECONDS : Math.min(Number(value), MAX_DELTA_SECONDS);
}
