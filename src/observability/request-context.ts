import { randomUUID } from 'node:crypto';
import { requestContext } from '@fastify/request-context';
import type { CallerTraceContext, RequestTrace } from './tracing.js';

/**
 * What every log line and span of one request shares, held in an async-local store
 * (@fastify/request-context: AsyncLocalStorage, re-entered after body parsing) so that
 * code deep in a service logs it without receiving it as a parameter.
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

/** What an access line says of the inquiry its request ran (inquiry.service.ts). */
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

/** The facts of the request being served, or undefined outside a request. */
export function currentRequest(): RequestFacts | undefined {
  return requestContext.get('facts');
}
