import { ProblemException, type ProblemBody, type ProblemCode } from './problem.js';

const TRACK_ID = '3f0c1c9e-8d2a-4c55-9a4e-2b7f1f0c6d11';

/**
 * One example per code for the OpenAPI document, built by `ProblemException.toBody()` so the
 * examples have exactly the shape the gateway sends. Details are those of a typical occurrence.
 */
const EXAMPLES: Record<ProblemCode, ProblemException> = {
  validation_failed: ProblemException.validation([
    { field: 'nationalCode', message: 'must be a 10-digit Iranian national code with a valid check digit' },
    { field: 'trackId', message: 'may not be sent; the gateway stamps the trackId' },
  ]),
  unauthenticated: new ProblemException('unauthenticated', 'The credential is not valid.'),
  forbidden: new ProblemException('forbidden', 'The credential lacks the scope kyc:advanced.'),
  not_found: new ProblemException('not_found', 'No inquiry with this trackId.'),
  method_not_allowed: new ProblemException('method_not_allowed', 'GET is not served here; this path serves POST.', {
    headers: { allow: 'POST' },
  }),
  request_timeout: new ProblemException('request_timeout', 'The request was not received in time.'),
  headers_too_large: new ProblemException('headers_too_large', 'The request headers are larger than allowed.'),
  idempotency_key_in_use: new ProblemException(
    'idempotency_key_in_use',
    'A request with this Idempotency-Key is still in progress.',
    { trackId: TRACK_ID },
  ),
  reconciliation_changed: new ProblemException(
    'reconciliation_changed',
    'The ledger changed since the dry run: nothing was applied. Look at the new report and confirm again.',
  ),
  parked_entry_handled: new ProblemException(
    'parked_entry_handled',
    'This parked entry was already discarded by finance at 2026-11-28T10:00:00.000Z (reason: "a test entry"); nothing was done with this request.',
  ),
  parked_entry_refused: new ProblemException(
    'parked_entry_refused',
    'The ledger refused this entry again (SQLSTATE 22P05); it stays parked. Discard it with a reason, or fix what the database refuses and re-drive it.',
  ),
  payload_too_large: new ProblemException('payload_too_large', 'The request body is larger than the limit of 16 KiB.'),
  idempotency_key_reused: new ProblemException(
    'idempotency_key_reused',
    'This Idempotency-Key was used with a different request; nothing was done with this one. Send it with a new key.',
  ),
  upstream_rejected: new ProblemException('upstream_rejected', 'Validation failed', {
    trackId: TRACK_ID,
    errors: [{ field: 'nationalCode', message: 'Invalid national code' }],
  }),
  rate_limited: new ProblemException('rate_limited', 'The client quota of 600 inquiries per minute is used up.'),
  budget_exhausted: new ProblemException(
    'budget_exhausted',
    'The daily budget of this client is exhausted: 0 unit(s) remain and this inquiry costs 1; it resets at ' +
      '2026-11-25T00:00:00.000Z. Nothing was sent to the verification service.',
  ),
  upstream_error: new ProblemException(
    'upstream_error',
    'The verification service reported an error; nothing was charged (failed attempts are not). ' +
      'Retrying is safe: the same Idempotency-Key replays this answer, a new key asks again.',
    {
      trackId: TRACK_ID,
    },
  ),
  upstream_unavailable: new ProblemException(
    'upstream_unavailable',
    "The verification service's prepaid credit is used up until an operator tops it up; nothing was charged, " +
      'and a retry is safe (the same Idempotency-Key asks again) after Retry-After.',
    { trackId: TRACK_ID },
  ),
  auth_unavailable: new ProblemException('auth_unavailable', 'Credentials cannot be checked right now; retry later.'),
  store_unavailable: new ProblemException(
    'store_unavailable',
    'The record store is unavailable; nothing was sent to the verification service.',
  ),
  upstream_timeout: new ProblemException(
    'upstream_timeout',
    'The verification service did not answer in time; the outcome is unknown.',
    { trackId: TRACK_ID },
  ),
  not_cached: new ProblemException(
    'not_cached',
    'No answer within the allowed age is held for this question, and only-if-cached forbids asking the verification service.',
  ),
  internal: new ProblemException('internal', 'An unexpected error occurred.'),
};

export function problemExample(code: ProblemCode): ProblemBody {
  return EXAMPLES[code].toBody();
}
