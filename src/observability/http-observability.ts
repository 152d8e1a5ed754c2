import { fastifyRequestContext } from '@fastify/request-context';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger as Pino } from 'pino';
import { PROBLEM_CONTENT_TYPE } from '../problem/problem.js';
import type { AUTH_FAILURE_REASONS, GatewayMetrics } from './metrics.js';
import { redactText } from './redact.js';
import { IDEMPOTENT_REPLAYED_HEADER, REQUEST_ID_HEADER_IN, TRACK_ID_HEADER } from '../vocabulary/headers.js';
import { requestLogFields, type RequestFacts } from './request-context.js';
import { callerTraceContext, endSpanWithError, type GatewayTracing } from './tracing.js';
import { SpanStatusCode } from '@opentelemetry/api';

/** What the access log and the request metrics learn while a request is served. */
interface Observed {
  facts: RequestFacts;
  /** The problem `code` of an error answer. */
  code?: string;
  /** Why a 401 or 403 was answered (noteAuthFailure). */
  authFailure?: AuthFailureReason;
}

/** Bounded reasons of vgw_auth_failures_total (metrics.ts). */
export type AuthFailureReason = (typeof AUTH_FAILURE_REASONS)[number];

/**
 * The facts of a request being served (request-context.ts), for the code that hands them down
 * the inquiry path; undefined for a request this module has not seen.
 */
export function requestFacts(request: FastifyRequest): RequestFacts | undefined {
  return (request as ObservedRequest)[OBSERVED]?.facts;
}

/** Called by the caller-auth guard when it refuses a request, for the metric's reason label. */
export function noteAuthFailure(request: object, reason: AuthFailureReason): void {
  const observed = (request as ObservedRequest)[OBSERVED];
  if (observed) observed.authFailure = reason;
}

const OBSERVED = Symbol('vgw.observed');
type ObservedRequest = FastifyRequest & { [OBSERVED]?: Observed; caller?: { clientId: string } };

/** Status and code of a request whose caller hung up before the answer (logs and metrics only). */
const CLIENT_CLOSED_STATUS = 499;
const CLIENT_CLOSED_CODE = 'client_closed_request';

/** Probes and scrapes are logged at debug: every few seconds from every kubelet and Prometheus. */
const QUIET_ROUTES = new Set(['/health/live', '/health/ready', '/health/startup', '/metrics']);

export interface HttpObservabilityOptions {
  /** The access log; none when the gateway runs without a logger (tests). */
  logger?: Pino;
  metrics: GatewayMetrics;
  /** Request spans, when tracing is configured (tracing.ts). */
  tracing?: GatewayTracing;
}

/**
 * Every request, whatever its route and outcome (401, 403, 404, 413, 429, a body the parser
 * refused), is seen once: one access-log line with its facts as JSON fields, and once in
 * vgw_http_request_duration_seconds (by route template, never the raw path). Fastify hooks,
 * not Nest interceptors: interceptors never see requests refused before a handler runs
 * (unknown routes, body limits, parser errors), hooks see all of them.
 *
 * The request id is Fastify's own (`genReqId`, from a well-formed `X-Request-Id` or fresh,
 * see request-context.ts), echoed on every response, and kept with the request's facts, which
 * the inquiry path is handed (`requestFacts`) for the lines it writes.
 */
export async function installHttpObservability(
  app: NestFastifyApplication,
  options: HttpObservabilityOptions,
): Promise<void> {
  const fastify = app.getHttpAdapter().getInstance();
  const { logger, metrics, tracing } = options;
  const observe = (request: FastifyRequest): Observed => {
    const observed: Observed = { facts: { requestId: request.id } };
    (request as ObservedRequest)[OBSERVED] = observed;
    return observed;
  };
  // The async-local request context only while tracing: it parents the Redis command spans,
  // and it costs every promise hooks (request-context.ts).
  if (tracing) {
    await app.register(fastifyRequestContext, {
      defaultStoreValues: (request: FastifyRequest) => ({ facts: observe(request).facts }),
    });
  }

  fastify.addHook('onRequest', (request, reply, done) => {
    // Set first, so that every answer carries it: errors, 404s and refused bodies included.
    void reply.header(REQUEST_ID_HEADER_IN, request.id);
    const observed = (request as ObservedRequest)[OBSERVED] ?? observe(request);
    // A caller that hangs up before its answer is complete (while the body arrives, or while an
    // inquiry runs) is logged and counted when the connection closes, as status 499 (nginx's
    // "client closed request"); an inquiry it started still runs to its end and, its outcome
    // missing from that line, writes its own with the same request id. An answered inquiry's
    // outcome is on its access line (accessLine). Fastify may still run onResponse later for the
    // aborted write: `facts.accessLogged` keeps it to one line.
    reply.raw.once('close', () => !reply.raw.writableFinished && hungUp(request, reply, observed));
    if (tracing) {
      const route = request.routeOptions.url;
      const span = tracing.startRequestSpan(route ? `${request.method} ${route}` : request.method, request.headers, {
        'http.request.method': request.method,
        ...(route ? { 'http.route': route } : {}),
        'vgw.request_id': request.id,
      });
      observed.facts.trace = { span, tracing };
    } else {
      observed.facts.callerTraceContext = callerTraceContext(request.headers);
    }
    done();
  });

  fastify.addHook('onSend', (request, reply, payload, done) => {
    const observed = (request as ObservedRequest)[OBSERVED];
    if (observed && isProblem(reply)) observed.code = problemCode(payload);
    done(null, payload);
  });

  const hungUp = (request: ObservedRequest, reply: FastifyReply, observed: Observed): void => {
    if (observed.facts.accessLogged) return;
    observed.facts.accessLogged = true;
    observed.code = CLIENT_CLOSED_CODE;
    if (observed.facts.trace) endSpanWithError(observed.facts.trace.span, 'client_aborted');
    observed.facts.trace = undefined;
    // `elapsedTime` counts from routing (Fastify starts it before onRequest): valid mid-request.
    const seconds = reply.elapsedTime / 1000;
    metrics.observeRequest(request.routeOptions.url, request.method, CLIENT_CLOSED_STATUS, CLIENT_CLOSED_CODE, seconds);
    if (logger?.isLevelEnabled('info'))
      logger.info(accessLine(request, reply, observed, CLIENT_CLOSED_STATUS), 'request');
  };

  fastify.addHook('onResponse', (request, reply, done) => {
    const observed = (request as ObservedRequest)[OBSERVED];
    if (observed?.facts.accessLogged) return done();
    if (observed) observed.facts.accessLogged = true;
    const route = request.routeOptions.url;
    const status = reply.statusCode;
    if (observed?.facts.trace) endRequestSpan(request, reply, observed);
    metrics.observeRequest(route, request.method, status, observed?.code, reply.elapsedTime / 1000);
    if (status === 401 || status === 403) {
      metrics.authFailures.inc({
        reason: observed?.authFailure ?? (status === 401 ? 'missing_credential' : 'missing_scope'),
      });
    }
    const level = route !== undefined && QUIET_ROUTES.has(route) ? 'debug' : reply.statusCode >= 500 ? 'warn' : 'info';
    if (logger?.isLevelEnabled(level))
      logger[level](accessLine(request as ObservedRequest, reply, observed), 'request');
    done();
  });
}

/** The request span's outcome: the same facts as the access line, none of them personal data. */
function endRequestSpan(request: ObservedRequest, reply: FastifyReply, observed: Observed): void {
  const span = observed.facts.trace!.span;
  const trackId = reply.getHeader(TRACK_ID_HEADER);
  span.setAttribute('http.response.status_code', reply.statusCode);
  if (observed.code) span.setAttribute('vgw.problem_code', observed.code);
  if (request.caller) span.setAttribute('vgw.client_id', request.caller.clientId);
  if (typeof trackId === 'string') span.setAttribute('vgw.track_id', trackId);
  if (reply.getHeader(IDEMPOTENT_REPLAYED_HEADER)) span.setAttribute('vgw.replayed', true);
  if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

function accessLine(
  request: ObservedRequest,
  reply: FastifyReply,
  observed: Observed | undefined,
  status = reply.statusCode,
): object {
  const route = request.routeOptions.url;
  const trackId = reply.getHeader(TRACK_ID_HEADER);
  const inquiry = observed?.facts.inquiry;
  return {
    // The same fields as every other line written for this request (and traceId while traced).
    ...(observed ? requestLogFields(observed.facts) : { requestId: request.id }),
    method: request.method,
    // The template, never the raw path (it may hold a trackId); an unknown path is logged
    // redacted (a caller may put anything in it).
    route: route ?? null,
    ...(route === undefined ? { path: redactText(request.url.split('?')[0].slice(0, 256)) } : {}),
    status,
    ...(observed?.code ? { code: observed.code } : {}),
    durationMs: Math.round(reply.elapsedTime * 10) / 10,
    ...(request.caller ? { clientId: request.caller.clientId } : {}),
    // A hung-up caller's line has no X-Track-Id header yet; the inquiry's facts have it.
    ...(typeof trackId === 'string' ? { trackId } : inquiry ? { trackId: inquiry.trackId } : {}),
    ...(reply.getHeader(IDEMPOTENT_REPLAYED_HEADER) ? { replayed: true } : {}),
    // The inquiry this request ran, when it has its outcome (inquiry/upstream-call.ts).
    ...(inquiry
      ? {
          operation: inquiry.operation,
          requestHandlingType: inquiry.requestHandlingType,
          outcome: inquiry.outcome,
          upstreamMs: inquiry.upstreamMs,
        }
      : {}),
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
