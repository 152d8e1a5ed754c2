/**
 * Anything thrown while serving a request becomes one problem (docs/api.md §3): Nest's
 * HTTP exceptions and Fastify's own request errors keep their meaning (status → stable
 * code), everything else is a 500 `internal` whose detail is fixed, so that no message,
 * stack or input of an unexpected error reaches the caller.
 */
import { describe, expect, it } from '@jest/globals';
import {
  BadRequestException,
  ForbiddenException,
  HttpException,
  HttpStatus,
  InternalServerErrorException,
  MethodNotAllowedException,
  NotFoundException,
  PayloadTooLargeException,
  ServiceUnavailableException,
  UnauthorizedException,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import { ProblemException, type ProblemCode } from './problem.js';
import { NOT_FOUND_DETAIL, toProblem } from './to-problem.js';

const SECRET = 'db-password=hunter2 at /srv/app/node_modules/x.js:12';
const UNEXPECTED = 'An unexpected error occurred.';
const BODY_UNREADABLE = [{ field: 'body', message: 'The request could not be read.' }];
const NOT_JSON = [{ field: 'body', message: 'The body is not valid JSON.' }];

/** A Fastify request error as Fastify throws it: an Error with a `FST_…` code and a status. */
const fastifyError = (code: string, statusCode: number) => Object.assign(new Error(SECRET), { code, statusCode });

describe('toProblem: ProblemException', () => {
  it('is returned as it is', () => {
    const problem = new ProblemException('idempotency_key_in_use', 'The key is in use.', { trackId: 't' });
    expect(toProblem(problem)).toBe(problem);
  });
});

describe('toProblem: Nest HTTP exceptions', () => {
  it.each<[string, ProblemCode, HttpException, string]>([
    ['401', 'unauthenticated', new UnauthorizedException(SECRET), 'A valid credential is required.'],
    ['403', 'forbidden', new ForbiddenException(SECRET), 'The credential does not allow this operation.'],
    ['404', 'not_found', new NotFoundException(SECRET), NOT_FOUND_DETAIL],
    ['405 (an unknown route to the caller)', 'not_found', new MethodNotAllowedException(SECRET), NOT_FOUND_DETAIL],
    ['413', 'payload_too_large', new PayloadTooLargeException(SECRET), 'The request body is larger than allowed.'],
    ['429', 'rate_limited', new HttpException(SECRET, HttpStatus.TOO_MANY_REQUESTS), 'Too many requests; retry later.'],
    ['500', 'internal', new InternalServerErrorException(SECRET), UNEXPECTED],
    ['503', 'internal', new ServiceUnavailableException(SECRET), UNEXPECTED],
  ])('%s → %s with a fixed detail', (_status, code, exception, detail) => {
    const problem = toProblem(exception);
    expect(problem.code).toBe(code);
    expect(problem.detail).toBe(detail);
    expect(JSON.stringify(problem.toBody())).not.toContain('hunter2');
  });

  it.each<[string, HttpException]>([
    ['400', new BadRequestException(SECRET)],
    ['415', new UnsupportedMediaTypeException(SECRET)],
    ['another 4xx (418)', new HttpException(SECRET, HttpStatus.I_AM_A_TEAPOT)],
  ])('%s → 400 validation_failed with one `body` entry', (_status, exception) => {
    const problem = toProblem(exception);
    expect(problem.status).toBe(400);
    expect(problem.code).toBe('validation_failed');
    expect(problem.errors).toEqual(BODY_UNREADABLE);
    expect(JSON.stringify(problem.toBody())).not.toContain('hunter2');
  });

  it('reads a Fastify request error that Nest wrapped as the cause', () => {
    const wrapped = new HttpException(SECRET, HttpStatus.PAYLOAD_TOO_LARGE, {
      cause: { code: 'FST_ERR_CTP_BODY_TOO_LARGE' },
    });
    const problem = toProblem(wrapped);
    expect(problem.code).toBe('payload_too_large');
    expect(problem.detail).toBe('The request body is larger than allowed.');
    // With the route's limit known, the detail states it.
    expect(toProblem(wrapped, { bodyLimitBytes: 16 * 1024 }).detail).toBe(
      'The request body is larger than the limit of 16 KiB.',
    );
    expect(toProblem(wrapped, { bodyLimitBytes: 1000 }).detail).toBe(
      'The request body is larger than the limit of 1000 bytes.',
    );
  });

  it('takes the status from the exception, not from the wrapped cause', () => {
    const wrapped = new HttpException(SECRET, HttpStatus.UNAUTHORIZED, {
      cause: { code: 'FST_SOMETHING', statusCode: 500 },
    });
    expect(toProblem(wrapped).code).toBe('unauthenticated');
  });

  it('ignores a cause without a Fastify code', () => {
    const wrapped = new HttpException(SECRET, HttpStatus.NOT_FOUND, { cause: new Error('ENOENT') });
    expect(toProblem(wrapped).code).toBe('not_found');
  });
});

describe('toProblem: Fastify request errors', () => {
  it.each<[string, number, string, string]>([
    [
      'FST_ERR_CTP_INVALID_MEDIA_TYPE',
      415,
      'Content-Type must be application/json.',
      'The request body must be sent with Content-Type: application/json.',
    ],
    ['FST_ERR_CTP_EMPTY_JSON_BODY', 400, 'The JSON body is empty.', 'The request body is empty.'],
    ['FST_ERR_CTP_INVALID_JSON_BODY', 400, 'The body is not valid JSON.', 'The request body is not valid JSON.'],
    [
      'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
      400,
      'Content-Length does not match the body.',
      'The request has invalid fields.',
    ],
  ])('%s (%i) → 400 validation_failed naming the body', (code, statusCode, message, detail) => {
    const problem = toProblem(fastifyError(code, statusCode));
    expect(problem.status).toBe(400);
    expect(problem.code).toBe('validation_failed');
    expect(problem.detail).toBe(detail);
    expect(problem.errors).toEqual([{ field: 'body', message }]);
  });

  it('FST_ERR_CTP_BODY_TOO_LARGE → 413 payload_too_large', () => {
    const problem = toProblem(fastifyError('FST_ERR_CTP_BODY_TOO_LARGE', 413));
    expect(problem.status).toBe(413);
    expect(problem.code).toBe('payload_too_large');
  });

  it("the JSON parser's SyntaxError (a plain 400) → validation_failed: not valid JSON", () => {
    const syntaxError = Object.assign(new SyntaxError(`Unexpected token in JSON: ${SECRET}`), { statusCode: 400 });
    const problem = toProblem(syntaxError);
    expect(problem.code).toBe('validation_failed');
    expect(problem.errors).toEqual(NOT_JSON);
    expect(JSON.stringify(problem.toBody())).not.toContain('hunter2');
  });

  it.each<[number, ProblemCode]>([
    [401, 'unauthenticated'],
    [403, 'forbidden'],
    [413, 'payload_too_large'],
    [429, 'rate_limited'],
  ])('an unknown Fastify code with status %i → %s', (statusCode, code) => {
    const problem = toProblem(fastifyError('FST_ERR_SOMETHING_NEW', statusCode));
    expect(problem.code).toBe(code);
    expect(problem.detail).not.toContain('hunter2');
  });

  it('an unknown 4xx without a code → validation_failed: not valid JSON', () => {
    expect(toProblem(Object.assign(new Error(SECRET), { statusCode: 422 })).errors).toEqual(NOT_JSON);
  });
});

describe('toProblem: anything else', () => {
  it.each<[string, unknown]>([
    ['an Error', new Error(SECRET)],
    ['a TypeError', new TypeError(SECRET)],
    ['an error with a 5xx statusCode', Object.assign(new Error(SECRET), { statusCode: 502 })],
    ['an error with a non-numeric statusCode', Object.assign(new Error(SECRET), { statusCode: '400' })],
    ['a string', SECRET],
    ['null', null],
    ['undefined', undefined],
  ])('%s → 500 internal with a fixed detail', (_what, thrown) => {
    const problem = toProblem(thrown);
    expect(problem.status).toBe(500);
    expect(problem.code).toBe('internal');
    expect(problem.detail).toBe(UNEXPECTED);
    expect(problem.errors).toBeUndefined();
    expect(JSON.stringify(problem.toBody())).not.toContain('hunter2');
  });
});
