import { SpanStatusCode, TraceFlags, type Attributes, type Span } from '@opentelemetry/api';
import { parseTraceParent } from '@opentelemetry/core';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../config/tracing-config.js';

/**
 * A caller's trace context, when tracing is off: passed on to the upstream unchanged so the
 * provider's side of the trace still joins the caller's (the gateway adds no span of its own).
 * Only a well-formed `traceparent` is passed on, with a bounded `tracestate`.
 */
export interface CallerTraceContext {
  traceparent: string;
  tracestate?: string;
}

export function callerTraceContext(
  headers: Record<string, string | string[] | undefined>,
): CallerTraceContext | undefined {
  const traceparent = typeof headers.traceparent === 'string' ? w3cTraceparent(headers.traceparent) : undefined;
  if (traceparent === undefined) return undefined;
  const tracestate = headers.tracestate;
  return typeof tracestate === 'string' && tracestate.length <= 512 && !/[\r\n]/.test(tracestate)
    ? { traceparent, tracestate }
    : { traceparent };
}

/**
 * A caller's `traceparent` as W3C Trace Context (§3.2) says to take it, rewritten as the version
 * this gateway speaks (00), or undefined when it is not valid. Parsed by OpenTelemetry's own
 * parser (the one its propagator uses when tracing is on): version `ff` is invalid, ids of all
 * zeros are invalid, only lower-case hex; version 00 is exactly four fields, while a later
 * version may carry more after a `-`, of which only the first four are read. Of a later version's
 * flags only `sampled` is understood, so only it is passed on (§3.2.4: "do not parse other flags").
 */
export function w3cTraceparent(value: string): string | undefined {
  const parsed = parseTraceParent(value);
  if (parsed === null) return undefined;
  const flags = value.trimStart().startsWith('00-') ? parsed.traceFlags : parsed.traceFlags & TraceFlags.SAMPLED;
  return `00-${parsed.traceId}-${parsed.spanId}-${flags.toString(16).padStart(2, '0')}`;
}

/**
 * The request, Redis and upstream spans (tracing-sdk.ts builds the one implementation). The
 * OpenTelemetry SDK and its OTLP exporter are loaded only when tracing is configured
 * (`startTracing`): a gateway without tracing never has them in memory (docs/operations.md, "Tracing").
 */
export interface GatewayTracing {
  /** A request's SERVER span, continuing the caller's trace when its headers carry one. */
  startRequestSpan(name: string, headers: Record<string, string | string[] | undefined>, attributes: Attributes): Span;
  /** A CLIENT span under `parent` (the request's span). */
  startClientSpan(parent: Span, name: string, attributes: Attributes): Span;
  /** Writes `traceparent` (and `tracestate`) naming `span` into outgoing headers. */
  inject(span: Span, headers: Record<string, string>): void;
  /** Exports what is still buffered (graceful shutdown). */
  shutdown(): Promise<void>;
}

/** Tracing as configured, with the SDK loaded now (only ever called when it is on). */
export async function startTracing(config: TracingConfig, exporter?: SpanExporter): Promise<GatewayTracing> {
  // tracing-sdk.ts does not import this file (no cycle): the compiler checks here that
  // its class is a GatewayTracing.
  const { OtelGatewayTracing } = await import('./tracing-sdk.js');
  return new OtelGatewayTracing(config, exporter);
}

/** Ends a span as failed, with a bounded, value-free error type (never a message). */
export function endSpanWithError(span: Span, errorType: string): void {
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** The request and its tracer, while tracing is on (request-context.ts holds it). */
export interface RequestTrace {
  span: Span;
  tracing: GatewayTracing;
}
