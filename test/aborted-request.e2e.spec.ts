/**
 * A caller that hangs up before its answer is still seen (docs/operations.md, "Logs"): one
 * access line with status 499 `client_closed_request` and its request id, counted in the
 * request metric; the inquiry it started runs to its end and writes its own line with the same
 * request id (the trace of a possible charge).
 */
import { EventEmitter } from 'node:events';
import { request } from 'node:http';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createGateway } from '../src/bootstrap.js';
import { JsonLogger } from '../src/observability/json-logger.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { SHAHKAR, UPSTREAM_PASSWORD, UPSTREAM_USERNAME } from './support/fixtures.js';
import { TEST_API_KEYS, TEST_CLIENTS, callGateway, nextSimEvent, untilStarted } from './support/gateway.js';
import { nextEvent } from './support/events.js';

type Line = Record<string, unknown>;

/** Log lines as parsed objects, each announced as a 'line' event. */
class Lines extends Writable {
  readonly all: Line[] = [];
  readonly events = new EventEmitter();
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    for (const text of chunk.toString().split('\n').filter(Boolean)) {
      const line = JSON.parse(text) as Line;
      this.all.push(line);
      this.events.emit('line', line);
    }
    callback();
  }
  next(matches: (line: Line) => boolean): Promise<Line> {
    const found = this.all.find(matches);
    return found ? Promise.resolve(found) : nextEvent<Line>(this.events, 'line', matches, 5000);
  }
}

describe('a caller that hangs up', () => {
  const lines = new Lines();
  let sim: UpstreamSimulator;
  let app: NestFastifyApplication;
  let url: string;

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    ({ app } = await createGateway(
      {
        UPSTREAM_BASE_URL: sim.baseUrl,
        UPSTREAM_USERNAME,
        UPSTREAM_PASSWORD,
        API_KEYS: TEST_API_KEYS,
        LOG_LEVEL: 'info',
        // The run's PostgreSQL (test/support/ledger-postgres.js), else PGlite in memory.
        LEDGER_DATABASE_URL: process.env.VGW_TEST_LEDGER_DATABASE_URL,
        LEDGER_DATA_DIR: 'memory://',
      },
      { logger: new JsonLogger('info', lines) },
    ));
    await app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    await untilStarted(app);
  });

  afterAll(async () => {
    await app.close();
    await sim.stop();
  });

  it('while its body is still arriving: one access line 499 client_closed_request, counted', async () => {
    const client = request(`${url}/v1/kyc/shahkar`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': '200',
        'x-api-key': TEST_CLIENTS.full.key,
        'x-request-id': 'hung-up-body',
      },
    });
    client.on('error', () => undefined);
    client.write('{"nationalCode":');
    // The gateway has the request (its access-log hooks run) once the headers arrive.
    await nextEvent(app.getHttpServer(), 'request', () => true, 5000);
    client.destroy();

    const access = await lines.next((l) => l.msg === 'request' && l.requestId === 'hung-up-body');
    expect(access).toMatchObject({
      level: 'info',
      route: '/v1/kyc/shahkar',
      status: 499,
      code: 'client_closed_request',
    });
    const metrics = (await callGateway(url, 'GET', '/metrics')).text;
    expect(metrics).toMatch(
      /vgw_http_request_duration_seconds_count\{route="\/v1\/kyc\/shahkar",method="POST",status="499",code="client_closed_request"\} 1/,
    );
    expect(sim.inquiryCalls).toBe(0);
  });

  it('while its inquiry runs: one access line, and the inquiry outcome is still logged', async () => {
    sim.setLatency(300);
    try {
      const atUpstream = nextSimEvent(sim, 'inquiry');
      const client = request(`${url}/v1/kyc/shahkar`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': TEST_CLIENTS.full.key,
          'x-request-id': 'hung-up-1',
        },
      });
      client.on('error', () => undefined);
      client.end(JSON.stringify(SHAHKAR));
      await atUpstream;
      client.destroy();

      const access = await lines.next((l) => l.msg === 'request' && l.requestId === 'hung-up-1');
      // 499 when Node saw the hang-up before the answer was written; 200 when the answer was
      // handed to the socket first (the kernel accepts it, the peer then drops it).
      expect([200, 499]).toContain(access.status);
      // The inquiry's outcome is on the access line when it was known by then; otherwise the
      // inquiry writes a line of its own when it ends, with the same request id.
      const inquiry =
        access.outcome !== undefined
          ? access
          : await lines.next((l) => l.msg === 'inquiry' && l.requestId === 'hung-up-1');
      expect(inquiry).toMatchObject({ outcome: 'succeeded', trackId: expect.any(String) });
      expect(lines.all.filter((l) => l.msg === 'request' && l.requestId === 'hung-up-1')).toHaveLength(1);
    } finally {
      sim.setLatency(0);
    }
  });
});
