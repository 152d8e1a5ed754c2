import { randomUUID } from 'node:crypto';
import { requestContext } from '@fastify/request-context';
import type { CallerTraceContext, RequestTrace } from './tracing.js';

/**
 * What the log lines and spans of one request share. It travels with the request
 * (`requestFacts(request)`, http-observability.ts) and is handed down the inquiry path as a
 * parameter (controller → InquiryService → UpstreamCall → AuthorizedUpstream → UpstreamClient → UpstreamHttp),
 * so the lines that path writes carry the request id.
 *
 * Not in an AsyncLocalStorage, except while tracing is on. On Node 20 an async-local store cost
 * 13 % of the CPU per inquiry; on Node 24 (AsyncContextFrame) it costs nothing measurable, and
 * the explicit parameter stays as the more readable of two equal-cost designs: every signature on
 * the path shows what it is handed (docs/performance.md,
 * docs/decisions/0008-request-facts-passed-down.md). Tracing keeps one (`currentRequest`),
 * for the Redis command spans, which have no other way to their request's span.
 */
export interface RequestFacts {
  requestId: string;
  /** The request's SERVER span and its tracer, while tracing is on (tracing.ts). */
  trace?: RequestTrace;
  /** While tracing is off: a caller's valid trace context, passed on to the upstream unchanged. */
  callerTraceContext?: CallerTraceContext;
  /** An inquiry's outcome, for the request's access line (one line per request). */
  inquiry?: InquiryLogFields;
  /**
   * The access line has been written and counted (at the answer, or when the caller hung up):
   * never twice, and facts learnt later go on a line of their own.
   */
  accessLogged?: true;
}

/** What an access line says of the inquiry its request ran (inquiry/upstream-call.ts). */
export interface InquiryLogFields {
  trackId: string;
  clientId: string;
  operation: string;
  requestHandlingType: string;
  /** `succeeded`, `failed` or `unknown`. */
  outcome: string;
  /** Milliseconds the upstream call took, token renewal included. */
  upstreamMs: number;
}

declare module '@fastify/request-context' {
  interface RequestContextData {
    facts: RequestFacts;
  }
}

/** Bounded, and only characters that are safe in a header, a log line and a log query. */
const WELL_FORMED = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The caller's `X-Request-Id` when well formed; a fresh UUID otherwise. */
export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && WELL_FORMED.test(header) ? header : randomUUID();
}

/**
 * While tracing is on, the facts of the request being served (undefined outside a request);
 * always undefined while tracing is off (see RequestFacts).
 */
export function currentRequest(): RequestFacts | undefined {
  return requestContext.get('facts');
}

/** The fields that tie a log line to its request: `requestId`, and `traceId` while traced. */
export function requestLogFields(facts: RequestFacts | undefined): { requestId?: string; traceId?: string } {
  if (!facts) return {};
  const traceId = facts.trace?.span.spanContext().traceId;
  return traceId ? { requestId: facts.requestId, traceId } : { requestId: facts.requestId };
}
