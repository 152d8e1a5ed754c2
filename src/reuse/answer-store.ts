import type { RequestHandlingType } from '../upstream/inquiry-operation.js';

/**
 * A succeeded answer kept for reuse (docs/api.md §2, "Reusing answers"). Sealed at rest like
 * every stored value; found by its question key only (reuse-key.ts).
 */
export interface StoredAnswer {
  /** The inquiry that paid for it: a reused answer's `reusedFrom`. */
  trackId: string;
  /** Its caller's client: under `company`, `reusedFrom` is shown only to the same client. */
  clientId: string;
  /** When it was stored, on the store's clock (Redis TIME), epoch ms: ages are measured on it. */
  completedAtMs: number;
  /** The upstream `data`, verbatim. */
  data: unknown;
  /** The upstream `meta` the record keeps. */
  upstream?: { code?: number; message?: string };
}

/** What `store` is given: the store stamps `completedAtMs` on its own clock. */
export type AnswerToStore = Omit<StoredAnswer, 'completedAtMs'>;

/** A stored answer and its age (ms, store clock, never negative). */
export interface AgedAnswer {
  answer: StoredAnswer;
  ageMs: number;
}

/** What the caller may take (reuse-allowance.ts turns Cache-Control and the operator's policy into it). */
export interface ReuseAllowance {
  /** A stored answer at most this old is a hit; 0: no stored answer is (max-age=0 only joins). */
  maxAgeMs: number;
  /** An answer up to this much older than maxAgeMs is returned beside a miss or join, for stale-if-error. */
  staleMs: number;
  /** May join an identical inquiry in flight (false: no-cache, a waiter whose leader failed, only-if-cached). */
  join: boolean;
  /** Registers the caller as the inquiry in flight on a miss (false when it will send nothing: only-if-cached). */
  lead: boolean;
}

/** The caller, should it become the inquiry in flight: its trackId and its deadline (epoch ms, this process's clock). */
export interface Leader {
  trackId: string;
  deadlineMs: number;
}

export type ReuseLookup =
  /** A stored answer within max-age: answer with it, nothing sent. */
  | { result: 'hit'; answer: StoredAnswer; ageMs: number }
  /**
   * An identical inquiry (same question and handling) is in flight: wait for it, looking at its
   * lease again when it ends (`leaseEndsMs`, epoch ms, this process's clock; `leaseLeft`).
   * `stale`: an answer within stale-if-error, if any.
   */
  | { result: 'join'; leader: { trackId: string; leaseEndsMs: number }; stale?: AgedAnswer }
  /**
   * Nothing reusable, nothing joined. `leading`: the caller is now registered as the inquiry in
   * flight (it must `store` or `release`). `storedTooOld`: an answer was stored but was older
   * than allowed (`Cache-Status: fwd=request`). `stale`: one within stale-if-error, if any.
   */
  | { result: 'miss'; leading: boolean; storedTooOld: boolean; stale?: AgedAnswer };

/**
 * The answers kept for reuse and the registry of inquiries in flight, keyed by question (which
 * holds the share partition): Redis (one script per call, redis-answer.store.ts) or in process
 * (memory-answer.store.ts). Failures of Redis are `StoreUnavailableError`; an answer that cannot
 * be opened (its key left the ring, or it was altered) is a miss, never an error.
 */
export abstract class AnswerStore {
  /**
   * In one step: a stored answer within the allowance (`hit`), else the inquiry in flight on
   * the same question and handling (`join`, when allowed), else `miss`, registering `leader` as
   * the inquiry in flight for one lease (`leaseMs`; when allowed and none is): `keepAlive` renews it.
   */
  abstract lookupOrJoin(
    questionKey: string,
    handling: RequestHandlingType,
    allowance: ReuseAllowance,
    leader: Leader,
  ): Promise<ReuseLookup>;

  /**
   * Keeps a succeeded answer for `ttlSeconds` (the operator's maxAgeSeconds), newest wins, and
   * ends the registration of `answer.trackId` in flight on (question, handling) if it is still
   * its own. Returns the store-clock time it was stamped with.
   */
  abstract store(
    questionKey: string,
    handling: RequestHandlingType,
    answer: AnswerToStore,
    ttlSeconds: number,
  ): Promise<{ completedAtMs: number }>;

  /** Ends the registration in flight of a leader that failed, only if it is still its own. True when it was. */
  abstract release(questionKey: string, handling: RequestHandlingType, trackId: string): Promise<boolean>;

  /** Extends `trackId`'s registration by one lease (`leaseMs`), only if it is still its own. True when it was. */
  abstract renew(
    questionKey: string,
    handling: RequestHandlingType,
    trackId: string,
    deadlineMs: number,
  ): Promise<boolean>;

  /** Milliseconds left of `trackId`'s registration in flight; 0 when it is gone or another's. */
  abstract leaseLeft(questionKey: string, handling: RequestHandlingType, trackId: string): Promise<number>;

  /**
   * Renews a leader's registration every third of a lease while its call runs
   * (test/reuse-path.e2e.spec.ts, 'a leader slower than its lease keeps it renewed: its waiter
   * still collapses onto it'), so that a dead leader's lapses within one lease; never past its
   * deadline (`leaseMs`). It stops at the deadline by itself, or once the registration is no
   * longer its own; the function returned stops it.
   */
  keepAlive(questionKey: string, handling: RequestHandlingType, trackId: string, deadlineMs: number): () => void {
    const timer = setInterval(() => {
      if (Date.now() >= deadlineMs) return clearInterval(timer);
      this.renew(questionKey, handling, trackId, deadlineMs).then(
        (kept) => kept || clearInterval(timer),
        // A renewal that fails lets the lease lapse: the waiters go on alone.
        () => undefined,
      );
    }, LEADER_LEASE_MS / 3);
    timer.unref();
    return () => clearInterval(timer);
  }
}

/** An inquiry in flight is registered for this long at a time, renewed while its call runs (`keepAlive`). */
export const LEADER_LEASE_MS = 3_000;

/** One lease for a deadline: LEADER_LEASE_MS, cut to what is left before the deadline, at least 1 ms. */
export function leaseMs(deadlineMs: number, now: number): number {
  const left = Math.ceil(deadlineMs - now);
  return Number.isFinite(left) ? Math.min(Math.max(left, 1), LEADER_LEASE_MS) : 1;
}
