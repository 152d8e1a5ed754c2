import type { AgedAnswer } from './answer-store.js';
import type { ReuseDirectives } from './cache-control.js';
import type { ReuseQuestion } from './reuse-key.js';

/** The cache's name in `Cache-Status` (RFC 9211 §2): the only member of the list, never a `key` parameter. */
export const CACHE_NAME = 'verification-gateway';

/**
 * What the reuse step learnt of one inquiry that goes on to the upstream (its caller allowed
 * reuse, or asked for its answer to be kept): what the settlement needs to keep or release the
 * answer, to say `Cache-Status`, and to serve a stale answer under `stale-if-error`.
 */
export interface ReuseInFlight {
  question: ReuseQuestion;
  directives: ReuseDirectives;
  /** Registered as the inquiry in flight on its question: the answer's store, or a release, ends it. */
  leading: boolean;
  /** Sent although an answer may be held: one was, but too old (`fwd=request`), or `no-cache` said so. */
  forwardedByRequest: boolean;
  /** An answer within max-age + stale-if-error, as measured at the lookup, if any. */
  stale?: StaleAnswer;
  /** Stops the renewal of its registration in flight (AnswerStore.keepAlive), when leading. */
  stopLease?: () => void;
  /** A waiter gone on alone: its `pending` record from the join is replaced by its opening's (InquiryBooks.open). */
  replacesJoined?: true;
}

/** A stale answer found at the lookup, with what is needed to age it at the moment it would be served. */
export interface StaleAnswer extends AgedAnswer {
  /** When its age was measured (this process's clock, epoch ms). */
  measuredAt: number;
  /** The caller's max-age, capped by the operator's (ms): `ttl=-<seconds past it>`. */
  maxAgeMs: number;
  /** The oldest it may be served: max-age + stale-if-error, never past the operator's maxAgeSeconds (ms). */
  limitMs: number;
}

/** How an answer came about, for `Cache-Status` (RFC 9211; docs/api.md §2, "Reusing answers"). */
export type CacheOutcome =
  | { kind: 'hit' }
  | { kind: 'collapsed' }
  /** Served under stale-if-error after the upstream answered (`fwdStatus`: its HTTP status, when it gave one). */
  | { kind: 'stale'; fwdStatus?: number }
  /** Served under stale-if-error when nothing was forwarded (breaker open): `hit; ttl=-n`. */
  | { kind: 'stale-unforwarded'; secondsPastMaxAge: number }
  | { kind: 'fresh'; forwardedByRequest: boolean; stored: boolean };

/** The `Cache-Status` value for an outcome. */
export function cacheStatus(outcome: CacheOutcome): string {
  switch (outcome.kind) {
    case 'hit':
      return `${CACHE_NAME}; hit`;
    case 'collapsed':
      return `${CACHE_NAME}; fwd=miss; collapsed`;
    case 'stale':
      return `${CACHE_NAME}; fwd=stale${outcome.fwdStatus !== undefined ? `; fwd-status=${outcome.fwdStatus}` : ''}`;
    case 'stale-unforwarded':
      return `${CACHE_NAME}; hit; ttl=-${outcome.secondsPastMaxAge}`;
    case 'fresh':
      return `${CACHE_NAME}; fwd=${outcome.forwardedByRequest ? 'request' : 'miss'}${outcome.stored ? '; stored' : ''}`;
  }
}

/** `Age` (RFC 9111 §5.1): whole seconds, rounded down. */
export function ageSeconds(ageMs: number): string {
  return String(Math.max(0, Math.floor(ageMs / 1000)));
}

/** The body of a reused answer (docs/api.md §2): the usual success plus `reusedFrom`, unless hidden from this caller. */
export function reusedBody(trackId: string, data: unknown, reusedFrom: string | undefined) {
  return {
    trackId,
    status: 'succeeded' as const,
    data,
    ...(reusedFrom !== undefined ? { reusedFrom } : {}),
  };
}

/**
 * The stale answer as it may be served now (its age grown since the lookup), or undefined once
 * it is older than max-age + stale-if-error (never past the operator's maxAgeSeconds).
 */
export function servableStale(stale: StaleAnswer | undefined, now: number): AgedAnswer | undefined {
  if (!stale) return undefined;
  const ageMs = stale.ageMs + Math.max(0, now - stale.measuredAt);
  return ageMs <= stale.limitMs ? { answer: stale.answer, ageMs } : undefined;
}
