/**
 * Why a GetToken call failed (docs/upstream-api.md §4.1 rule 3, §7.1): the answers a person
 * must act on (password never set, credentials wrong, account disabled) are told apart from
 * everything transient, and the upstream's own words are kept for the operator.
 */
import { describe, expect, it } from '@jest/globals';
import { UpstreamError } from '../upstream/upstream-error.js';
import { toTokenFailure } from './token-failure.js';
import { TokenUnavailableError, type TokenFailureReason } from './token-unavailable.error.js';

const rejected = (httpStatus: number, upstreamMessage?: string) =>
  new UpstreamError('rejected', { httpStatus, code: httpStatus === 403 ? 9 : 6, upstreamMessage });

describe('toTokenFailure', () => {
  it.each<[string, unknown, TokenFailureReason, string | undefined]>([
    [
      '401, password never set',
      rejected(401, 'Api password has not been set'),
      'password_not_set',
      'Api password has not been set',
    ],
    [
      '401, the message embedded in a longer one',
      rejected(401, 'Error: Api password has not been set.'),
      'password_not_set',
      'Error: Api password has not been set.',
    ],
    [
      '401, wrong username or password',
      rejected(401, 'Invalid credentials'),
      'credentials_rejected',
      'Invalid credentials',
    ],
    ['401 without a message', rejected(401), 'credentials_rejected', undefined],
    ['403, account disabled', rejected(403, 'Account is disabled'), 'account_disabled', 'Account is disabled'],
    ['403 without a message', rejected(403), 'account_disabled', undefined],
  ])('%s → %s', (_when, error, reason, upstreamMessage) => {
    const failure = toTokenFailure(error);
    expect(failure).toBeInstanceOf(TokenUnavailableError);
    expect(failure.reason).toBe(reason);
    expect(failure.upstreamMessage).toBe(upstreamMessage);
  });

  it.each<[string, unknown]>([
    ['400 bad request', rejected(400, 'username is required')],
    ['500 server error', rejected(500, 'Internal server error')],
    ['a password message on a non-401 answer', rejected(500, 'Api password has not been set')],
    ['not sent', new UpstreamError('not_sent')],
    ['circuit open', new UpstreamError('not_sent', { circuitOpen: true })],
    ['timed out after sending', new UpstreamError('outcome_unknown', { timedOut: true })],
    ['connection dropped', new UpstreamError('outcome_unknown')],
    ['malformed answer to a 401', new UpstreamError('malformed', { httpStatus: 401 })],
    ['any other error', new Error('socket hang up')],
  ])('%s → upstream_failure, with the error message for the operator', (_when, error) => {
    const failure = toTokenFailure(error);
    expect(failure.reason).toBe('upstream_failure');
    expect(failure.upstreamMessage).toBe((error as Error).message);
  });

  it.each([undefined, null, 'boom', 42, { message: 'not an Error' }])(
    'a thrown non-Error (%j) → upstream_failure without a message',
    (thrown) => {
      const failure = toTokenFailure(thrown);
      expect(failure.reason).toBe('upstream_failure');
      expect(failure.upstreamMessage).toBeUndefined();
    },
  );

  it('passes a TokenUnavailableError through unchanged', () => {
    const original = new TokenUnavailableError('credentials_rejected', 'Invalid credentials');
    expect(toTokenFailure(original)).toBe(original);
  });

  it('names the reason and the upstream message, nothing else, in its own message', () => {
    expect(toTokenFailure(rejected(403, 'Account is disabled')).message).toBe(
      'upstream token unavailable: account_disabled (Account is disabled)',
    );
    expect(toTokenFailure(rejected(401)).message).toBe('upstream token unavailable: credentials_rejected');
  });
});
