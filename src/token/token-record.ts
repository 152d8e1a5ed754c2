/**
 * A token pair as shared by every replica. Times are epoch milliseconds.
 * `generation` grows by one with every write, so a replica can tell a newer record from
 * the one it already holds, and a renewal can refuse to overwrite a newer one.
 */
export interface TokenRecord {
  accessToken: string;
  refreshToken: string;
  /** When the upstream says the access token expires (issue time + expiresTn). */
  accessExpiresAt: number;
  /** When renewal should start: TOKEN_REFRESH_SKEW_SECONDS before expiry (or half-life, if sooner). */
  renewAt: number;
  refreshExpiresAt: number;
  generation: number;
}

/** Refresh tokens live one year by default (§2.3); the upstream does not say so per token. */
export const DEFAULT_REFRESH_LIFETIME_MS = 365 * 24 * 3600 * 1000;

/**
 * The last moment an access token may be sent: a margin before its expiry absorbs the
 * request's own travel time and clock drift between us and the upstream, so that an
 * expired token is never sent. The margin is at most 5 s and at most half the renewal
 * window, so renewal always starts while the token is still usable.
 */
export function usableUntil(record: Pick<TokenRecord, 'accessExpiresAt' | 'renewAt'>): number {
  return record.accessExpiresAt - Math.min(5000, (record.accessExpiresAt - record.renewAt) / 2);
}
