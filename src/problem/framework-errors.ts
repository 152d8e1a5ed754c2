import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendProblem } from './problem.filter.js';
import { ProblemException } from './problem.js';

/**
 * Errors raised before any route runs, so that they too are problem+json (docs/behaviour.md, "HTTP edges"):
 * fastify's router (`frameworkErrors`) and Node's HTTP parser (`clientError`) would otherwise
 * answer in their own JSON or plain text.
 */

/** fastify's router: a bad URL, or a path parameter longer than the router allows. */
export function frameworkErrors(error: Error & { code?: string }, _request: FastifyRequest, reply: FastifyReply): void {
  sendProblem(reply, problemForFrameworkError(error));
}

export function problemForFrameworkError(error: { code?: string }): ProblemException {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      // Bad percent-encoding (`/v1/inquiries/%zz`): the path cannot be read at all.
      return ProblemException.validation(
        [{ field: 'path', message: 'The URL path is not valid (bad percent-encoding).' }],
        'The request URL is not valid.',
      );
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // An over-long path segment (e.g. a trackId of kilobytes) is malformed: 400, as any malformed
      // trackId (docs/api.md §3), rather than fastify's 414.
      return ProblemException.validation(
        [{ field: 'path', message: 'A path segment is longer than allowed (a trackId is a 36-character UUID).' }],
        'The request URL is not valid.',
      );
    default:
      return new ProblemException('internal', 'An unexpected error occurred.');
  }
}

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without `Host` is answered 400. Node's server would answer
 * it itself with an empty 400 (its `requireHostHeader`); the gateway turns that off (bootstrap.ts)
 * and answers here instead, in problem+json, with the access line and metrics of any request.
 */
export function rejectMissingHost(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  if (request.raw.httpVersion !== '1.1' || request.headers.host !== undefined) return done();
  reply.header('connection', 'close');
  sendProblem(
    reply,
    ProblemException.validation(
      [{ field: 'Host', message: 'is required in an HTTP/1.1 request' }],
      'The HTTP request is malformed.',
    ),
  );
}

/**
 * Node's HTTP parser refuses some requests before fastify sees them: a malformed request line,
 * an unknown method, headers over the size limit, a request not received within the request or
 * headers timeout. The answer is written straight to the socket, which is then closed: after a
 * parse error the connection's framing cannot be trusted.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer (as fastify's default handler does).
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  writeProblemAndClose(socket, problemForClientError(error));
}

/**
 * A CONNECT request (a tunnel): Node hands it to a 'connect' listener and, with none, closes the
 * connection without a word. The gateway tunnels nothing: it answers 400 problem+json naming the
 * method, as for any method it does not serve.
 */
export function rejectConnect(_request: unknown, socket: Socket): void {
  writeProblemAndClose(
    socket,
    ProblemException.validation(
      [{ field: 'method', message: 'CONNECT is not supported.' }],
      'The HTTP request is not supported.',
    ),
  );
}

/** Writes a problem+json answer straight to the socket, then closes it. */
function writeProblemAndClose(socket: Socket, problem: ProblemException): void {
  // As Node's own handler: no answer once a response on this connection has started (e.g. a
  // request's leftover body parsed as a next, malformed request): a second one would corrupt it.
  const inProgress = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inProgress?.headersSent) {
    const body = JSON.stringify(problem.toBody());
    const extra = Object.entries(problem.headers).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(
      `HTTP/1.1 ${problem.status} ${STATUS_TEXT[problem.status] ?? 'Error'}\r\n` +
        'Content-Type: application/problem+json\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        extra.join('') +
        'Connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy();
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  431: 'Request Header Fields Too Large',
};

export function problemForClientError(error: { code?: string }): ProblemException {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ProblemException('request_timeout', 'The request was not received in time.');
    case 'HPE_HEADER_OVERFLOW':
      return new ProblemException('headers_too_large', 'The request headers are larger than allowed.');
    case 'HPE_INVALID_METHOD':
      return ProblemException.validation(
        [{ field: 'method', message: 'The HTTP method is not supported.' }],
        'The HTTP request is malformed.',
      );
    default:
      return ProblemException.validation(
        [{ field: 'request', message: 'The HTTP request could not be parsed.' }],
        'The HTTP request is malformed.',
      );
  }
}
