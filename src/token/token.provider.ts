import { randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { knownSecrets } from '../observability/known-secrets.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import type { UpstreamTokenData } from '../upstream/upstream-envelope.js';
import { UpstreamClient, type TokenGrant } from '../upstream/upstream.client.js';
import { UpstreamError } from '../upstream/upstream-error.js';
import { DEFAULT_REFRESH_LIFETIME_MS, usableUntil, type TokenRecord } from './token-record.js';
import { toTokenFailure } from './token-failure.js';
import { TokenUnavailableError } from './token-unavailable.error.js';
import { TokenStore } from './token.store.js';

/** The token this process holds, with the moment it stops being safe to send. */
interface HeldToken extends TokenRecord {
  usableUntil: number;
}

const MIN_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 60_000;
const POLL_INTERVAL_MS = 250;

/**
 * Holds the upstream access token for this process and renews it, once, for everyone.
 *
 * Two levels: the token in memory (read on every request, no I/O) and the shared record
 * in the TokenStore that every replica reads. Renewal starts `TOKEN_REFRESH_SKEW_SECONDS`
 * before expiry, in the background, so requests keep using the current token meanwhile.
 * It is single-flight twice over: one promise per process, and across replicas a store
 * lock whose winner calls GetToken while the others wait for its announcement
 * (docs/upstream-api.md §5.5: a token is kept until it expires, not fetched per call).
 * With the refresh token first (§4.1 variant B), credentials when it is rejected (§4.1
 * rule 4: a password change invalidates every refresh token). If the store is down, the
 * process renews on its own and the store catches up when it returns.
 */
@Injectable()
export class TokenProvider implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(TokenProvider.name);
  private readonly instanceId = randomUUID();
  private readonly skewMs: number;
  private readonly lockTtlMs: number;
  /** Fires 'renewed' when the store announces a new generation (pub/sub). */
  private readonly signals = new EventEmitter();

  private held: HeldToken | null = null;
  private renewal: Promise<HeldToken> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failure: { error: TokenUnavailableError; retryAt: number; attempts: number } | null = null;
  private lockAttempts = 0;
  private storeDegraded = false;
  private shuttingDown = false;
  private firstAttemptFinished = false;
  /** Resolves the first-attempt promise; set before `onApplicationBootstrap` can run. */
  private finishFirstAttempt!: () => void;
  private readonly firstAttempt = new Promise<void>((resolve) => {
    this.finishFirstAttempt = resolve;
  });

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly store: TokenStore,
    private readonly upstream: UpstreamClient,
    private readonly metrics: GatewayMetrics,
  ) {
    this.skewMs = config.get('token', { infer: true }).refreshSkewSeconds * 1000;
    // A renewal may take two GetToken calls (refresh token, then credentials): the lock
    // must outlive both, or a second replica could start a renewal of its own.
    this.lockTtlMs = config.get('upstream', { infer: true }).timeoutMs * 2 + 2000;
    this.signals.setMaxListeners(0);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.store.onRenewed(() => this.signals.emit('renewed')).catch(() => undefined);
    // The first token is fetched in the background; /health/startup waits for the attempt.
    void this.renew()
      .catch((error: Error) => this.logger.error(`first token attempt failed: ${error.message}`))
      .finally(() => {
        this.firstAttemptFinished = true;
        this.finishFirstAttempt();
      });
  }

  onApplicationShutdown(): void {
    this.shuttingDown = true;
    if (this.timer) clearTimeout(this.timer);
    this.signals.emit('renewed');
  }

  /** When the held access token expires (epoch ms), for vgw_token_expiry_seconds; undefined while none is held. */
  get accessTokenExpiresAt(): number | undefined {
    return this.held?.accessExpiresAt;
  }

  /** True once the first token attempt has finished, successfully or not (`/health/startup`). */
  get startupComplete(): boolean {
    return this.firstAttemptFinished;
  }

  /**
   * Resolves when `startupComplete` becomes true: for whoever must wait for the startup
   * probe's condition without polling it (the end-to-end tests do, before counting calls).
   */
  untilStartupComplete(): Promise<void> {
    return this.firstAttempt;
  }

  /** A token that is safe to send now. Waits only when no such token is held. */
  async getAccessToken(): Promise<string> {
    return this.heldAccessToken() ?? (await this.renew()).accessToken;
  }

  /**
   * The held token if it is safe to send now (starting its renewal in the background when
   * due), without waiting: the path of almost every inquiry, kept free of a promise.
   */
  heldAccessToken(): string | undefined {
    const now = Date.now();
    const held = this.held;
    if (!held || now >= held.usableUntil) return undefined;
    if (now >= held.renewAt) this.renewInBackground();
    return held.accessToken;
  }

  /**
   * The upstream answered 401 to `rejectedToken`: expire it here and in the store (only if
   * it is still the current one), then renew once, single-flight, and return the new token.
   */
  async renewAfterRejection(rejectedToken: string): Promise<string> {
    if (this.held?.accessToken === rejectedToken) this.held = { ...this.held, usableUntil: 0, renewAt: 0 };
    await this.store.invalidateIfCurrent(rejectedToken).catch(() => false);
    let fresh = await this.renew();
    // A renewal already in flight may have adopted the very token that was just rejected.
    if (fresh.accessToken === rejectedToken) fresh = await this.renew();
    if (fresh.accessToken === rejectedToken)
      throw new TokenUnavailableError('upstream_failure', 'renewed token was rejected');
    return fresh.accessToken;
  }

  private renewInBackground(): void {
    if (this.renewal || this.shuttingDown) return;
    this.renew().catch((error: Error) => this.logger.warn(`background token renewal failed: ${error.message}`));
  }

  /** In-process single flight: every caller during a renewal shares one promise. */
  private renew(): Promise<HeldToken> {
    this.renewal ??= this.obtainFresh().finally(() => {
      this.renewal = null;
    });
    return this.renewal;
  }

  private async obtainFresh(): Promise<HeldToken> {
    try {
      const token = await this.obtainThroughStore();
      if (this.storeDegraded) this.logger.log('token store reachable again: renewal is shared across replicas');
      this.storeDegraded = false;
      return token;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      if (!this.storeDegraded)
        this.logger.warn('token store unreachable: renewing in this process only until it returns');
      this.storeDegraded = true;
      return this.adopt(await this.callUpstream(this.held), this.held?.generation ?? 0);
    }
  }

  /** Cross-replica single flight: adopt a fresh shared record, or win the lock and renew. */
  private async obtainThroughStore(): Promise<HeldToken> {
    const giveUpAt = Date.now() + this.lockTtlMs + POLL_INTERVAL_MS;
    for (;;) {
      const shared = await this.store.read();
      if (shared && this.isFresh(shared)) return this.adopt(shared, shared.generation, true);
      await this.followSharedBackoff();

      const owner = `${this.instanceId}:${++this.lockAttempts}`;
      if (await this.store.tryLock(owner, this.lockTtlMs)) {
        try {
          // Re-read under the lock: a renewal may have finished between our read and the lock.
          const latest = await this.store.read();
          if (latest && this.isFresh(latest)) return this.adopt(latest, latest.generation, true);
          await this.followSharedBackoff();
          let renewed: Omit<TokenRecord, 'generation'>;
          try {
            renewed = await this.callUpstream(latest ?? this.held);
          } catch (error) {
            // This round failed for the whole deployment: every replica waits for the same next attempt.
            if (error instanceof TokenUnavailableError && this.failure?.error === error) {
              const { attempts, retryAt } = this.failure;
              await this.store
                .writeBackoff({ reason: error.reason, attempts, retryAt }, retryAt - Date.now() + MAX_BACKOFF_MS)
                .catch(() => undefined);
            }
            throw error;
          }
          // A success ends the deployment's backoff (one DEL per renewal, every few hours).
          await this.store.clearBackoff().catch(() => undefined);
          let generation: number | null;
          try {
            generation = await this.store.writeIfOwner(
              owner,
              latest?.generation ?? 0,
              renewed,
              renewed.refreshExpiresAt - Date.now(),
            );
          } catch (error) {
            // Redis failed after the upstream issued the pair: keep it (a second GetToken
            // here could be refused, if the upstream rotates refresh tokens).
            if (!(error instanceof StoreUnavailableError)) throw error;
            this.logger.warn('token renewed, but the store could not be written; holding it in this process');
            return this.adopt(renewed, latest?.generation ?? 0);
          }
          if (generation === null) {
            // The lock expired under us (the upstream was slower than the lock TTL). Our token
            // is valid all the same; keep it locally and let the newer shared record win later.
            this.logger.warn('token renewal outlived its lock; not overwriting the shared record');
            return this.adopt(renewed, latest?.generation ?? 0);
          }
          await this.store.publishRenewed(generation).catch(() => undefined);
          return this.adopt(renewed, generation);
        } finally {
          await this.store.unlock(owner).catch(() => undefined);
        }
      }

      if (this.shuttingDown || Date.now() > giveUpAt) {
        throw new TokenUnavailableError('upstream_failure', 'no token renewal finished in time');
      }
      // Another replica is renewing: wait for its announcement, polling in case it is missed.
      await this.waitForAnnouncement(POLL_INTERVAL_MS);
    }
  }

  /**
   * The deployment's renewal backoff (written by whichever replica's renewal failed last):
   * within it, fail at once with the time of the next attempt; otherwise carry on. So N
   * replicas make one GetToken call per failure round, not N.
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
      this.schedule(backoff.retryAt);
    }
    if (Date.now() < backoff.retryAt) throw this.failure.error;
  }

  private async waitForAnnouncement(ms: number): Promise<void> {
    const abort = AbortSignal.timeout(ms);
    await once(this.signals, 'renewed', { signal: abort }).catch(() => undefined);
  }

  /** A record is fresh while renewal is not yet due, so adopting it needs no further call. */
  private isFresh(record: TokenRecord): boolean {
    return Date.now() < record.renewAt;
  }

  /**
   * One renewal against the upstream: refresh token first, credentials if it is rejected.
   * After a failure, further attempts wait out an exponential backoff instead of looping.
   */
  private async callUpstream(base: TokenRecord | null): Promise<Omit<TokenRecord, 'generation'>> {
    const now = Date.now();
    if (this.failure && now < this.failure.retryAt) throw this.failure.error;
    try {
      let data: UpstreamTokenData | null = null;
      if (base?.refreshToken && base.refreshExpiresAt > now) {
        data = await this.grant({ kind: 'refresh', refreshToken: base.refreshToken }).catch((error: unknown) => {
          // 400/401: the refresh token is invalid, expired or revoked (§4.1 rule 4, §7.1).
          if (
            error instanceof UpstreamError &&
            error.kind === 'rejected' &&
            (error.httpStatus === 401 || error.httpStatus === 400)
          ) {
            this.logger.log('refresh token rejected by the upstream; renewing with credentials');
            return null;
          }
          throw error;
        });
      }
      data ??= await this.grant({ kind: 'credentials' });
      this.failure = null;
      return toRecord(data, now, this.skewMs);
    } catch (error) {
      const failure = toTokenFailure(error);
      this.metrics.tokenRenewalFailures.inc({ reason: failure.reason });
      const attempts = (this.failure?.attempts ?? 0) + 1;
      // Exponential, capped, with ±20 % jitter (decided once, by the replica that tried).
      const delay = Math.round(
        Math.min(MIN_BACKOFF_MS * 2 ** (attempts - 1), MAX_BACKOFF_MS) * (0.8 + 0.4 * Math.random()),
      );
      failure.retryAt = Date.now() + delay;
      this.failure = { error: failure, retryAt: failure.retryAt, attempts };
      this.logger.error(
        `token renewal failed (${failure.reason}${failure.upstreamMessage ? `: ${failure.upstreamMessage}` : ''}); next attempt in ${delay} ms`,
      );
      this.schedule(Date.now() + delay);
      throw failure;
    }
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

  private adopt(record: Omit<TokenRecord, 'generation'>, generation: number, fromStore = false): HeldToken {
    const held: HeldToken = { ...record, generation, usableUntil: usableUntil(record) };
    knownSecrets.add('token', record.accessToken, record.refreshToken);
    const changed = this.held?.accessToken !== held.accessToken;
    this.held = held;
    if (fromStore && changed) this.metrics.tokenAdoptions.inc();
    this.schedule(held.renewAt);
    return held;
  }

  /** One timer per process: renew when due (every replica's timer ends in one renewal). */
  private schedule(at: number): void {
    if (this.shuttingDown) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.renewInBackground(), Math.max(0, at - Date.now()));
    this.timer.unref();
  }
}

function toRecord(data: UpstreamTokenData, requestedAt: number, skewMs: number): Omit<TokenRecord, 'generation'> {
  // Lifetimes count from when the request was sent, so our idea of expiry is never late.
  const lifetimeMs = data.expiresTn * 1000;
  // Renew `skew` before expiry, but never before half-life (short-lived tokens would otherwise
  // be renewed on every request).
  const renewAfterMs = Math.max(lifetimeMs - skewMs, lifetimeMs / 2);
  return {
    accessToken: data.accessToken,
    refreshToken: data.refreshToken,
    accessExpiresAt: requestedAt + lifetimeMs,
    renewAt: requestedAt + renewAfterMs,
    refreshExpiresAt: requestedAt + DEFAULT_REFRESH_LIFETIME_MS,
  };
}
