import { redactText } from '../observability/redact.js';
import { PROBLEM_CONTENT_TYPE, ProblemException } from '../problem/problem.js';
import { TokenUnavailableError } from '../token/token-unavailable.error.js';
import type { UpstreamSuccess } from '../upstream/upstream.client.js';
import { UpstreamError } from '../upstream/upstream-error.js';
import type { InquiryRecord, InquiryStatus, StoredResponse } from './inquiry-record.js';
import { RETRY_AFTER_HEADER } from '../vocabulary/headers.js';

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** How one upstream call ends: what the record says, what the caller gets, whether a charge is possible. */
export interface InquiryOutcome {
  status: InquiryStatus;
  record: Partial<InquiryRecord>;
  response: Omit<StoredResponse, 'trackId'>;
  /**
   * True when nothing can have been charged (never sent, or refused by the upstream before
   * it registered the trackId: 401, 402, 403): the Idempotency-Key is released, so a retry
   * runs afresh once the cause is fixed, instead of replaying this answer for a day.
   */
  notCharged: boolean;
  /**
   * A failure whose request reached the upstream, with the HTTP status it answered when it did
   * (a timeout has none): `Cache-Status: fwd=stale; fwd-status=<it>` under stale-if-error.
   * Undefined when nothing was sent (breaker open, no token) or on success.
   */
  sent?: { httpStatus?: number };
}

/** The body of a successful inquiry (docs/api.md §2), also rebuilt from a record for a replay. */
export function succeededBody(trackId: string, data: unknown) {
  return { trackId, status: 'succeeded' as const, data };
}

export function successOutcome(trackId: string, result: UpstreamSuccess): InquiryOutcome {
  return {
    status: 'succeeded',
    notCharged: false,
    record: { upstream: { code: result.meta.code, message: result.meta.message }, data: result.data },
    response: { status: 200, contentType: JSON_CONTENT_TYPE, body: succeededBody(trackId, result.data) },
  };
}

/** A problem as a stored response (status, problem+json body, extra headers such as `Retry-After`). */
export function problemResponse(problem: ProblemException): Omit<StoredResponse, 'trackId'> {
  return {
    status: problem.status,
    contentType: PROBLEM_CONTENT_TYPE,
    body: problem.toBody(),
    ...(Object.keys(problem.headers).length > 0 ? { headers: problem.headers } : {}),
  };
}

/** A 502 teaches what it cost and how to retry (docs/api.md §3, "Retrying safely"). */
const UPSTREAM_FAILED =
  'The verification service reported an error; nothing was charged (failed attempts are not). ' +
  'Retrying is safe: the same Idempotency-Key replays this answer, a new key asks again.';
/**
 * A 503 for an upstream account that cannot serve (credit used up, credentials refused, account
 * disabled): refused before the upstream registered the trackId, so nothing was charged and the
 * Idempotency-Key is released. An operator has to act (top up, fix the account): Retry-After
 * asks callers to wait minutes, not hammer.
 */
const ACCOUNT_RETRY_AFTER_SECONDS = '300';
const NOT_CHARGED_RETRY = 'nothing was charged, and a retry is safe (the same Idempotency-Key asks again)';
const ACCOUNT_UNUSABLE = {
  402: `The verification service's prepaid credit is used up until an operator tops it up; ${NOT_CHARGED_RETRY} after Retry-After.`,
  other: `The verification service refused the gateway's account until an operator fixes it; ${NOT_CHARGED_RETRY} after Retry-After.`,
};
const UNKNOWN_RETRY =
  'It may have been charged: a retry with the same Idempotency-Key is safe (it replays this answer, never charged twice).';

/**
 * A failed upstream call as the error table of docs/api.md §3 describes it: which problem
 * the caller gets, whether the record is `failed` (the upstream decided, or nothing was sent)
 * or `unknown` (it may have been processed and charged), and whether the key is released.
 * `circuitRetryAfter` is the `Retry-After` (seconds) while the circuit breaker is open.
 */
export function failureOutcome(error: unknown, trackId: string, circuitRetryAfter: string): InquiryOutcome {
  const fail = (
    status: InquiryStatus,
    problem: ProblemException,
    notCharged: boolean,
    upstream?: InquiryRecord['upstream'],
  ): InquiryOutcome => {
    problem.trackId = trackId;
    return {
      status,
      notCharged,
      record: upstream ? { upstream } : {},
      response: problemResponse(problem),
      ...(sent ? { sent } : {}),
    };
  };
  const sent =
    error instanceof UpstreamError && error.kind !== 'not_sent' ? { httpStatus: error.details.httpStatus } : undefined;
  const unavailable = (detail: string, headers?: Record<string, string>) =>
    new ProblemException('upstream_unavailable', detail, headers ? { headers } : {});

  if (error instanceof TokenUnavailableError) {
    // While token renewals back off, the caller learns when the next attempt will be made.
    const retryAfter =
      error.retryAt !== undefined
        ? { [RETRY_AFTER_HEADER]: String(Math.max(1, Math.ceil((error.retryAt - Date.now()) / 1000))) }
        : undefined;
    const when = retryAfter ? 'after Retry-After' : 'later';
    return fail(
      'failed',
      unavailable(`The verification service cannot be used right now; ${NOT_CHARGED_RETRY} ${when}.`, retryAfter),
      true,
    );
  }
  if (!(error instanceof UpstreamError)) {
    // The request may have gone out: keep it replayable and unknown, never retried blindly.
    return fail('unknown', new ProblemException('internal', 'An unexpected error occurred.'), false);
  }

  const { httpStatus, code, upstreamMessage } = error.details;
  const message = upstreamMessage ? redactText(upstreamMessage) : undefined;
  const upstream = code !== undefined ? { code, ...(message ? { message } : {}) } : undefined;
  switch (error.kind) {
    case 'not_sent':
      return error.details.circuitOpen
        ? fail(
            'failed',
            unavailable('The verification service is failing; inquiries are paused briefly.', {
              [RETRY_AFTER_HEADER]: circuitRetryAfter,
            }),
            true,
          )
        : error.details.timedOut
          ? // The inquiry's time budget ran out before a call could start (inquiry-deadline.ts).
            fail('failed', unavailable('The inquiry ran out of time before it could be sent.'), true)
          : fail('failed', unavailable('The verification service could not be reached.'), true);
    case 'outcome_unknown':
      return error.details.timedOut
        ? fail(
            'unknown',
            new ProblemException(
              'upstream_timeout',
              'The verification service did not answer in time; the outcome is unknown.',
            ),
            false,
          )
        : fail(
            'unknown',
            new ProblemException(
              'upstream_error',
              `The connection to the verification service broke; the outcome is unknown. ${UNKNOWN_RETRY}`,
            ),
            false,
          );
    case 'malformed':
      return fail(
        'unknown',
        new ProblemException('upstream_error', `The verification service sent an unreadable answer. ${UNKNOWN_RETRY}`),
        false,
      );
    case 'rejected':
      break;
  }
  if (httpStatus === 400 || httpStatus === 422) {
    const problem = new ProblemException(
      'upstream_rejected',
      message ?? 'The verification service rejected the request.',
      {
        errors: error.details.fieldErrors?.map((e) => ({ field: e.field, message: redactText(e.message) })),
      },
    );
    return fail('failed', problem, false, upstream);
  }
  if (httpStatus === 401 || httpStatus === 403 || httpStatus === 402) {
    // Credentials rejected, account disabled, or credit exhausted: nothing a caller can fix,
    // and refused before the upstream registered the trackId, so nothing was charged.
    const detail = httpStatus === 402 ? ACCOUNT_UNUSABLE[402] : ACCOUNT_UNUSABLE.other;
    return fail('failed', unavailable(detail, { [RETRY_AFTER_HEADER]: ACCOUNT_RETRY_AFTER_SECONDS }), true, upstream);
  }
  return fail(
    'failed',
    // Upstream rule 9: a failed attempt is not charged (docs/upstream-api.md).
    new ProblemException('upstream_error', UPSTREAM_FAILED),
    false,
    upstream,
  );
}

/** The one log line for a failed call: names and kinds only, never request data. */
export function failureLogLine(error: unknown, trackId: string): { level: 'warn' | 'error'; message: string } {
  if (error instanceof TokenUnavailableError)
    return { level: 'warn', message: `inquiry ${trackId} not sent: ${error.message}` };
  if (!(error instanceof UpstreamError)) {
    return {
      level: 'error',
      message: `inquiry ${trackId} failed unexpectedly: ${error instanceof Error ? error.name : typeof error}`,
    };
  }
  return { level: 'warn', message: `inquiry ${trackId}: ${error.message}` };
}
