/**
 * How long an inquiry can hold its Idempotency-Key and keep its record `pending`, from the
 * upstream timeouts: the lower bound of IDEMPOTENCY_TTL_SECONDS (load-config.ts), so a claim or
 * a record never expires while its inquiry may still run. The inquiry layer uses the same
 * numbers: the lease in idempotency.service.ts, the deadline in inquiry-deadline.ts (whose spec
 * checks they agree).
 */
interface UpstreamTimeouts {
  timeoutMs: number;
  advancedTimeoutMs: number;
}

/**
 * The longest a live request can hold an Idempotency-Key, with room to spare: waiting for a
 * token renewal (lock TTL: 2 timeouts + 2 s, plus the winner's two GetToken calls), the
 * inquiry, up to two renewals after a 401 and the retry: about 8 timeouts + 7 s. A claim
 * still in flight after 10 timeouts + 30 s belongs to a request that died.
 */
export function inFlightLeaseMs(timeoutMs: number): number {
  return timeoutMs * 10 + 30_000;
}

/**
 * An `advanced` inquiry's deadline from its record's creation (two calls and the token wait,
 * inquiry-deadline.ts) plus the 2 s margin before a `pending` record reads `unknown`.
 */
export function longestDeadlineMs({ timeoutMs, advancedTimeoutMs }: UpstreamTimeouts): number {
  return 2 * advancedTimeoutMs + 4 * timeoutMs + 2_000 + 2_000;
}

/** The shortest IDEMPOTENCY_TTL_SECONDS these timeouts allow. */
export function minimumIdempotencyTtlSeconds(upstream: UpstreamTimeouts): number {
  return Math.ceil(Math.max(inFlightLeaseMs(upstream.timeoutMs), longestDeadlineMs(upstream)) / 1000);
}
