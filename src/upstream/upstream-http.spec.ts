/**
 * The transport-failure classification of the upstream client (docs: docs/upstream-api.md §4.4
 * rules 5 and 9): only a request whose body never reached the socket is `not_sent` (a retry
 * cannot charge twice); once written, every failure may have been charged. The errors are
 * undici's own classes and Node's system errors, as the transport receives them.
 */
import { describe, expect, it } from '@jest/globals';
import { errors } from 'undici';
import { classifyTransportError } from './upstream-http.js';

const systemError = (code: string) => Object.assign(new Error(code), { code });

describe('classifyTransportError: never written', () => {
  it.each([
    ['connection refused', systemError('ECONNREFUSED')],
    ['name not resolved', systemError('ENOTFOUND')],
    ['DNS failure', systemError('EAI_AGAIN')],
    ['host unreachable', systemError('EHOSTUNREACH')],
    ['network unreachable', systemError('ENETUNREACH')],
    ['socket closed before the body was written', new errors.SocketError('other side closed')],
    ['aborted before writing', new errors.RequestAbortedError()],
  ])('%s → not_sent', (_, error) => {
    const failure = classifyTransportError(error, false);
    expect(failure.kind).toBe('not_sent');
    expect(failure.details.timedOut).toBeUndefined();
  });

  it.each([
    ['connect timeout', new errors.ConnectTimeoutError()],
    ['deadline while queued for a connection', Object.assign(new Error('x'), { code: 'VGW_UPSTREAM_DEADLINE' })],
  ])('%s → not_sent, timed out', (_, error) => {
    const failure = classifyTransportError(error, false);
    expect(failure.kind).toBe('not_sent');
    expect(failure.details.timedOut).toBe(true);
  });
});

describe('classifyTransportError: written', () => {
  it.each([
    ['connection reset', systemError('ECONNRESET')],
    ['broken pipe', systemError('EPIPE')],
    ['closed without an answer', new errors.SocketError('other side closed')],
    ['aborted', new errors.RequestAbortedError()],
    ['an unknown error', new Error('something else')],
    ['not an Error at all', 'boom'],
    // Codes that prove nothing once the body went out: an established connection can fail so too.
    ['host unreachable after writing', systemError('EHOSTUNREACH')],
    ['connection refused (impossible once written: still unknown)', systemError('ECONNREFUSED')],
  ])('%s → outcome_unknown, not timed out', (_, error) => {
    const failure = classifyTransportError(error, true);
    expect(failure.kind).toBe('outcome_unknown');
    expect(failure.details.timedOut).toBe(false);
  });

  it.each([
    ['no headers in time', new errors.HeadersTimeoutError()],
    ['body stalled', new errors.BodyTimeoutError()],
    ['the per-call deadline', Object.assign(new Error('x'), { code: 'VGW_UPSTREAM_DEADLINE' })],
    ['kernel timeout', systemError('ETIMEDOUT')],
  ])('%s → outcome_unknown, timed out', (_, error) => {
    const failure = classifyTransportError(error, true);
    expect(failure.kind).toBe('outcome_unknown');
    expect(failure.details.timedOut).toBe(true);
  });

  it('an answer larger than the bound → malformed, response too large (it may have charged)', () => {
    const failure = classifyTransportError(new errors.ResponseExceededMaxSizeError(), true);
    expect(failure.kind).toBe('malformed');
    expect(failure.details.responseTooLarge).toBe(true);
  });

  it('an answer that is not HTTP → malformed', () => {
    const parserError = new errors.HTTPParserError('Invalid status code');
    const failure = classifyTransportError(parserError, true);
    expect(failure.kind).toBe('malformed');
    expect(failure.details.responseTooLarge).toBeUndefined();
  });

  it('a cause code counts like the error code', () => {
    const wrapped = new Error('fetch failed', { cause: new errors.HeadersTimeoutError() });
    expect(classifyTransportError(wrapped, true).details.timedOut).toBe(true);
  });
});
