import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors as joseErrors,
  type FetchImplementation,
  type FlattenedJWSInput,
  type CompactJWSHeaderParameters,
  type JWTVerifyGetKey,
  type RemoteJWKSet,
} from 'jose';

/**
 * `ok`: the last fetch of the JWKS succeeded. `stale`: the identity provider cannot be reached and
 * tokens are verified with the last keys it served (within `maxStaleMs`). `unavailable`: it cannot
 * be reached and no usable keys are left, so no JWT can be checked.
 */
export type JwksState = 'ok' | 'stale' | 'unavailable';

/** No JWT can be checked right now: the caller gets 503 `auth_unavailable`, not 401. */
export class JwksUnavailableError extends Error {
  constructor() {
    super('the JWKS cannot be fetched and no usable keys are cached');
    this.name = 'JwksUnavailableError';
  }
}

export interface JwksKeySourceOptions {
  /** How long fetched keys count as current; after that they are fetched again (before use). */
  cacheMs: number;
  /**
   * How long past `cacheMs` the last keys still verify tokens while the identity provider is
   * unreachable. A key the provider withdrew in that time (rotation, compromise) is still
   * accepted, so this bounds that exposure; 0 turns stale use off.
   */
  maxStaleMs: number;
  /** After a failed fetch, the next is tried no sooner than this (requests never queue on a dead IdP). */
  retryMs: number;
  /** Per fetch. */
  timeoutMs: number;
  /** An unknown `kid` refetches the set (key rotation), at most once per this interval. */
  cooldownMs: number;
  /** Told of every state change, with the failure that caused it (for logs and metrics). */
  onStateChange?: (state: JwksState, previous: JwksState | 'initial', cause?: unknown) => void;
  /** For tests. */
  now?: () => number;
  fetch?: FetchImplementation;
}

/**
 * JWT verification keys from the identity provider's JWKS URL, fetched with jose (timeouts, no
 * redirects, key selection by `alg`/`kid`), with the one thing jose's remote set does not do:
 * when a refetch fails, it keeps verifying with the last good keys for a bounded time instead of
 * failing every token, and it tells "cannot check" (JwksUnavailableError) from "bad token".
 */
export class JwksKeySource {
  private readonly remote: RemoteJWKSet;
  private readonly now: () => number;
  private local?: JWTVerifyGetKey;
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private failedAt = Number.NEGATIVE_INFINITY;
  private lastFailure: unknown;
  private current: JwksState | 'initial' = 'initial';

  constructor(
    url: URL,
    private readonly options: JwksKeySourceOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.remote = createRemoteJWKSet(url, {
      timeoutDuration: options.timeoutMs,
      // This class decides when to fetch; jose's own freshness rules never fetch on their own.
      cacheMaxAge: Number.POSITIVE_INFINITY,
      cooldownDuration: Number.POSITIVE_INFINITY,
      ...(options.fetch ? { [customFetch]: options.fetch } : {}),
    });
  }

  get state(): JwksState | 'initial' {
    return this.current;
  }

  /** Seconds since the keys in use were fetched; undefined before the first fetch. */
  get keysAgeSeconds(): number | undefined {
    return Number.isFinite(this.fetchedAt) ? (this.now() - this.fetchedAt) / 1000 : undefined;
  }

  /** The key resolver for jose's `jwtVerify`. */
  readonly getKey: JWTVerifyGetKey = async (header: CompactJWSHeaderParameters, token: FlattenedJWSInput) => {
    if (this.now() - this.fetchedAt >= this.options.cacheMs) await this.refresh();
    const keys = this.usableKeys();
    this.settleState();
    if (!keys) throw new JwksUnavailableError();
    try {
      return await keys(header, token);
    } catch (error) {
      // An unknown key id may be a key the provider has just rotated in: fetch again, at most once
      // per cooldown. If the provider is down meanwhile, the token cannot be checked either way.
      if (!(error instanceof joseErrors.JWKSNoMatchingKey)) throw error;
      if (this.current !== 'ok') throw new JwksUnavailableError();
      if (this.now() - this.fetchedAt < this.options.cooldownMs) throw error;
      await this.refresh();
      this.settleState();
      if (this.current !== 'ok') throw new JwksUnavailableError();
      return this.local!(header, token);
    }
  };

  private async refresh(): Promise<void> {
    if (this.now() - this.failedAt < this.options.retryMs) return;
    try {
      // Concurrent callers share one fetch (jose keeps a single pending request).
      await this.remote.reload();
      this.fetchedAt = this.now();
      this.failedAt = Number.NEGATIVE_INFINITY;
      this.local = createLocalJWKSet(this.remote.jwks()!);
    } catch (error) {
      this.failedAt = this.now();
      this.lastFailure = error;
    }
  }

  private usableKeys(): JWTVerifyGetKey | undefined {
    const age = this.now() - this.fetchedAt;
    if (!this.local) return undefined;
    if (age < this.options.cacheMs) return this.local;
    return age < this.options.cacheMs + this.options.maxStaleMs ? this.local : undefined;
  }

  private settleState(): void {
    const next: JwksState = this.failedAt < this.fetchedAt ? 'ok' : this.usableKeys() ? 'stale' : 'unavailable';
    if (next === this.current) return;
    const previous = this.current;
    this.current = next;
    this.options.onStateChange?.(next, previous, next === 'ok' ? undefined : this.lastFailure);
  }
}

/** A short, value-free description of a fetch failure for logs: error code or name only. */
export function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown error';
  const code = (error as { code?: unknown }).code;
  const causeCode = (error.cause as { code?: unknown } | undefined)?.code;
  return [typeof code === 'string' ? code : error.name, typeof causeCode === 'string' ? causeCode : undefined]
    .filter(Boolean)
    .join(' ');
}
