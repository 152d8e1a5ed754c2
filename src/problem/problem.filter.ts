import { Catch, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PROBLEM_CONTENT_TYPE, ProblemException } from './problem.js';
import { nearestCallerPath } from './nearest-route.js';
import { NOT_FOUND_DETAIL, toProblem } from './to-problem.js';
import { TRACK_ID_HEADER } from '../vocabulary/headers.js';

/** Writes a problem as `application/problem+json`, with `X-Track-Id` once one was stamped. */
export function sendProblem(reply: FastifyReply, problem: ProblemException): void {
  reply.status(problem.status).header('content-type', PROBLEM_CONTENT_TYPE);
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  if (problem.trackId) reply.header(TRACK_ID_HEADER, problem.trackId);
  void reply.send(problem.toBody());
}

/** The single place where any error leaving a route becomes RFC 9457 problem+json. */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  private readonly logger = new Logger('Problem');

  /** `addedOperations`: the names `POST /v1/kyc/:operation` serves (the catalog's added ones). */
  constructor(private readonly addedOperations: ReadonlySet<string> = new Set()) {}

  catch(error: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    // The route's own body limit, so a 413 can state it (docs/api.md §3).
    let problem = toProblem(error, { bodyLimitBytes: request.routeOptions?.bodyLimit });
    // The router's 404 (Nest's not-found handler) for a path that exists with other methods.
    if (problem.code === 'not_found' && !(error instanceof ProblemException))
      problem = wrongMethod(request, this.addedOperations) ?? nearestPath(request, this.addedOperations) ?? problem;
    if (problem.code === 'internal') {
      // Name only: messages and stacks of unexpected errors may carry input or secrets.
      this.logger.error(`unexpected ${error instanceof Error ? error.name : typeof error} while serving a request`);
    }
    sendProblem(host.switchToHttp().getResponse<FastifyReply>(), problem);
  }
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * RFC 9110 §15.5.6: a known path asked with a method it does not serve is 405 with `Allow`,
 * not 404. Answered on the main listener only: the ops listener's routes are told apart by a
 * router constraint (src/http/ops-listener.ts) this layer does not know, so there it stays 404.
 * OPTIONS is left out, asked or allowed: with CORS_ORIGINS unset a preflight is no route (404,
 * test/cors.e2e.spec.ts), and with it set CORS answers it for every path.
 */
function wrongMethod(request: FastifyRequest, addedOperations: ReadonlySet<string>): ProblemException | undefined {
  if (request.method === 'OPTIONS' || !onMainListener(request)) return undefined;
  const { server } = request;
  const url = request.url.split('?', 1)[0];
  // The added operations' one route matches any name: a path is served only for a name of the catalog.
  const serves = (method: string) => {
    const route = server.findRoute({ method, url }) as { params?: Record<string, string> } | null;
    return route !== null && (route.params?.operation === undefined || addedOperations.has(route.params.operation));
  };
  const allowed = METHODS.filter(serves);
  if (allowed.length === 0 || allowed.includes(request.method as (typeof METHODS)[number])) return undefined;
  const allow = allowed.join(', ');
  return new ProblemException(
    'method_not_allowed',
    `${request.method} is not served at this path; it serves ${allow}.`,
    {
      headers: { allow },
    },
  );
}

/** Whether the request came to the main listener, not the ops one (src/http/ops-listener.ts). */
function onMainListener(request: FastifyRequest): boolean {
  const address = request.server.server.address();
  const localPort = request.raw.socket?.localPort;
  return address === null || typeof address === 'string' || localPort === undefined || localPort === address.port;
}

/** A mistyped caller path (on the main listener): the 404 names the path meant, never echoing the one sent. */
function nearestPath(request: FastifyRequest, addedOperations: ReadonlySet<string>): ProblemException | undefined {
  if (!onMainListener(request)) return undefined;
  const nearest = nearestCallerPath(request.url.split('?', 1)[0], addedOperations);
  if (nearest === undefined) return undefined;
  return new ProblemException('not_found', `${NOT_FOUND_DETAIL.replace(/\.$/, '')}; the nearest is ${nearest}.`);
}
