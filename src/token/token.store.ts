import type { TokenRecord } from './token-record.js';
import type { TokenFailureReason } from './token-unavailable.error.js';

/**
 * After a failed renewal: why, how many rounds in a row have failed, and when the next attempt
 * may be made (epoch ms). Decided once by the replica that held the lock, obeyed by all.
 */
export interface RenewalBackoff {
  reason: TokenFailureReason;
  attempts: number;
  retryAt: number;
}

/**
 * Where the current upstream token pair is shared between replicas, with the renewal lock
 * that makes renewal single-flight across all of them (issue: foundation §4).
 * Implementations: Redis (any number of replicas) and in-process memory (one replica).
 */
export abstract class TokenStore {
  abstract read(): Promise<TokenRecord | null>;

  /**
   * Resolves true once the store can be reached, false when `timeoutMs` passes first. A store
   * in this process is always reachable.
   */
  whenReachable(timeoutMs: number): Promise<boolean> {
    void timeoutMs;
    return Promise.resolve(true);
  }

  /** `SET NX PX`: true when this owner now holds the renewal lock. */
  abstract tryLock(owner: string, ttlMs: number): Promise<boolean>;

  /** Compare-and-delete: releases the lock only if this owner still holds it. */
  abstract unlock(owner: string): Promise<void>;

  /**
   * Writes a renewed record only while `owner` holds the lock and the stored generation is
   * still `expectedGeneration`; returns the new generation, or null when it did not hold.
   */
  abstract writeIfOwner(
    owner: string,
    expectedGeneration: number,
    record: Omit<TokenRecord, 'generation'>,
    ttlMs: number,
  ): Promise<number | null>;

  /**
   * Marks the access token expired, but only if it is still the current one (a token the
   * upstream rejected with 401). The refresh token is kept for the renewal that follows.
   */
  abstract invalidateIfCurrent(accessToken: string): Promise<boolean>;

  /** The current renewal backoff, or null when the last renewal succeeded (or long ago failed). */
  abstract readBackoff(): Promise<RenewalBackoff | null>;

  /** Written by the lock holder after a failed renewal; kept `ttlMs` so the next failure counts on. */
  abstract writeBackoff(backoff: RenewalBackoff, ttlMs: number): Promise<void>;

  /** A renewal succeeded: every replica may renew again at once when it needs to. */
  abstract clearBackoff(): Promise<void>;

  /** Announces a new generation to every replica. */
  abstract publishRenewed(generation: number): Promise<void>;

  /** Calls `listener` whenever any replica announces a new generation. */
  abstract onRenewed(listener: (generation: number) => void): Promise<void>;
}
