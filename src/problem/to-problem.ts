import { HttpException } from '@nestjs/common';
import { ProblemException, type ProblemCode } from './problem.js';

/** What the request was held to, for details that state a limit. */
export interface ProblemLimits {
  /** The route's body limit (BODY_LIMIT_BYTES unless the route sets its own). */
  bodyLimitBytes?: number;
}

/** 413 states the limit (docs/api.md §3), so a caller knows how far over it is. */
function payloadTooLarge({ bodyLimitBytes }: ProblemLimits): ProblemException {
  if (bodyLimitBytes === undefined)
    return new ProblemException('payload_too_large', 'The request body is larger than allowed.');
  const limit = bodyLimitBytes % 1024 === 0 ? `${bodyLimitBytes / 1024} KiB` : `${bodyLimitBytes} bytes`;
  return new ProblemException('payload_too_large', `The request body is larger than the limit of ${limit}.`);
}

/** Fastify's own request errors (body parsing, limits) carry a `FST_…` code and a status. */
interface FastifyLikeError {
  code?: string;
  statusCode?: number;
}

const CODE_BY_STATUS: Record<number, ProblemCode> = {
  400: 'validation_failed',
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  405: 'not_found',
  413: 'payload_too_large',
  415: 'validation_failed',
  429: 'rate_limited',
};

/**
 * The router's 404: where the paths are (problem.filter.ts adds the nearest one to a typo). No
 * route is named: /docs is an ops route, absent from the public port when OPS_PORT is set
 * (test/ops-port.e2e.spec.ts).
 */
export const NOT_FOUND_DETAIL = "No such resource; the API's paths are listed in docs/api.md and its OpenAPI document.";

/**
 * Turns anything thrown while serving a request into a problem. Only errors the gateway
 * itself raised keep their message; everything else gets a fixed, generic detail so that
 * nothing internal (stack, upstream secrets, raw input) can reach the caller.
 */
export function toProblem(error: unknown, limits: ProblemLimits = {}): ProblemException {
  if (error instanceof ProblemException) return error;

  if (error instanceof HttpException) {
    // Nest wraps fastify's own request errors (body parsing, limits) and keeps them as cause.
    const cause = error.cause as FastifyLikeError | undefined;
    if (typeof cause?.code === 'string' && cause.code.startsWith('FST_'))
      return fromFastifyError({ ...cause, statusCode: error.getStatus() }, limits);
    const status = error.getStatus();
    const code = CODE_BY_STATUS[status] ?? (status >= 500 ? 'internal' : 'validation_failed');
    if (code === 'not_found') return new ProblemException(code, NOT_FOUND_DETAIL);
    if (code === 'validation_failed') {
      return ProblemException.validation([{ field: 'body', message: 'The request could not be read.' }]);
    }
    if (code === 'payload_too_large') return payloadTooLarge(limits);
    return new ProblemException(code, defaultDetail(code));
  }

  const fastifyError = error as FastifyLikeError;
  if (typeof fastifyError?.statusCode === 'number' && fastifyError.statusCode < 500) {
    return fromFastifyError(fastifyError, limits);
  }
  return new ProblemException('internal', 'An unexpected error occurred.');
}

function fromFastifyError(error: FastifyLikeError, limits: ProblemLimits): ProblemException {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return payloadTooLarge(limits);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      // A Content-Type that is not a media type at all: fastify refuses it before parsing. Any
      // other media type is parsed and answered by the route's validation step, in the same words.
      return notJsonMediaType(false);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return ProblemException.validation(
        [{ field: 'body', message: 'The JSON body is empty.' }],
        'The request body is empty.',
      );
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return ProblemException.validation(
        [{ field: 'body', message: 'The body is not valid JSON.' }],
        'The request body is not valid JSON.',
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return ProblemException.validation([{ field: 'body', message: 'Content-Length does not match the body.' }]);
    default:
      break;
  }
  const code = CODE_BY_STATUS[error.statusCode ?? 400] ?? 'validation_failed';
  if (code === 'payload_too_large') return payloadTooLarge(limits);
  if (code === 'validation_failed') {
    // Fastify reports malformed JSON as a plain 400 (a SyntaxError from the JSON parser).
    return ProblemException.validation(
      [{ field: 'body', message: 'The body is not valid JSON.' }],
      'The request body is not valid JSON.',
    );
  }
  return new ProblemException(code, defaultDetail(code));
}

function defaultDetail(code: ProblemCode): string {
  switch (code) {
    case 'unauthenticated':
      return 'A valid credential is required.';
    case 'forbidden':
      return 'The credential does not allow this operation.';
    case 'rate_limited':
      return 'Too many requests; retry later.';
    default:
      return 'An unexpected error occurred.';
  }
}

/** The answer for a body whose Content-Type is missing or not the route's (`mediaType`). */
export function notJsonMediaType(missing: boolean, mediaType = 'application/json'): ProblemException {
  return ProblemException.validation(
    [
      {
        field: 'body',
        message: missing
          ? `Content-Type is not set; send the body with Content-Type: ${mediaType}.`
          : `Content-Type must be ${mediaType}.`,
      },
    ],
    missing
      ? `The request has a body but no Content-Type header; it must be ${mediaType}.`
      : `The request body must be sent with Content-Type: ${mediaType}.`,
  );
}
