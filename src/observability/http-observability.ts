import { fastifyRequestContext } from '@fastify/request-context';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger as Pino } from 'pino';
import { PROBLEM_CONTENT_TYPE } from '../problem/problem.js';
import { redactText } from './redact.js';
import { REQUEST_ID_HEADER, type RequestFacts } from './request-context.js';

/** What the access log and the request metrics learn while a request is served. */
interface Observed {
  facts: RequestFacts;
  /** The problem `code` of an error answer. */
  code?: string;
}

const OBSERVED = Symbol('vgw.observed');
type ObservedRequest = FastifyRequest & { [OBSERVED]?: Observed; caller?: { clientId: string } };

/** Probes and scrapes are logged at debug: every few seconds from every kubelet and Prometheus. */
const QUIET_ROUTES = new Set(['/health/live', '/health/ready', '/health/startup', '/metrics']);

export interface HttpObservabilityOptions {
  /** The access log; none when the gateway runs without a logger (tests). */
  logger?: Pino;
}

/**
 * Every request, whatever its route and outcome (401, 403, 404, 413, 429, a body the parser
 * refused), is seen once: one access-log line with its facts as JSON fields. Fastify hooks,
 * not Nest interceptors: interceptors never see requests refused before a handler runs
 * (unknown routes, body limits, parser errors), hooks see all of them.
 *
 * The request id is Fastify's own (`genReqId`, from a well-formed `X-Request-Id` or fresh,
 * see request-context.ts), echoed on every response, and put in the async-local request
 * context that the logger reads for every line of the request.
 */
export async function installHttpObservability(
  app: NestFastifyApplication,
  options: HttpObservabilityOptions,
): Promise<void> {
  const fastify = app.getHttpAdapter().getInstance();
  await app.register(fastifyRequestContext, {
    defaultStoreValues: (request: FastifyRequest) => {
      const observed: Observed = { facts: { requestId: request.id } };
      (request as ObservedRequest)[OBSERVED] = observed;
      return { facts: observed.facts };
    },
  });

  fastify.addHook('onRequest', (request, reply, done) => {
    // Set first, so that every answer carries it: errors, 404s and refused bodies included.
    void reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });

  fastify.addHook('onSend', (request, reply, payload, done) => {
    const observed = (request as ObservedRequest)[OBSERVED];
    if (observed && isProblem(reply)) observed.code = problemCode(payload);
    done(null, payload);
  });

  const logger = options.logger;
  fastify.addHook('onResponse', (request, reply, done) => {
    const observed = (request as ObservedRequest)[OBSERVED];
    const route = request.routeOptions.url;
    const level = route !== undefined && QUIET_ROUTES.has(route) ? 'debug' : reply.statusCode >= 500 ? 'warn' : 'info';
    if (logger?.isLevelEnabled(level))
      logger[level](accessLine(request as ObservedRequest, reply, observed), 'request');
    done();
  });
}

function accessLine(request: ObservedRequest, reply: FastifyReply, observed: Observed | undefined): object {
  const route = request.routeOptions.url;
  const trackId = reply.getHeader('x-track-id');
  return {
    // The line is written after the request context has ended: the id is set here.
    requestId: request.id,
    method: request.method,
    // The template, never the raw path (it may hold a trackId); an unknown path is logged
    // redacted (a caller may put anything in it).
    route: route ?? null,
    ...(route === undefined ? { path: redactText(request.url.split('?')[0].slice(0, 256)) } : {}),
    status: reply.statusCode,
    ...(observed?.code ? { code: observed.code } : {}),
    durationMs: Math.round(reply.elapsedTime * 10) / 10,
    ...(request.caller ? { clientId: request.caller.clientId } : {}),
    ...(typeof trackId === 'string' ? { trackId } : {}),
    ...(reply.getHeader('idempotent-replayed') ? { replayed: true } : {}),
  };
}

function isProblem(reply: FastifyReply): boolean {
  const type = reply.getHeader('content-type');
  return typeof type === 'string' && type.startsWith(PROBLEM_CONTENT_TYPE);
}

/** The `code` of a problem+json body (small: a few hundred bytes). */
function problemCode(payload: unknown): string | undefined {
  if (typeof payload !== 'string') return undefined;
  try {
    const code = (JSON.parse(payload) as { code?: unknown }).code;
    return typeof code === 'string' && /^[a-z_]{1,64}$/.test(code) ? code : undefined;
  } catch {
    return undefined;
  }
}
