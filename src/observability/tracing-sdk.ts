import {
  ROOT_CONTEXT,
  SpanKind,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../config/tracing-config.js';

/**
 * OpenTelemetry tracing with explicit spans at the three places an inquiry spends its time:
 * the request (SERVER, from the Fastify hooks that already see every request), each Redis
 * command (CLIENT, at ioredis's `sendCommand`) and each upstream call (CLIENT, with
 * `traceparent` injected). Explicit rather than auto-instrumentation: the auto-instrumentations
 * patch modules through require hooks, which this native-ESM service would have to load
 * through a loader before anything else, and the http/fastify instrumentations add several
 * spans and context switches per request that the gateway's own hooks make redundant.
 *
 * No global provider or context manager is registered: a span's parent is passed explicitly
 * (the request's span lives in the async-local request context, request-context.ts), so two
 * gateways in one process (tests) never mix their spans, and nothing runs when tracing is off.
 *
 * What spans carry is chosen here and in their callers: route templates, methods, statuses,
 * problem codes, client ids, trackIds and request ids. Never a request body, a raw path, a
 * header value, a Redis key or argument, a token or a credential.
 */
export class OtelGatewayTracing {
  private readonly tracer: Tracer;
  private readonly provider: TracerProvider;
  private readonly propagator = new W3CTraceContextPropagator();

  constructor(config: TracingConfig, exporter?: SpanExporter) {
    this.provider = new TracerProvider({
      sampler: samplerFor(config),
      resource: resourceFromAttributes({ ...config.resourceAttributes, 'service.name': config.serviceName }),
      spanProcessors: [
        new BatchSpanProcessor({
          exporter: exporter ?? new OTLPTraceExporter({ url: config.tracesUrl, headers: config.exporterHeaders }),
          scheduledDelayMillis: config.batchDelayMs,
        }),
      ],
    });
    this.tracer = this.provider.getTracer('verification-gateway');
  }

  /** A request's SERVER span, continuing the caller's trace when its headers carry one. */
  startRequestSpan(name: string, headers: Record<string, string | string[] | undefined>, attributes: Attributes): Span {
    const parent = this.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    return this.tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  }

  /** A CLIENT span under `parent` (the request's span). */
  startClientSpan(parent: Span, name: string, attributes: Attributes): Span {
    return this.tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, trace.setSpan(ROOT_CONTEXT, parent));
  }

  /** Writes `traceparent` (and `tracestate`) naming `span` into outgoing headers. */
  inject(span: Span, headers: Record<string, string>): void {
    this.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter);
  }

  /** Exports what is still buffered (graceful shutdown). */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}

function samplerFor(config: TracingConfig): Sampler {
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(config.samplerRatio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.samplerRatio) });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}
