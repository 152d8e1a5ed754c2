/**
 * Everything the server answers is problem+json, including errors raised by fastify's router and
 * by Node's HTTP parser before any route runs; slow clients are cut off in time and leave nothing
 * behind. Raw sockets, since fetch cannot send malformed requests.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { TEST_CLIENTS, callGateway, startGateway, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { SHAHKAR } from './support/fixtures.js';
import { RedisServer } from './support/redis-server.js';
import { raw, type RawAnswer } from './support/raw-http.js';

function expectProblem(answer: RawAnswer, status: number, code: string): void {
  expect({ status: answer.status, code: answer.body.code }).toEqual({ status, code });
  expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(answer.body).toMatchObject({ type: expect.stringContaining(code), title: expect.any(String), status });
  if (code === 'validation_failed') expect(Array.isArray(answer.body.errors)).toBe(true);
  expect(answer.closed).toBe(true);
}

describe('errors before routing are problem+json; slow clients are cut off', () => {
  let sim: UpstreamSimulator;
  let redis: RedisServer;
  let direct: Redis;
  let gateway: RunningGateway;
  let port: number;

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    redis = await RedisServer.start();
    direct = new Redis(redis.url);
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: redis.url,
      HTTP_REQUEST_TIMEOUT_MS: '1000',
    });
    await untilStoreReady(gateway);
    port = Number(new URL(gateway.url).port);
  });

  afterAll(async () => {
    await gateway.close();
    direct.disconnect();
    await redis.stop();
    await sim.stop();
  });

  const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${TEST_CLIENTS.full.key}\r\n\r\n`;

  it('a trackId far longer than any is 400 validation_failed as any malformed trackId (not 414), over fetch as well', async () => {
    const long = await callGateway(gateway.url, 'GET', `/v1/inquiries/${'a'.repeat(5000)}`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    expect({ status: long.status, code: long.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    expect(long.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('bad percent-encoding in the path is 400 validation_failed', async () => {
    const answer = await callGateway(gateway.url, 'GET', '/v1/inquiries/%zz', { apiKey: TEST_CLIENTS.full.key });
    expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(answer.body.errors).toEqual([{ field: 'path', message: expect.any(String) }]);
  });

  it.each([
    ['a malformed request line', ['GARBAGE\r\n\r\n'], 400, 'validation_failed'],
    ['an HTTP version that does not exist', ['GET / HTTP/9.9\r\nHost: x\r\n\r\n'], 400, 'validation_failed'],
    ['a method Node does not know', ['FOO /v1/kyc/shahkar HTTP/1.1\r\nHost: x\r\n\r\n'], 400, 'validation_failed'],
    [
      'a header without a colon',
      ['GET /health/live HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n'],
      400,
      'validation_failed',
    ],
    [
      'headers over the size limit',
      [`GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`],
      431,
      'headers_too_large',
    ],
    [
      'conflicting Content-Length headers',
      ['POST /v1/kyc/shahkar HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}'],
      400,
      'validation_failed',
    ],
  ])('%s → problem+json from the parser, connection closed', async (_name, chunks, status, code) => {
    expectProblem(await raw(port, chunks), status, code);
  });

  it('a CONNECT request → 400 problem+json naming the method (Node alone closes without a word)', async () => {
    const answer = await raw(port, ['CONNECT upstream.example:443 HTTP/1.1\r\nHost: upstream.example:443\r\n\r\n']);
    expectProblem(answer, 400, 'validation_failed');
    expect(answer.body.errors).toEqual([{ field: 'method', message: 'CONNECT is not supported.' }]);
  });

  it('an HTTP/1.1 request without Host → 400 problem+json naming Host (Node alone answers an empty 400)', async () => {
    const answer = await raw(port, [`GET /health/live HTTP/1.1\r\nX-Api-Key: ${TEST_CLIENTS.full.key}\r\n\r\n`]);
    expectProblem(answer, 400, 'validation_failed');
    expect(answer.body.errors).toEqual([{ field: 'Host', message: 'is required in an HTTP/1.1 request' }]);
    // HTTP/1.0 has no Host requirement: served as before.
    const old = await raw(port, ['GET /health/live HTTP/1.0\r\n\r\n']);
    expect(old.status).toBe(200);
  });

  /** A POST with `headers` (a Content-Type line or none) and a valid JSON body, the connection then closed. */
  const post = (path: string, headers: string, body = JSON.stringify(SHAHKAR)) =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Api-Key: ${TEST_CLIENTS.full.key}\r\n` +
    `${headers}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

  it.each([
    ['no Content-Type', '', 'Content-Type is not set; send the body with Content-Type: application/json.'],
    [
      "a form's (curl -d without -H)",
      'Content-Type: application/x-www-form-urlencoded\r\n',
      'Content-Type must be application/json.',
    ],
    ['text/plain', 'Content-Type: text/plain;charset=UTF-8\r\n', 'Content-Type must be application/json.'],
  ])('a JSON body with %s → 400 naming Content-Type, nothing sent upstream', async (_name, header, message) => {
    const callsBefore = sim.inquiryCalls;
    const answer = await raw(port, [post('/v1/kyc/shahkar', header)]);
    expectProblem(answer, 400, 'validation_failed');
    expect(answer.body.detail).toMatch(/Content-Type/);
    expect(answer.body.errors).toEqual([{ field: 'body', message }]);
    expect(sim.inquiryCalls).toBe(callsBefore);
    // The same body as application/json (any parameters) is served.
    const served = await raw(port, [post('/v1/kyc/shahkar', 'Content-Type: Application/JSON; charset=utf-8\r\n')]);
    expect(served.status).toBe(200);
  });

  it.each([
    ['no credential', 401, 'unauthenticated', ''],
    ['a credential without the scope', 403, 'forbidden', `X-Api-Key: ${TEST_CLIENTS.none.key}\r\n`],
  ])('a text/plain body with %s → %i %s: the credential is checked before the body', async (_n, status, code, auth) => {
    const body = JSON.stringify(SHAHKAR);
    const answer = await raw(port, [
      `POST /v1/kyc/shahkar HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${auth}Content-Type: text/plain\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body}`,
    ]);
    expectProblem(answer, status, code);
  });

  it.each([
    ['text/plain', 'Content-Type: text/plain\r\n', false],
    ['text/plain, chunked', 'Content-Type: text/plain\r\n', true],
    ['no Content-Type', '', false],
    ['a form, chunked', 'Content-Type: application/x-www-form-urlencoded\r\n', true],
  ])('a 20 KB body (%s) → 413 payload_too_large', async (_name, header, chunked) => {
    const body = 'x'.repeat(20 * 1024);
    const framing = chunked
      ? `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`
      : `Content-Length: ${body.length}\r\n\r\n${body}`;
    const answer = await raw(port, [
      `POST /v1/kyc/shahkar HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Api-Key: ${TEST_CLIENTS.full.key}\r\n` +
        `${header}${framing}`,
    ]);
    expectProblem(answer, 413, 'payload_too_large');
    expect(answer.body.detail).toBe('The request body is larger than the limit of 16 KiB.');
  });

  it('a body of another type to an unknown path is still 404 not_found', async () => {
    const answer = await raw(port, [post('/v1/kyc/unknown', 'Content-Type: text/plain\r\n')]);
    expectProblem(answer, 404, 'not_found');
  });

  it.each([
    ['GET', '/v1/kyc/shahkar', 'POST'],
    ['DELETE', '/v1/kyc/iban', 'POST'],
    ['POST', '/v1/inquiries/6f1c1d4e-3a2b-4c5d-8e9f-0a1b2c3d4e5f', 'GET, HEAD'],
  ])(
    '%s %s, a known path with another method, is 405 method_not_allowed with Allow: %s',
    async (method, path, allow) => {
      const answer = await callGateway(gateway.url, method, path, { apiKey: TEST_CLIENTS.full.key });
      expect({ status: answer.status, code: answer.body.code, allow: answer.headers.get('allow') }).toEqual({
        status: 405,
        code: 'method_not_allowed',
        allow,
      });
      expect(answer.body.detail).toBe(`${method} is not served at this path; it serves ${allow}.`);
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    },
  );

  it('an unknown path is 404 not_found whatever the method', async () => {
    const answer = await callGateway(gateway.url, 'DELETE', '/v1/kyc/unknown', { apiKey: TEST_CLIENTS.full.key });
    expect({ status: answer.status, code: answer.body.code, allow: answer.headers.get('allow') }).toEqual({
      status: 404,
      code: 'not_found',
      allow: null,
    });
  });

  it('a mistyped path is 404 naming the path meant and where the paths are listed, never echoing the one sent', async () => {
    const typo = await callGateway(gateway.url, 'POST', '/v1/kyc/shakar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
    });
    expect(typo.status).toBe(404);
    expect(typo.body.detail).toMatch(/docs\/api\.md.*the nearest is \/v1\/kyc\/shahkar\.$/);
    expect(typo.body.detail).not.toContain('shakar');
    const unknown = await callGateway(gateway.url, 'GET', '/wp-login.php');
    expect(unknown.body.detail).toMatch(/^No such resource; the API's paths are listed in docs\/api\.md/);
  });

  it('a body that never finishes: 408 request_timeout within the limit, connection closed, nothing recorded', async () => {
    const keysBefore = (await direct.keys('*')).sort();
    const inquiriesBefore = sim.inquiryCalls;
    const body = JSON.stringify(SHAHKAR);
    const head =
      `POST /v1/kyc/shahkar HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `X-Api-Key: ${TEST_CLIENTS.full.key}\r\nIdempotency-Key: slow-1\r\nContent-Length: ${body.length}\r\n\r\n`;
    // Half the body, then the rest only long after the 1 s request timeout.
    const answer = await raw(port, [head + body.slice(0, 10), body.slice(10)], 4000);
    expectProblem(answer, 408, 'request_timeout');
    // Node checks every second: cut off between 1 and ~2 s, not held for minutes.
    expect(answer.elapsedMs).toBeGreaterThanOrEqual(900);
    expect(answer.elapsedMs).toBeLessThan(3500);
    expect(sim.inquiryCalls).toBe(inquiriesBefore);
    expect((await direct.keys('*')).sort()).toEqual(keysBefore);
    // The Idempotency-Key was never claimed: the retry runs as a fresh inquiry.
    const retry = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
      headers: { 'idempotency-key': 'slow-1' },
    });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(sim.inquiryCalls).toBe(inquiriesBefore + 1);
  });

  it('headers that never finish are cut off too', async () => {
    const answer = await raw(port, ['GET /health/live HTTP/1.1\r\nHost: x\r\n', 'X-Late: 1\r\n\r\n'], 4000);
    expectProblem(answer, 408, 'request_timeout');
    expect(answer.elapsedMs).toBeLessThan(3500);
  });

  it('keep-alive is announced longer than a load balancer idle timeout (75 s)', async () => {
    const server = gateway.app.getHttpServer();
    expect(server.keepAliveTimeout).toBe(75_000);
    expect(server.requestTimeout).toBe(1000);
    expect(server.headersTimeout).toBe(1000);
    const keepAlive = await new Promise<string | undefined>((resolve, reject) => {
      request(`${gateway.url}/health/live`, (response) => {
        response.resume();
        resolve(response.headers['keep-alive'] as string | undefined);
      })
        .on('error', reject)
        .end();
    });
    expect(keepAlive).toBe('timeout=75');
  });

  it('the same route answers normally in between (no state left by the errors above)', async () => {
    expectProblem(await raw(port, ['GARBAGE\r\n\r\n']), 400, 'validation_failed');
    const fine = await raw(port, [get('/health/live').replace('HTTP/1.1\r\n', 'HTTP/1.1\r\nConnection: close\r\n')]);
    expect(fine.status).toBe(200);
  });
});
