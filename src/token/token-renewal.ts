import { randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { Logger } from '@nestjs/common';
import type { GatewayMetrics } from '../observability/metrics.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import type { UpstreamTokenData } from '../upstream/upstream-envelope.js';
import type { TokenGrant, UpstreamClient } from '../upstream/upstream.client.js';
import { UpstreamError } from '../upstream/upstream-error.js';
import type { Clock } from './clock.js';
import { recordOfGrant, type TokenRecord } from './token-record.js';
import { toTokenFailure } from './token-failure.js';
import { TOKEN_FAILURE_REASONS, TokenUnavailableError } from './token-unavailable.error.js';
import type { TokenStore } from './token.store.js';

const MIN_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 60_000;
/** How often a replica waiting for another's renewal re-reads the store, in case the announcement is missed. */
export const ANNOUNCEMENT_POLL_MS = 250;
/** A first renewal's wait for a store still connecting: a constant, so a start without Redis is late by this at most. */
export const FIRST_STORE_WAIT_MS = 2_000;

/** Only GetToken: the renewal never makes an inquiry. */
export type TokenIssuer = Pick<UpstreamClient, 'getToken'>;
export type RenewalMetrics = Pick<GatewayMetrics, 'tokenRenewals' | 'tokenRenewalFailures' | 'tokenAdoptions'>;

export interface RenewalTiming {
  /** Renew this long before the access token expires (TOKEN_REFRESH_SKEW_SECONDS). */
  refreshSkewMs: number;
  /** How long the renewal lock is held at most. */
  lockTtlMs: number;
}

/** The renewal timing of a configuration. */
export function renewalTiming(token: { refreshSkewSeconds: number }, upstream: { timeoutMs: number }): RenewalTiming {
  return {
    refreshSkewMs: token.refreshSkewSeconds * 1000,
    // A renewal may take two GetToken calls (refresh token, then credentials): the lock
    // must outlive both, or a second replica could start a renewal of its own.
    lockTtlMs: upstream.timeoutMs * 2 + 2000,
  };
}

/**
 * The renewal protocol every replica follows (docs/architecture.md, "Token lifecycle"):
 *
 * 1. A shared record that is not yet due for renewal is adopted: no call.
 * 2. Otherwise the deployment's backoff is obeyed: within it, fail at once with its retry time.
 * 3. The replica that wins the store lock renews (GetToken: the refresh token first, §4.1
 *    variant B; credentials when it is rejected, §4.1 rule 4), writes the record only while it
 *    still holds the lock, and announces the new generation. A failure is written as the
 *    deployment's backoff: N replicas make one GetToken call per failure round, not N.
 * 4. The others wait for the announcement, re-reading the store every 250 ms in case it is
 *    missed, and give up when the lock's lifetime has passed without a renewal.
 * 5. When the store is down, the replica renews on its own; the store catches up later.
 *
 * Holds no token: TokenProvider keeps the one in use and makes renewal single-flight in the process.
 */
export class TokenRenewal {
  private readonly logger = new Logger(TokenRenewal.name);
  private readonly instanceId = randomUUID();
  /** Fires 'renewed' when the store announces a new generation (pub/sub), and on stop. */
  private readonly announcements = new EventEmitter();
  private failure: { error: TokenUnavailableError; retryAt: number; attempts: number } | null = null;
  private lockAttempts = 0;
  private storeDegraded = false;
  private stopped = false;

  constructor(
    private readonly store: TokenStore,
    private readonly upstream: TokenIssuer,
    private readonly metrics: RenewalMetrics,
    private readonly clock: Clock,
    private readonly timing: RenewalTiming,
    /** 0 ≤ x < 1, for the backoff's jitter. */
    private readonly random: () => number = Math.random,
  ) {
    this.announcements.setMaxListeners(0);
    // The series the renewal alert reads exist at 0 from start-up: a renewal failing before the
    // first scrape is then still a rise for increase() (docs/operations.md, "Metrics").
    for (const reason of TOKEN_FAILURE_REASONS) metrics.tokenRenewalFailures.inc({ reason }, 0);
    for (const grant of ['refresh', 'credentials'] as const) {
      for (const result of ['success', 'failure'] as const) metrics.tokenRenewals.inc({ grant, result }, 0);
    }
  }

  /** Listens for other replicas' announcements (a store that cannot subscribe is polled instead). */
  async start(): Promise<void> {
    await this.store.onRenewed(() => this.announcements.emit('renewed')).catch(() => undefined);
  }

  /** Shutdown: whoever waits for an announcement stops waiting. */
  stop(): void {
    this.stopped = true;
    this.announcements.emit('renewed');
  }

  /**
   * A token pair that is not yet due for renewal. `held`: the pair this process holds, whose
   * refresh token is used when the store has none. Throws `TokenUnavailableError` (with
   * `retryAt` while renewals back off).
   */
  async renew(held: TokenRecord | null): Promise<TokenRecord> {
    const shared = (await this.renewShared(held)) ?? (await this.renewSharedOnceConnected(held));
    if (shared) return shared;
    if (!this.storeDegraded)
      this.logger.warn('token store unreachable: renewing in this process only until it returns');
    this.storeDegraded = true;
    return { ...(await this.callUpstream(held)), generation: held?.generation ?? 0 };
  }

  /** Rules 1–4 through the store; undefined when the store cannot be reached (rule 5 follows). */
  private async renewShared(held: TokenRecord | null): Promise<TokenRecord | undefined> {
    const renewed = await this.renewThroughStore(held).catch((error: unknown) => {
      if (error instanceof StoreUnavailableError) return undefined;
      throw error;
    });
    if (!renewed) return undefined;
    if (this.storeDegraded) this.logger.log('token store reachable again: renewal is shared across replicas');
    this.storeDegraded = false;
    return renewed;
  }

  /**
   * This process's first token while its store is still connecting (replicas starting together):
   * waits for the store, once and at most FIRST_STORE_WAIT_MS, so that they share one renewal
   * instead of each taking its own (token-renewal.spec.ts, "waits for a store that is still connecting").
   */
  private async renewSharedOnceConnected(held: TokenRecord | null): Promise<TokenRecord | undefined> {
    if (held !== null || this.storeDegraded) return undefined;
    if (!(await this.store.whenReachable(FIRST_STORE_WAIT_MS).catch(() => false))) return undefined;
    return this.renewShared(held);
  }

  /** Rules 1–4: adopt a fresh shared record, or win the lock and renew, or wait for whoever won it. */
  private async renewThroughStore(held: TokenRecord | null): Promise<TokenRecord> {
    const giveUpAt = this.clock.now() + this.timing.lockTtlMs + ANNOUNCEMENT_POLL_MS;
    for (;;) {
      const shared = await this.store.read();
      if (shared && this.isFresh(shared)) return this.adopt(shared, held);
      await this.followSharedBackoff();

      const owner = `${this.instanceId}:${++this.lockAttempts}`;
      if (await this.store.tryLock(owner, this.timing.lockTtlMs)) {
        try {
          return await this.renewUnderLock(owner, held);
        } finally {
          await this.store.unlock(owner).catch(() => undefined);
        }
      }

      if (this.stopped || this.clock.now() > giveUpAt) {
        throw new TokenUnavailableError('upstream_failure', 'no token renewal finished in time');
      }
      await this.waitForAnnouncement();
    }
  }

  private async renewUnderLock(owner: string, held: TokenRecord | null): Promise<TokenRecord> {
    // Re-read under the lock: a renewal may have finished between our read and the lock.
    const latest = await this.store.read();
    if (latest && this.isFresh(latest)) return this.adopt(latest, held);
    await this.followSharedBackoff();
    const generation = latest?.generation ?? 0;

    const renewed = await this.callUpstreamForEveryone(latest ?? held);
    // A success ends the deployment's backoff (one DEL per renewal, every few hours).
    await this.store.clearBackoff().catch(() => undefined);
    let written: number | null;
    try {
      written = await this.store.writeIfOwner(owner, generation, renewed, renewed.refreshExpiresAt - this.clock.now());
    } catch (error) {
      // The store failed after the upstream issued the pair: keep it (a second GetToken
      // here could be refused, if the upstream rotates refresh tokens).
      if (!(error instanceof StoreUnavailableError)) throw error;
      this.logger.warn('token renewed, but the store could not be written; holding it in this process');
      return { ...renewed, generation };
    }
    if (written === null) {
      // The lock expired under us (the upstream was slower than the lock TTL). Our token
      // is valid all the same; keep it locally and let the newer shared record win later.
      this.logger.warn('token renewal outlived its lock; not overwriting the shared record');
      return { ...renewed, generation };
    }
    await this.store.publishRenewed(written).catch(() => undefined);
    return { ...renewed, generation: written };
  }

  /** One GetToken round for the whole deployment: its failure becomes everyone's backoff. */
  private async callUpstreamForEveryone(base: TokenRecord | null): Promise<Omit<TokenRecord, 'generation'>> {
    try {
      return await this.callUpstream(base);
    } catch (error) {
      if (error instanceof TokenUnavailableError && this.failure?.error === error) {
        const { attempts, retryAt } = this.failure;
        await this.store
          .writeBackoff({ reason: error.reason, attempts, retryAt }, retryAt - this.clock.now() + MAX_BACKOFF_MS)
          .catch(() => undefined);
      }
      throw error;
    }
  }

  /**
   * The deployment's renewal backoff (written by whichever replica's renewal failed last):
   * within it, fail at once with the time of the next attempt; otherwise carry on.
   */
  private async followSharedBackoff(): Promise<void> {
    const backoff = await this.store.readBackoff();
    if (!backoff) {
      if (this.failure && !this.storeDegraded) this.failure = null;
      return;
    }
    if (this.failure?.retryAt !== backoff.retryAt) {
      const error = new TokenUnavailableError(backoff.reason);
      error.retryAt = backoff.retryAt;
      this.failure = { error, retryAt: backoff.retryAt, attempts: backoff.attempts };
    }
    if (this.clock.now() < backoff.retryAt) throw this.failure.error;
  }

  private async waitForAnnouncement(): Promise<void> {
    const done = new AbortController();
    const announced = once(this.announcements, 'renewed', { signal: done.signal }).catch(() => undefined);
    await Promise.race([announced, this.clock.sleep(ANNOUNCEMENT_POLL_MS, done.signal)]);
    done.abort();
  }

  /** Another replica's renewal, taken over as is (counted when it replaces the token held). */
  private adopt(shared: TokenRecord, held: TokenRecord | null): TokenRecord {
    if (shared.accessToken !== held?.accessToken) this.metrics.tokenAdoptions.inc();
    return shared;
  }

  /** A record is fresh while renewal is not yet due, so adopting it needs no further call. */
  private isFresh(record: TokenRecord): boolean {
    return this.clock.now() < record.renewAt;
  }

  /**
   * One renewal against the upstream. After a failure, further attempts wait out an
   * exponential backoff instead of looping.
   */
  private async callUpstream(base: TokenRecord | null): Promise<Omit<TokenRecord, 'generation'>> {
    const requestedAt = this.clock.now();
    if (this.failure && requestedAt < this.failure.retryAt) throw this.failure.error;
    try {
      const data = await this.getToken(base, requestedAt);
      this.failure = null;
      return recordOfGrant(data, requestedAt, this.timing.refreshSkewMs);
    } catch (error) {
      throw this.backOff(toTokenFailure(error));
    }
  }

  /** The grant choice: the refresh token while it lives, credentials when it is rejected or absent. */
  private async getToken(base: TokenRecord | null, now: number): Promise<UpstreamTokenData> {
    if (base?.refreshToken && base.refreshExpiresAt > now) {
      try {
        return await this.grant({ kind: 'refresh', refreshToken: base.refreshToken });
      } catch (error) {
        // 400/401: the refresh token is invalid, expired or revoked (§4.1 rule 4, §7.1).
        const revoked =
          error instanceof UpstreamError &&
          error.kind === 'rejected' &&
          (error.httpStatus === 401 || error.httpStatus === 400);
        if (!revoked) throw error;
        this.logger.log('refresh token rejected by the upstream; renewing with credentials');
      }
    }
    return this.grant({ kind: 'credentials' });
  }

  private async grant(grant: TokenGrant): Promise<UpstreamTokenData> {
    try {
      const data = await this.upstream.getToken(grant);
      this.metrics.tokenRenewals.inc({ grant: grant.kind, result: 'success' });
      return data;
    } catch (error) {
      this.metrics.tokenRenewals.inc({ grant: grant.kind, result: 'failure' });
      throw error;
    }
  }

  /** Exponential, capped, with ±20 % jitter (decided once, by the replica that tried). */
  private backOff(failure: TokenUnavailableError): TokenUnavailableError {
    this.metrics.tokenRenewalFailures.inc({ reason: failure.reason });
    const attempts = (this.failure?.attempts ?? 0) + 1;
    const delay = Math.round(
      Math.min(MIN_BACKOFF_MS * 2 ** (attempts - 1), MAX_BACKOFF_MS) * (0.8 + 0.4 * this.random()),
    );
    failure.retryAt = this.clock.now() + delay;
    this.failure = { error: failure, retryAt: failure.retryAt, attempts };
    this.logger.error(
      `token renewal failed (${failure.reason}${failure.upstreamMessage ? `: ${failure.upstreamMessage}` : ''}); next attempt in ${delay} ms`,
    );
    return failure;
  }
}
