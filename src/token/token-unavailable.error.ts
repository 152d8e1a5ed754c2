/**
 * No usable upstream token could be had. The reason tells operators what to fix; callers
 * only ever see 503 `upstream_unavailable` (docs/api.md §3).
 */
export const TOKEN_FAILURE_REASONS = [
  'password_not_set',
  'credentials_rejected',
  'account_disabled',
  'upstream_failure',
] as const;
export type TokenFailureReason = (typeof TOKEN_FAILURE_REASONS)[number];

export class TokenUnavailableError extends Error {
  /** When the next renewal attempt may be made (epoch ms), while renewals back off. */
  retryAt?: number;

  constructor(
    readonly reason: TokenFailureReason,
    /** The upstream's own message (§7.1), never a secret. */
    readonly upstreamMessage?: string,
  ) {
    super(`upstream token unavailable: ${reason}${upstreamMessage ? ` (${upstreamMessage})` : ''}`);
    this.name = 'TokenUnavailableError';
  }
}
