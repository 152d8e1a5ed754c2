import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { knownSecrets } from '../config/known-secrets.js';
import { Clock } from './clock.js';
import { usableUntil, type TokenRecord } from './token-record.js';
import { TokenRenewal } from './token-renewal.js';
import { TokenUnavailableError } from './token-unavailable.error.js';
import { TokenStore } from './token.store.js';

/** The token this process holds, with the moment it stops being safe to send. */
interface HeldToken extends TokenRecord {
  usableUntil: number;
}

/**
 * Holds the upstream access token for this process and has it renewed, once, for everyone.
 *
 * The token in memory is read on every request, with no I/O. Renewal starts
 * `TOKEN_REFRESH_SKEW_SECONDS` before expiry, in the background, so requests keep using the
 * current token meanwhile (docs/upstream-api.md §5.5: a token is kept until it expires, not
 * fetched per call). It is single-flight twice over: one promise per process (here), and one
 * renewal across replicas (TokenRenewal, the protocol behind the store lock).
 */
@Injectable()
export class TokenProvider implements OnApplicationBootstrap {
  private readonly logger = new Logger(TokenProvider.name);
  private held: HeldToken | null = null;
  /** When this process took the token it holds (its own renewal, or another replica's adopted). */
  private heldSince: number | undefined;
  private renewal: Promise<HeldToken> | null = null;
  /** Aborts the pending renewal timer. */
  private timer = new AbortController();
  private shuttingDown = false;
  private firstAttemptFinished = false;
  private firstAttemptSettled!: () => void;
  /** Settles once the first token attempt has finished, successfully or not (startup-settled.ts). */
  readonly firstAttempt = new Promise<void>((resolve) => (this.firstAttemptSettled = resolve));

  constructor(
    private readonly renewals: TokenRenewal,
    private readonly store: TokenStore,
    private readonly clock: Clock,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.renewals.start();
    // The first token is fetched in the background; /health/startup waits for the attempt.
    void this.renew()
      .catch((error: Error) => this.logger.error(`first token attempt failed: ${error.message}`))
      .finally(() => {
        this.firstAttemptFinished = true;
        this.firstAttemptSettled();
      });
  }

  /** A step of the shutdown sequence (src/http/shutdown-sequence.ts): no renewal starts after it. */
  stop(): void {
    this.shuttingDown = true;
    this.timer.abort();
    this.renewals.stop();
  }

  /** When the held access token expires (epoch ms), for vgw_token_expiry_seconds; undefined while none is held. */
  get accessTokenExpiresAt(): number | undefined {
    return this.held?.accessExpiresAt;
  }

  /** When the held token was taken (epoch ms), for the console's status (docs/api.md §6); undefined while none is held. */
  get accessTokenTakenAt(): number | undefined {
    return this.held ? this.heldSince : undefined;
  }

  /** True once the first token attempt has finished, successfully or not (`/health/startup`). */
  get startupComplete(): boolean {
    return this.firstAttemptFinished;
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
    const now = this.clock.now();
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
    this.renewal ??= this.renewals
      .renew(this.held)
      .then(
        (renewed) => this.adopt(renewed),
        (error: unknown) => {
          // While renewals back off, the next attempt is made when the backoff ends.
          if (error instanceof TokenUnavailableError && error.retryAt !== undefined) this.schedule(error.retryAt);
          throw error;
        },
      )
      .finally(() => {
        this.renewal = null;
      });
    return this.renewal;
  }

  private adopt(record: TokenRecord): HeldToken {
    const held: HeldToken = { ...record, usableUntil: usableUntil(record) };
    knownSecrets.add('token', record.accessToken, record.refreshToken);
    this.held = held;
    this.heldSince = this.clock.now();
    this.schedule(held.renewAt);
    return held;
  }

  /** One timer per process: renew when due (every replica's timer ends in one renewal). */
  private schedule(at: number): void {
    if (this.shuttingDown) return;
    this.timer.abort();
    const timer = (this.timer = new AbortController());
    void this.clock.sleep(at - this.clock.now(), timer.signal).then(() => {
      if (!timer.signal.aborted) this.renewInBackground();
    });
  }
}
