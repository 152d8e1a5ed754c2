/** The longest wait between two attempts, however many failed. */
export const MAX_RETRY_DELAY_MS = 3_600_000;

/**
 * When a failed attempt is tried again (docs/api.md §9): `firstRetryMs` doubled per attempt, at
 * most an hour, with jitter (between half and all of it: replicas and endpoints that failed
 * together do not retry together), never past the end of the retry period; `dead` once the
 * period (24 h by default) has run out. `random` is injected for the unit specs.
 */
export function nextAttempt(
  failure: { attempt: number; retrySince: number; now: number },
  settings: { firstRetryMs: number; retryForMs: number },
  random: () => number = Math.random,
): { dead: true } | { dead: false; delayMs: number } {
  const left = failure.retrySince + settings.retryForMs - failure.now;
  if (left <= 0) return { dead: true };
  const exponent = Math.min(Math.max(failure.attempt - 1, 0), 30);
  const ceiling = Math.min(MAX_RETRY_DELAY_MS, settings.firstRetryMs * 2 ** exponent);
  const delayMs = Math.round(ceiling / 2 + (random() * ceiling) / 2);
  return { dead: false, delayMs: Math.min(delayMs, left) };
}
