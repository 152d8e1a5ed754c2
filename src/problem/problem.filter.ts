import { Catch, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { PROBLEM_CONTENT_TYPE, type ProblemException } from './problem.js';
import { toProblem } from './to-problem.js';
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

  catch(error: unknown, host: ArgumentsHost): void {
    const problem = toProblem(error);
    if (problem.code === 'internal') {
      // Name only: messages and stacks of unexpected errors may carry input or secrets.
      this.logger.error(`unexpected ${error instanceof Error ? error.name : typeof error} while serving a request`);
    }
    sendProblem(host.switchToHttp().getResponse<FastifyReply>(), problem);
  }
}
