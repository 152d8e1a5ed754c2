import type { TokenRecord } from './token-record.js';

/**
 * Where the current upstream token pair is shared between replicas, with the renewal lock
 * that makes renewal single-flight across all of them (issue: foundation §4).
 * Implementations: Redis (any number of replicas) and in-process memory (one replica).
 */
export abstract class TokenStore {
  abstract read(): Promise<TokenRecord | null>;

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

  /** Announces a new generation to every replica. */
  abstract publishRenewed(generation: number): Promise<void>;

  /** Calls `listener` whenever any replica announces a new generation. */
  abstract onRenewed(listener: (generation: number) => void): Promise<void>;
}
