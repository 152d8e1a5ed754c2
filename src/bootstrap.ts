import 'reflect-metadata';
import type { IncomingMessage } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import type { OpenAPIObject } from '@nestjs/swagger';
import fastifyCors from '@fastify/cors';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';
import type { AppConfig } from './config/app-config.js';
import { loadConfig } from './config/load-config.js';
import { installHttpObservability } from './observability/http-observability.js';
import { JsonLogger } from './observability/json-logger.js';
import { knownSecrets } from './config/known-secrets.js';
import { GatewayMetrics } from './observability/metrics.js';
import {
  AGE_HEADER,
  API_KEY_HEADER_IN,
  CACHE_CONTROL_HEADER_IN,
  CACHE_STATUS_HEADER,
  IDEMPOTENCY_KEY_HEADER_IN,
  IDEMPOTENT_REPLAYED_HEADER,
  LOCATION_HEADER,
  PREFERENCE_APPLIED_HEADER,
  PREFER_HEADER_IN,
  REQUEST_ID_HEADER,
  REQUEST_ID_HEADER_IN,
  RETRY_AFTER_HEADER,
  TRACK_ID_HEADER,
} from './vocabulary/headers.js';
import { requestIdFrom } from './observability/request-context.js';
import { startTracing, type GatewayTracing } from './observability/tracing.js';
import { buildOpenApiDocument, setupOpenApi } from './openapi.js';
import { describeAddedOperations } from './inquiry/added-operations.openapi.js';
import { installOpsListener } from './http/ops-listener.js';
import { closeLingeringConnections } from './http/lingering-connections.js';
import { ShutdownState } from './health/shutdown.state.js';
import { clientErrorHandler, frameworkErrors, rejectConnect, rejectMissingHost } from './problem/framework-errors.js';
import { ProblemFilter } from './problem/problem.filter.js';

export interface GatewayOptions {
  /** Defaults to structured JSON logs at LOG_LEVEL; tests pass `false` or their own. */
  logger?: LoggerService | false;
  /**
   * Where spans go instead of the OTLP endpoint (an embedding process, or a test's in-memory
   * exporter). Tracing itself is still switched on and sampled by the OTEL_* variables.
   */
  spanExporter?: SpanExporter;
}

export interface Gateway {
  app: NestFastifyApplication;
  config: AppConfig;
  /** Present while tracing is on; its spans are exported on close. */
  tracing?: GatewayTracing;
  /** The OpenAPI document served at /docs-json: the built-ins' and this catalog's operations. */
  openApi: OpenAPIObject;
}

/**
 * Builds a ready-to-listen gateway from an environment map. Configuration is validated
 * first (throwing `ConfigError` naming every bad variable), so nothing starts half-configured.
 * main.ts, the sandbox and the tests all start the gateway through this one function.
 */
export async function createGateway(
  env: Record<string, string | undefined>,
  options: GatewayOptions = {},
): Promise<Gateway> {
  const config = loadConfig(env);
  // Scrubbed by value from every log line and problem detail (known-secrets.ts).
  knownSecrets.add('credential', config.upstream.username.reveal(), config.upstream.password.reveal());
  knownSecrets.add('credential', ...Object.values(config.tracing.exporterHeaders));
  knownSecrets.add('credential', config.reuse.hmacKey?.reveal());
  const logger = options.logger ?? new JsonLogger(config.logging.level);
  const adapter = new FastifyAdapter({
    bodyLimit: config.http.bodyLimitBytes,
    // Fastify's own logger stays off: it would log errors with their stacks. The access log
    // (one line per request) is written by http-observability.ts with the gateway's pino.
    logger: false,
    // Above any path Node's 16 KiB header limit lets in: the router never answers a long segment
    // itself. It checks the length before the constraint that keeps ops routes off this port, so
    // a long /console/<segment> answered 400 or 405 here and revealed the route (test/ops-port.e2e).
    routerOptions: { maxParamLength: 16_384 },
    // Fastify's request id, from a well-formed X-Request-Id or fresh (request-context.ts).
    genReqId: (request: IncomingMessage) => requestIdFrom(request.headers[REQUEST_ID_HEADER_IN]),
    // A body with `__proto__` or `constructor.prototype` is refused (400 validation_failed),
    // not silently altered: unknown fields are rejected, these included.
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Not fastify's own 503 (a JSON body that is not problem+json) for a request on a kept-alive
    // connection while the server closes: by then the shutdown sequence has refused new inquiries
    // in problem+json and every answer closes its connection (src/http/shutdown-sequence.ts).
    return503OnClosing: false,
    // Errors of the router and of Node's HTTP parser are problem+json too (framework-errors.ts).
    frameworkErrors,
    clientErrorHandler,
    // Slow clients (fastify turns these off by default): headers and body must arrive in time,
    // checked every second; idle keep-alive connections outlive the load balancer's (60 s).
    requestTimeout: config.http.requestTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    http: {
      requestTimeout: config.http.requestTimeoutMs,
      headersTimeout: Math.min(10_000, config.http.requestTimeoutMs),
      keepAliveTimeout: config.http.keepAliveTimeoutMs,
      connectionsCheckingInterval: 1000,
      // Node would answer a Host-less HTTP/1.1 request with its own empty 400; rejectMissingHost
      // answers it in problem+json instead (framework-errors.ts).
      requireHostHeader: false,
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(config), adapter, {
    logger,
    abortOnError: false,
  });
  // Fastify's own request errors (malformed JSON, body too large) reach this filter too:
  // Nest's adapter wraps them in HttpException with the fastify error as cause.
  const added = config.operations.filter((operation) => !operation.builtIn).map((operation) => operation.name);
  app.useGlobalFilters(new ProblemFilter(new Set(added)));
  // Once shutdown begins, answers close their connection: a keep-alive client would otherwise
  // hold the server open (Node waits for the connection) until its keep-alive timeout.
  const shutdown = app.get(ShutdownState);
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onSend', (_request, reply, payload, done) => {
      // Callback style: an async hook would cost every answer a promise (docs/performance.md).
      if (shutdown.isShuttingDown) reply.header('connection', 'close');
      done(null, payload);
    });
  if (config.http.corsOrigins.length > 0) {
    // Web apps are named callers (docs/operations.md, CORS_ORIGINS): their preflights get the
    // request headers an inquiry needs, and scripts may read the headers the contract answers with.
    await app.register(fastifyCors, {
      origin: config.http.corsOrigins,
      // A plain OPTIONS (no Origin, so not a preflight) gets the 204 with the allowed methods
      // rather than the plugin's text/plain 400 "Invalid Preflight Request": every error the
      // gateway writes is problem+json, and this one needs none.
      strictPreflight: false,
      methods: ['GET', 'POST'],
      allowedHeaders: [
        'authorization',
        API_KEY_HEADER_IN,
        IDEMPOTENCY_KEY_HEADER_IN,
        PREFER_HEADER_IN,
        CACHE_CONTROL_HEADER_IN,
        'content-type',
        REQUEST_ID_HEADER_IN,
        'traceparent',
        'tracestate',
      ],
      exposedHeaders: [
        TRACK_ID_HEADER,
        IDEMPOTENT_REPLAYED_HEADER,
        RETRY_AFTER_HEADER,
        REQUEST_ID_HEADER,
        LOCATION_HEADER,
        PREFERENCE_APPLIED_HEADER,
        AGE_HEADER,
        CACHE_STATUS_HEADER,
      ],
      maxAge: 600,
    });
  }
  const tracing = config.tracing.enabled ? await startTracing(config.tracing, options.spanExporter) : undefined;
  if (tracing) {
    // After the server has drained: the last requests' spans are exported, not dropped.
    app
      .getHttpAdapter()
      .getInstance()
      .addHook('onClose', () => tracing.shutdown());
  }
  await installHttpObservability(app, {
    logger: logger instanceof JsonLogger ? logger.pino : undefined,
    metrics: app.get(GatewayMetrics),
    tracing,
  });
  const fastify = app.getHttpAdapter().getInstance();
  fastify.addHook('onRequest', rejectMissingHost);
  // Every body reaches the guards, then the route's validation step, which answers a wrong
  // Content-Type (docs/api.md §3): without this catch-all, fastify itself would answer 415 for a
  // media type it has no parser for, or a body without Content-Type (`*` is also the parser of the
  // latter), before any guard runs. Read as a buffer, so the body limit applies (413). A route
  // that takes another media type registers its own parser, which is chosen before this one.
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  fastify.server.on('connect', rejectConnect);
  // When the server closes (after the shutdown sequence's drain), connections that would hold
  // its close until their timeout are closed (lingering-connections.ts).
  fastify.addHook('preClose', (done) => {
    closeLingeringConnections(fastify.server);
    done();
  });
  if (config.http.opsPort !== undefined) {
    installOpsListener(app, {
      port: config.http.opsPort,
      requestTimeoutMs: config.http.requestTimeoutMs,
      keepAliveTimeoutMs: config.http.keepAliveTimeoutMs,
    });
  }
  const openApi = describeAddedOperations(buildOpenApiDocument(app), config.operations);
  setupOpenApi(app, openApi);
  await app.init();
  return { app, config, tracing, openApi };
}
