/**
 * The upstream-failure rows of the error table (docs/api.md §3, "Errors") as the gateway
 * applies them: each failure of a call gives one problem code and status, the record status
 * (`failed` when the upstream decided or nothing was sent, `unknown` when it may have charged),
 * and whether the Idempotency-Key is released (nothing can have been charged).
 */
import { describe, expect, it } from '@jest/globals';
import { PROBLEM_CONTENT_TYPE, type ProblemBody } from '../problem/problem.js';
import { TokenUnavailableError } from '../token/token-unavailable.error.js';
import { UpstreamError } from '../upstream/upstream-error.js';
import { JSON_CONTENT_TYPE, failureLogLine, failureOutcome, successOutcome } from './inquiry-outcome.js';

const TRACK_ID = '3f0b8f0e-6f7a-4c1e-9d2b-0a1b2c3d4e5f';
const RETRY_AFTER = '7';

const rejected = (httpStatus: number, details: ConstructorParameters<typeof UpstreamError>[1] = {}) =>
  new UpstreamError('rejected', { httpStatus, code: 6, upstreamMessage: 'refused', ...details });

interface Row {
  when: string;
  error: unknown;
  status: number;
  code: ProblemBody['code'];
  record: 'failed' | 'unknown';
  released: boolean;
}

// prettier-ignore
const TABLE: Row[] = [
  // 502 upstream_error: upstream answered 5xx, malformed, or a supplier failure; a broken connection.
  { when: 'upstream 500', error: rejected(500), status: 502, code: 'upstream_error', record: 'failed', released: false },
  { when: 'upstream 503 answer', error: rejected(503), status: 502, code: 'upstream_error', record: 'failed', released: false },
  { when: 'upstream 404', error: rejected(404), status: 502, code: 'upstream_error', record: 'failed', released: false },
  { when: 'malformed answer', error: new UpstreamError('malformed', { httpStatus: 200 }), status: 502, code: 'upstream_error', record: 'unknown', released: false },
  { when: 'connection dropped after sending', error: new UpstreamError('outcome_unknown'), status: 502, code: 'upstream_error', record: 'unknown', released: false },
  // 503 upstream_unavailable: circuit open, credentials rejected or account disabled, insufficient credit.
  { when: 'circuit open', error: new UpstreamError('not_sent', { circuitOpen: true }), status: 503, code: 'upstream_unavailable', record: 'failed', released: true },
  { when: 'upstream unreachable', error: new UpstreamError('not_sent'), status: 503, code: 'upstream_unavailable', record: 'failed', released: true },
  { when: 'upstream 401', error: rejected(401), status: 503, code: 'upstream_unavailable', record: 'failed', released: true },
  { when: 'upstream 402 (credit)', error: rejected(402), status: 503, code: 'upstream_unavailable', record: 'failed', released: true },
  { when: 'upstream 403 (disabled)', error: rejected(403), status: 503, code: 'upstream_unavailable', record: 'failed', released: true },
  { when: 'no token', error: new TokenUnavailableError('credentials_rejected'), status: 503, code: 'upstream_unavailable', record: 'failed', released: true },
  // 422 upstream_rejected: the upstream answered with a validation error.
  { when: 'upstream 400', error: rejected(400), status: 422, code: 'upstream_rejected', record: 'failed', released: false },
  { when: 'upstream 422', error: rejected(422), status: 422, code: 'upstream_rejected', record: 'failed', released: false },
  // 504 upstream_timeout: no answer in time; recorded as unknown.
  { when: 'timeout after sending', error: new UpstreamError('outcome_unknown', { timedOut: true }), status: 504, code: 'upstream_timeout', record: 'unknown', released: false },
  // 500 internal: anything else (it may have been sent: never released).
  { when: 'unexpected error', error: new TypeError('boom'), status: 500, code: 'internal', record: 'unknown', released: false },
];

describe('failureOutcome: the error table of docs/api.md §3', () => {
  it.each(TABLE)('$when → $status $code, record $record, key released: $released', (row) => {
    const outcome = failureOutcome(row.error, TRACK_ID, RETRY_AFTER);
    expect(outcome.status).toBe(row.record);
    expect(outcome.notCharged).toBe(row.released);
    expect(outcome.response.status).toBe(row.status);
    expect(outcome.response.contentType).toBe(PROBLEM_CONTENT_TYPE);
    expect(outcome.response.body).toMatchObject({ status: row.status, code: row.code, trackId: TRACK_ID });
  });

  it("says in a 502's detail whether it was charged, and that a retry with the same Idempotency-Key is safe", () => {
    for (const row of TABLE.filter((r) => r.status === 502)) {
      const { detail } = failureOutcome(row.error, TRACK_ID, RETRY_AFTER).response.body as ProblemBody;
      // Upstream rule 9: a failed attempt is not charged; an unknown outcome may have been.
      const charged = row.record === 'failed' ? 'nothing was charged' : 'It may have been charged';
      expect([row.when, detail]).toEqual([row.when, expect.stringContaining(charged)]);
      expect(detail).toMatch(/same Idempotency-Key (is safe|replays this answer)/);
    }
  });

  it('sets Retry-After while the circuit is open, and minutes for an account an operator must mend', () => {
    const account = ['upstream 401', 'upstream 402 (credit)', 'upstream 403 (disabled)'];
    for (const row of TABLE) {
      const { headers } = failureOutcome(row.error, TRACK_ID, RETRY_AFTER).response;
      if (row.when === 'circuit open') expect(headers).toEqual({ 'Retry-After': RETRY_AFTER });
      else if (account.includes(row.when)) expect(headers).toEqual({ 'Retry-After': '300' });
      else expect(headers).toBeUndefined();
    }
  });

  it('says for every 503 that nothing was charged and whether a retry is safe, like the 502', () => {
    for (const row of TABLE.filter(({ status }) => status === 503 || status === 502)) {
      const { detail } = failureOutcome(row.error, TRACK_ID, RETRY_AFTER).response.body as ProblemBody;
      if (row.record === 'unknown')
        expect(detail).toMatch(/may have been charged: a retry with the same Idempotency-Key is safe/);
      else if (row.status === 502 || row.when.startsWith('upstream 40') || row.when === 'no token')
        expect(detail).toMatch(/nothing was charged.*(retry|Retrying) is safe/);
    }
    const credit = failureOutcome(rejected(402), TRACK_ID, RETRY_AFTER).response.body as ProblemBody;
    expect(credit.detail).toMatch(/credit is used up .* after Retry-After/);
  });

  it("keeps the upstream's code and message in the record, redacted, when it answered with one", () => {
    const error = rejected(500, { code: 12, upstreamMessage: 'supplier failed for 0499370899' });
    const outcome = failureOutcome(error, TRACK_ID, RETRY_AFTER);
    expect(outcome.record.upstream?.code).toBe(12);
    expect(outcome.record.upstream?.message).not.toContain('0499370899');
    expect(failureOutcome(new UpstreamError('not_sent'), TRACK_ID, RETRY_AFTER).record).toEqual({});
  });

  it("carries the upstream's validation message and field errors in upstream_rejected, redacted", () => {
    const error = rejected(400, {
      upstreamMessage: 'invalid request',
      fieldErrors: [{ field: 'mobileNumber', message: '09121234567 is not registered' }],
    });
    const body = failureOutcome(error, TRACK_ID, RETRY_AFTER).response.body as ProblemBody;
    expect(body.detail).toBe('invalid request');
    expect(body.errors).toHaveLength(1);
    expect(body.errors?.[0].field).toBe('mobileNumber');
    expect(body.errors?.[0].message).not.toContain('09121234567');
  });

  it('logs kinds and names only, at error level for the unexpected', () => {
    expect(failureLogLine(new TypeError('secret 0499370899'), TRACK_ID)).toEqual({
      level: 'error',
      message: `inquiry ${TRACK_ID} failed unexpectedly: TypeError`,
    });
    expect(failureLogLine(rejected(500), TRACK_ID).level).toBe('warn');
    expect(failureLogLine(new TokenUnavailableError('account_disabled'), TRACK_ID).message).toContain('not sent');
  });
});

describe('successOutcome', () => {
  it('answers 200 with the data and records the upstream meta; the key keeps the answer', () => {
    const outcome = successOutcome(TRACK_ID, {
      meta: { code: 0, message: 'ok', isSuccess: true },
      data: { isMatch: true },
    });
    expect(outcome).toEqual({
      status: 'succeeded',
      notCharged: false,
      record: { upstream: { code: 0, message: 'ok' }, data: { isMatch: true } },
      response: {
        status: 200,
        contentType: JSON_CONTENT_TYPE,
        body: { trackId: TRACK_ID, status: 'succeeded', data: { isMatch: true } },
      },
    });
  });
});
