import type { UpstreamTokenData } from '../upstream/upstream-envelope.js';
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

/**
 * A GetToken answer as the record to keep, its lifetimes counted from `requestedAt` (when the
 * request was sent, so our idea of expiry is never late).
 */
export function recordOfGrant(
  data: UpstreamTokenData,
  requestedAt: number,
  skewMs: number,
): Omit<TokenRecord, 'generation'> {
  // Used at most as long as its refresh token lives (a year, §2.3): a longer lifetime (or a
  // number that is no sane lifetime) is cut there, never trusted to schedule the renewal.
  const lifetimeMs = Math.min(data.expiresTn * 1000, DEFAULT_REFRESH_LIFETIME_MS);
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
