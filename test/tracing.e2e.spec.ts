/**
 * W3C Trace Context and OpenTelemetry tracing (docs/operations.md, "Tracing"): a trace started
 * by a caller continues through the gateway (request, Redis and upstream spans) to the upstream,
 * which receives a `traceparent` naming the gateway's upstream span; rejected requests have
 * their span too; no span holds personal data, a key, a token or a credential. With tracing
 * off there are no spans, and a caller's `traceparent` still reaches the upstream unchanged.
 */
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { SpanRecorder } from './support/span-recorder.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { RedisServer } from './support/redis-server.js';
import { IBAN, MOBILE, NATIONAL_CODE, SHAHKAR, UPSTREAM_PASSWORD, UPSTREAM_USERNAME } from './support/fixtures.js';
import { TEST_CLIENTS, callGateway, startGateway, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { nextEvent } from './support/events.js';

/** Collects exported spans and announces each batch, so tests await spans instead of sleeping. */
class RecordingExporter extends SpanRecorder {
  /** The request span of the request with this X-Request-Id, once exported. */
  requestSpan(requestId: string): Promise<ReadableSpan> {
    const isIt = (span: ReadableSpan) =>
      span.kind === SpanKind.SERVER && span.attributes['vgw.request_id'] === requestId;
    const found = this.spans.find(isIt);
    return found ? Promise.resolve(found) : nextEvent<ReadableSpan>(this, 'span', isIt, 5000);
  }
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN_ID = '00f067aa0ba902b7';
const CALLER_TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN_ID}-01`;
/** Tracing on, spans exported 20 ms after they end (the standard batch-delay variable). */
const TRACING_ENV = { OTEL_TRACES_EXPORTER: 'otlp', OTEL_BSP_SCHEDULE_DELAY: '20', OTEL_SERVICE_NAME: 'vgw-test' };

let sim: UpstreamSimulator;
let redis: RedisServer;

beforeAll(async () => {
  sim = new UpstreamSimulator();
  await sim.start();
  redis = await RedisServer.start();
});

afterAll(async () => {
  await sim.stop();
  await redis.stop();
});

describe('tracing on', () => {
  const exporter = new RecordingExporter();
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway(
      { ...TRACING_ENV, UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: redis.url },
      { spanExporter: exporter },
    );
    await untilStoreReady(gateway);
  });

  afterAll(async () => {
    await gateway.close();
  });

  it("continues the caller's trace through Redis and the upstream call to the upstream", async () => {
    const res = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
      headers: { traceparent: CALLER_TRACEPARENT, tracestate: 'vendor=abc', 'x-request-id': 'trace-shahkar-1' },
    });
    expect(res.status).toBe(200);
    const trackId = res.headers.get('x-track-id');

    const server = await exporter.requestSpan('trace-shahkar-1');
    expect(server.name).toBe('POST /v1/kyc/shahkar');
    expect(server.spanContext().traceId).toBe(TRACE_ID);
    expect(server.parentSpanContext?.spanId).toBe(CALLER_SPAN_ID);
    expect(server.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/kyc/shahkar',
      'http.response.status_code': 200,
      'vgw.client_id': TEST_CLIENTS.full.clientId,
      'vgw.track_id': trackId,
    });
    expect(server.resource.attributes['service.name']).toBe('vgw-test');

    // Children of the request span, all in the caller's trace; they ended before it did.
    const children = exporter.spans.filter((span) => span.parentSpanContext?.spanId === server.spanContext().spanId);
    for (const child of children) expect(child.spanContext().traceId).toBe(TRACE_ID);
    const upstream = children.filter((span) => span.name.startsWith('upstream POST'));
    expect(upstream).toHaveLength(1);
    expect(upstream[0].kind).toBe(SpanKind.CLIENT);
    expect(upstream[0].attributes['http.response.status_code']).toBe(200);
    const redisSpans = children.filter((span) => span.name.startsWith('redis '));
    expect(redisSpans.length).toBeGreaterThanOrEqual(1);
    for (const span of redisSpans)
      expect(Object.keys(span.attributes).sort()).toEqual(['db.operation.name', 'db.system.name']);

    // The upstream received the trace, its parent being the gateway's upstream span.
    const received = sim.requests.filter((request) => request.trackId === trackId);
    expect(received).toHaveLength(1);
    expect(received[0].traceparent).toBe(`00-${TRACE_ID}-${upstream[0].spanContext().spanId}-01`);
    expect(received[0].tracestate).toBe('vendor=abc');
  });

  it('parents every Redis command on the request that issued it, with requests in flight together', async () => {
    // Many requests' commands in flight at once: each Redis span must join its own request's trace.
    const ids = Array.from({ length: 24 }, (_, i) => `trace-concurrent-${i}`);
    const traceIdOf = (i: number) => `${(i + 1).toString(16).padStart(2, '0')}${TRACE_ID.slice(2)}`;
    const answers = await Promise.all(
      ids.map((id, i) =>
        callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
          apiKey: TEST_CLIENTS.full.key,
          json: SHAHKAR,
          headers: {
            traceparent: `00-${traceIdOf(i)}-${CALLER_SPAN_ID}-01`,
            'x-request-id': id,
            'idempotency-key': id,
          },
        }),
      ),
    );
    expect(answers.map((res) => res.status)).toEqual(ids.map(() => 200));
    for (const [i, id] of ids.entries()) {
      const server = await exporter.requestSpan(id);
      expect(server.spanContext().traceId).toBe(traceIdOf(i));
      const redisSpans = exporter.spans.filter(
        (span) => span.name.startsWith('redis ') && span.parentSpanContext?.spanId === server.spanContext().spanId,
      );
      // The Idempotency-Key claim and the record are written before the upstream call.
      expect(redisSpans.length).toBeGreaterThanOrEqual(2);
      for (const span of redisSpans) expect(span.spanContext().traceId).toBe(traceIdOf(i));
    }
  });

  it('starts a new trace when the caller sends none, and traces IBAN inquiries the same way', async () => {
    const res = await callGateway(gateway.url, 'POST', '/v1/kyc/iban', {
      apiKey: TEST_CLIENTS.full.key,
      json: { iban: IBAN },
      headers: { 'x-request-id': 'trace-iban-1' },
    });
    expect(res.status).toBe(200);
    const server = await exporter.requestSpan('trace-iban-1');
    expect(server.parentSpanContext).toBeUndefined();
    const received = sim.requests.find((request) => request.trackId === res.headers.get('x-track-id'));
    expect(received?.traceparent?.split('-')[1]).toBe(server.spanContext().traceId);
  });

  it.each([
    ['no credential', { 'x-request-id': 'trace-401' }, SHAHKAR, 401, 'unauthenticated'],
    [
      'an invalid body',
      { 'x-request-id': 'trace-400', 'x-api-key': TEST_CLIENTS.full.key },
      { nationalCode: NATIONAL_CODE },
      400,
      'validation_failed',
    ],
  ])(
    'gives a refused request (%s) its span, with the status and problem code',
    async (_case, headers, json, status, code) => {
      const res = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
        json,
        headers: { ...headers, traceparent: CALLER_TRACEPARENT },
      });
      expect(res.status).toBe(status);
      const server = await exporter.requestSpan(headers['x-request-id']);
      expect(server.spanContext().traceId).toBe(TRACE_ID);
      expect(server.attributes).toMatchObject({ 'http.response.status_code': status, 'vgw.problem_code': code });
    },
  );

  it('names an unknown path by its method only, never by the raw path', async () => {
    const res = await callGateway(gateway.url, 'GET', `/v1/kyc/${NATIONAL_CODE}`, {
      headers: { 'x-request-id': 'trace-404' },
    });
    expect(res.status).toBe(404);
    const server = await exporter.requestSpan('trace-404');
    expect(server.name).toBe('GET');
    expect(server.attributes['http.route']).toBeUndefined();
  });

  it('puts no national code, mobile, IBAN, API key, token or credential in any span', () => {
    const tokens = sim.requests.flatMap((request) => (request.authorization ? [request.authorization.slice(7)] : []));
    expect(tokens.length).toBeGreaterThan(0);
    const secrets = [
      NATIONAL_CODE,
      MOBILE,
      IBAN,
      TEST_CLIENTS.full.key,
      UPSTREAM_USERNAME,
      UPSTREAM_PASSWORD,
      ...tokens,
    ];
    expect(exporter.spans.length).toBeGreaterThan(5);
    const everything = JSON.stringify(
      exporter.spans.map((span) => ({
        name: span.name,
        attributes: span.attributes,
        events: span.events,
        links: span.links,
      })),
    );
    for (const secret of secrets) expect(everything).not.toContain(secret);
  });
});

describe('tracing off', () => {
  it("makes no spans and passes the caller's valid trace context to the upstream unchanged", async () => {
    const exporter = new RecordingExporter();
    const gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl }, { spanExporter: exporter });
    try {
      const sent = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
        apiKey: TEST_CLIENTS.full.key,
        json: SHAHKAR,
        headers: { traceparent: CALLER_TRACEPARENT, tracestate: 'vendor=abc' },
      });
      const malformed = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
        apiKey: TEST_CLIENTS.full.key,
        json: SHAHKAR,
        headers: { traceparent: `00-${'0'.repeat(32)}-${CALLER_SPAN_ID}-01` },
      });
      expect([sent.status, malformed.status]).toEqual([200, 200]);
      const byTrackId = (res: typeof sent) => sim.requests.find((r) => r.trackId === res.headers.get('x-track-id'));
      expect(byTrackId(sent)).toMatchObject({ traceparent: CALLER_TRACEPARENT, tracestate: 'vendor=abc' });
      expect(byTrackId(malformed)?.traceparent).toBeUndefined();
      await gateway.close();
      // Tracing off builds no tracer at all: nothing could ever reach an exporter.
      expect(exporter.spans).toEqual([]);
    } finally {
      await gateway.close().catch(() => undefined);
    }
  });
});

describe('export over OTLP/HTTP', () => {
  let receiver: Server;
  const received = new EventEmitter();

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.emit('post', { path: request.url, headers: request.headers, body: Buffer.concat(chunks) });
        response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    await new Promise((resolve) => receiver.close(resolve));
  });

  it('sends the spans as protobuf to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces, with the configured headers', async () => {
    const { port } = receiver.address() as AddressInfo;
    const gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-secret',
      OTEL_BSP_SCHEDULE_DELAY: '20',
    });
    try {
      const exported = nextEvent<{ path: string; headers: Record<string, string>; body: Buffer }>(
        received,
        'post',
        (post) => post.body.includes(Buffer.from(TRACE_ID, 'hex')),
        5000,
      );
      const res = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
        apiKey: TEST_CLIENTS.full.key,
        json: SHAHKAR,
        headers: { traceparent: CALLER_TRACEPARENT },
      });
      expect(res.status).toBe(200);
      const post = await exported;
      expect(post.path).toBe('/v1/traces');
      expect(post.headers['content-type']).toBe('application/x-protobuf');
      expect(post.headers.authorization).toBe('Bearer collector-secret');
    } finally {
      await gateway.close();
    }
  });
});
