/**
 * Every request is seen once (docs/runbooks.md, "Finding a request"): one access-log line per
 * request, whatever the route and outcome (200, 400 from the validator and from the body
 * parser, 401, 403, 404, 413, 429), with its facts as JSON fields and level names; the request
 * id accepted from a well-formed X-Request-Id or generated, echoed on every response
 * (problem+json included) and on every log line written while the request was served.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createGateway } from '../src/bootstrap.js';
import { JsonLogger } from '../src/observability/json-logger.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { SHAHKAR, UUID_V4 } from './support/fixtures.js';
import { TEST_CLIENTS, callGateway, type Exchange, apiKeysWith } from './support/gateway.js';

interface Line {
  level: string;
  msg: string;
  requestId?: string;
  [field: string]: unknown;
}

class Lines extends Writable {
  readonly all: Line[] = [];
  private buffer = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.buffer += chunk.toString();
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      this.all.push(JSON.parse(this.buffer.slice(0, newline)) as Line);
      this.buffer = this.buffer.slice(newline + 1);
    }
    callback();
  }
}

const QUOTA_KEY = 'key-quota-0123456789';
const API_KEYS = apiKeysWith({ clientId: 'app-quota', key: QUOTA_KEY, scopes: ['kyc:shahkar'], quotaPerMinute: 1 });

describe('access log and request ids', () => {
  const lines = new Lines();
  let sim: UpstreamSimulator;
  let app: NestFastifyApplication;
  let url: string;
  const exchanges: Record<string, Exchange> = {};

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    ({ app } = await createGateway(
      {
        UPSTREAM_BASE_URL: sim.baseUrl,
        UPSTREAM_USERNAME: 'sandbox-user',
        UPSTREAM_PASSWORD: 'sandbox-password',
        API_KEYS,
        BODY_LIMIT_BYTES: '1024',
        // The run's PostgreSQL (test/support/ledger-postgres.js), else PGlite in memory.
        LEDGER_DATABASE_URL: process.env.VGW_TEST_LEDGER_DATABASE_URL,
        LEDGER_DATA_DIR: 'memory://',
      },
      { logger: new JsonLogger('debug', lines) },
    ));
    await app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    const key = TEST_CLIENTS.full.key;
    const post = (path: string, options: Parameters<typeof callGateway>[3]) =>
      callGateway(url, 'POST', path, { apiKey: key, ...options });

    exchanges.ok = await post('/v1/kyc/shahkar', { json: SHAHKAR, headers: { 'x-request-id': 'app-7f3a:42' } });
    exchanges.read = await callGateway(url, 'GET', `/v1/inquiries/${String(exchanges.ok.body.trackId)}`, {
      apiKey: key,
    });
    exchanges.invalid = await post('/v1/kyc/shahkar', { json: { ...SHAHKAR, nationalCode: '123' } });
    exchanges.notJson = await post('/v1/kyc/shahkar', { raw: '{"nationalCode":', headers: { 'x-request-id': 'p-1' } });
    exchanges.noKey = await callGateway(url, 'POST', '/v1/kyc/shahkar', { json: SHAHKAR });
    exchanges.badKey = await post('/v1/kyc/shahkar', { json: SHAHKAR, apiKey: 'wrong-key-0123456789' });
    exchanges.forbidden = await post('/v1/kyc/shahkar', { json: SHAHKAR, apiKey: TEST_CLIENTS.none.key });
    exchanges.unknownRoute = await callGateway(url, 'GET', '/v1/kyc/0499370899/x', { apiKey: key });
    exchanges.unknownTrackId = await callGateway(url, 'GET', '/v1/inquiries/3aa71531-26f9-441f-a01a-493f40f0ea1a', {
      apiKey: key,
    });
    exchanges.tooLarge = await post('/v1/kyc/shahkar', { raw: JSON.stringify({ pad: 'x'.repeat(2000) }) });
    exchanges.quotaFirst = await post('/v1/kyc/shahkar', { json: SHAHKAR, apiKey: QUOTA_KEY });
    exchanges.quotaExceeded = await post('/v1/kyc/shahkar', { json: SHAHKAR, apiKey: QUOTA_KEY });
    sim.setSupplierFailure('primary', 'error');
    exchanges.upstreamFailed = await post('/v1/kyc/shahkar', { json: SHAHKAR, headers: { 'x-request-id': 'fail-1' } });
    sim.setSupplierFailure('primary', null);
    exchanges.badRequestId = await callGateway(url, 'GET', '/health/live', {
      headers: { 'x-request-id': 'has space' },
    });
    exchanges.longRequestId = await callGateway(url, 'GET', '/health/live', {
      headers: { 'x-request-id': 'a'.repeat(129) },
    });
    // The access line is written when the response has been sent: wait until all are in.
    const expected = Object.keys(exchanges).length;
    for (let i = 0; i < 100 && accessLines().length < expected; i++) await new Promise((r) => setImmediate(r));
  });

  afterAll(async () => {
    await app?.close();
    await sim?.stop();
  });

  const accessLines = () => lines.all.filter((line) => line.msg === 'request');

  it('drove every outcome', () => {
    expect(Object.fromEntries(Object.entries(exchanges).map(([name, e]) => [name, e.status]))).toEqual({
      ok: 200,
      read: 200,
      invalid: 400,
      notJson: 400,
      noKey: 401,
      badKey: 401,
      forbidden: 403,
      unknownRoute: 404,
      unknownTrackId: 404,
      tooLarge: 413,
      quotaFirst: 200,
      quotaExceeded: 429,
      upstreamFailed: 502,
      badRequestId: 200,
      longRequestId: 200,
    });
  });

  it('echoes a well-formed X-Request-Id and generates one otherwise, on every response', () => {
    expect(exchanges.ok.headers.get('x-request-id')).toBe('app-7f3a:42');
    expect(exchanges.notJson.headers.get('x-request-id')).toBe('p-1');
    for (const [name, exchange] of Object.entries(exchanges)) {
      if (name === 'ok' || name === 'notJson' || name === 'upstreamFailed') continue;
      expect(`${name}: ${exchange.headers.get('x-request-id')}`).toMatch(
        new RegExp(`^${name}: ${UUID_V4.source.slice(1)}`),
      );
    }
    // problem+json answers too.
    expect(exchanges.tooLarge.headers.get('content-type')).toContain('application/problem+json');
  });

  it('writes exactly one access line per request, with its facts as JSON fields', () => {
    const byId = new Map<string, Line[]>();
    for (const line of accessLines()) byId.set(line.requestId!, [...(byId.get(line.requestId!) ?? []), line]);
    for (const [name, exchange] of Object.entries(exchanges)) {
      const found = byId.get(exchange.headers.get('x-request-id')!) ?? [];
      expect(`${name}: ${found.length}`).toBe(`${name}: 1`);
      expect(found[0]).toMatchObject({ status: exchange.status, method: expect.any(String) });
      expect(found[0].durationMs).toEqual(expect.any(Number));
      if (exchange.status >= 400) expect(found[0].code).toBe(exchange.body.code);
    }
    expect(accessLines()).toHaveLength(Object.keys(exchanges).length);
  });

  it('logs route templates, client ids and trackIds, and never a raw identifier from the path', () => {
    const line = (name: string) =>
      accessLines().find((l) => l.requestId === exchanges[name].headers.get('x-request-id'))!;
    expect(line('ok')).toMatchObject({
      level: 'info',
      method: 'POST',
      route: '/v1/kyc/shahkar',
      status: 200,
      clientId: 'app-full',
      trackId: exchanges.ok.body.trackId,
      // The inquiry's facts are on its request's line: one line per answered inquiry.
      operation: 'shahkar',
      requestHandlingType: 'standard',
      outcome: 'succeeded',
      upstreamMs: expect.any(Number),
    });
    expect(lines.all.filter((l) => l.trackId === exchanges.ok.body.trackId && l.msg !== 'request')).toEqual([]);
    expect(line('quotaExceeded')).not.toHaveProperty('outcome');
    expect(line('read')).toMatchObject({ route: '/v1/inquiries/:trackId', trackId: exchanges.ok.body.trackId });
    expect(line('unknownTrackId')).toMatchObject({ route: '/v1/inquiries/:trackId', code: 'not_found' });
    expect(line('unknownRoute')).toMatchObject({ route: null, code: 'not_found', path: '/v1/kyc/04******99/x' });
    expect(line('tooLarge')).toMatchObject({ code: 'payload_too_large', route: '/v1/kyc/shahkar' });
    expect(line('notJson')).toMatchObject({ code: 'validation_failed' });
    expect(line('quotaExceeded')).toMatchObject({ code: 'rate_limited', clientId: 'app-quota' });
    expect(line('forbidden')).toMatchObject({ code: 'forbidden', clientId: 'app-none' });
    // Probes at debug: kubelets call them every few seconds.
    expect(line('badRequestId')).toMatchObject({ level: 'debug', route: '/health/live' });
    expect(JSON.stringify(lines.all)).not.toContain('0499370899');
  });

  it('puts the request id on every line written while the request was served', () => {
    const upstreamLine = lines.all.find(
      (l) => l.msg.startsWith('POST /api/v5/KYC/CheckShahkar') && l.requestId === 'app-7f3a:42',
    );
    expect(upstreamLine).toBeDefined();
    // The failed call's warning, written deep in the inquiry, with the request it was made for.
    const trackId = String(exchanges.upstreamFailed.body.trackId);
    expect(lines.all.find((l) => l.level === 'warn' && l.msg.startsWith(`inquiry ${trackId}:`))).toMatchObject({
      requestId: 'fail-1',
    });
  });
});
