/**
 * The shutdown sequence (src/http/shutdown-sequence.ts, docs/behaviour.md "Shutdown") on a real
 * process and a real SIGTERM: one gateway replica in a process of its own with a slow advanced
 * supplier chain (about 3 s) running, a second replica in this process to read the records
 * afterwards, one real Redis, the simulator counting charges per trackId.
 *
 * Proven: readiness turns 503 (with `Connection: close`) within 1 s of the signal although an
 * accepted inquiry still runs for seconds; a held long-poll is answered within 1 s; a new
 * inquiry during the drain is refused in problem+json (503, Retry-After) and nothing of it
 * reaches the upstream; the inquiries taken before the signal (one answered 202, one synchronous)
 * settle as the upstream saw them; the steps run in the listed order; a second SIGTERM 300 ms
 * after the first is logged and ignored; the process exits 0.
 *
 * And while the HTTP server closes (a connection still active), a request is answered by the
 * gateway's own routes (problem+json), never by fastify's `return503OnClosing` JSON.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { callGateway, startGateway, TEST_CLIENTS, type Exchange, type RunningGateway } from './support/gateway.js';
import { buildGateway, startGatewayProcess, type GatewayProcess } from './support/gateway-process.js';
import { RedisServer } from './support/redis-server.js';
import { SHAHKAR, UUID_V4 } from './support/fixtures.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { AFTER_SERVER_CLOSED, WHILE_SERVING } from '../src/http/shutdown-sequence.js';

const ADVANCED = { ...SHAHKAR, requestHandlingType: 'advanced' };
/** Each supplier attempt; the chain (a failure, then a success) takes twice this. */
const SUPPLIER_MS = 1_500;

let redis: RedisServer;
let sim: UpstreamSimulator;
let build: string;
let stopping: GatewayProcess | undefined;
let reader: RunningGateway;

function inquire(url: string, headers: Record<string, string> = {}): Promise<Exchange> {
  return callGateway(url, 'POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, json: ADVANCED, headers });
}

function read(url: string, trackId: string, headers: Record<string, string> = {}): Promise<Exchange> {
  return callGateway(url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: TEST_CLIENTS.full.key, headers });
}

/** Asks `check` again every 20 ms until it is true (at most `timeoutMs`). */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const giveUpAt = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator();
  await sim.start();
  build = buildGateway();
  const env = { REDIS_URL: redis.url, UPSTREAM_BASE_URL: sim.baseUrl, UPSTREAM_ADVANCED_TIMEOUT_MS: '8000' };
  [stopping, reader] = await Promise.all([startGatewayProcess(build, env), startGateway(env)]);
}, 120_000);

afterAll(async () => {
  if (stopping && stopping.process.exitCode === null) stopping.process.kill('SIGKILL');
  await stopping?.exited;
  await reader?.close();
  await sim?.stop();
  await redis?.stop();
});

describe('SIGTERM runs the shutdown sequence in its order', () => {
  it('not ready and long-polls answered within 1 s, new inquiries refused, every taken inquiry settled as charged', async () => {
    const gateway = stopping!;
    sim.setSupplierFailure('primary', 'error');
    sim.setSupplierLatency(SUPPLIER_MS);
    try {
      // Taken before the signal: a synchronous inquiry (its call reached the upstream), one
      // answered 202, and a long-poll held on the latter.
      const sentBefore = sim.requests.length;
      const synchronous = inquire(gateway.url);
      await until('the synchronous inquiry reached the upstream', () => sim.requests.length > sentBefore);
      const accepted = await inquire(gateway.url, { prefer: 'respond-async' });
      expect(accepted.status).toBe(202);
      const trackId = accepted.body.trackId as string;
      expect(trackId).toMatch(UUID_V4);
      const held = read(gateway.url, trackId, { prefer: 'wait=30' }).then((answer) => ({ answer, at: Date.now() }));
      await until('the long-poll is held', async () =>
        /^vgw_inquiry_waits_held 1$/m.test(await (await fetch(`${gateway.url}/metrics`)).text()),
      );

      const signalled = Date.now();
      gateway.process.kill('SIGTERM');
      // A second signal mid-drain (an operator or supervisor repeating it) is logged and
      // ignored: it must not kill the process before what was accepted has settled.
      const repeated = new Promise<void>((resolve) =>
        setTimeout(() => {
          gateway.process.kill('SIGTERM');
          resolve();
        }, 300),
      );

      // Readiness: 503 within 1 s, and the answer closes its connection.
      let ready: Response | undefined;
      await until('readiness is 503', async () => {
        ready = await fetch(`${gateway.url}/health/ready`);
        await ready.arrayBuffer();
        return ready.status === 503;
      });
      expect(Date.now() - signalled).toBeLessThan(1_000);
      expect(ready!.headers.get('connection')).toBe('close');

      // The held long-poll: answered at once with the record as it stands.
      const poll = await held;
      expect(poll.at - signalled).toBeLessThan(1_000);
      expect(poll.answer.status).toBe(200);
      expect(poll.answer.body).toMatchObject({ trackId, status: 'pending' });

      // A new inquiry during the drain: refused in problem+json, nothing sent upstream.
      const sentBeforeRefusal = sim.requests.length;
      const refused = await inquire(gateway.url, { prefer: 'respond-async' });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(refused.body).toMatchObject({ status: 503, code: 'upstream_unavailable' });
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.headers.get('x-track-id')).toBeNull();

      // The synchronous inquiry is answered, the process exits 0 once the 202's has settled.
      await repeated;
      const answered = await synchronous;
      expect(answered.status).toBe(200);
      expect(await gateway.exited).toBe(0);
      expect(sim.requests.length).toBe(sentBeforeRefusal);

      // Every inquiry taken settled as the upstream saw it: charged once, recorded succeeded.
      for (const id of [trackId, answered.body.trackId as string]) {
        expect(sim.chargesByTrackId.get(id)).toBe(1);
        expect((await read(reader.url, id)).body).toMatchObject({ trackId: id, status: 'succeeded' });
      }
      expect([...sim.chargesByTrackId.keys()].sort()).toEqual([trackId, answered.body.trackId as string].sort());

      // The steps ran in the listed order, each once, the drain after the 202's settlement.
      const lines = gateway
        .output()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { msg?: string; context?: string; trackId?: string });
      expect(
        lines.filter((l) => l.context === 'Shutdown' && l.msg === 'SIGTERM: already draining; ignored'),
      ).toHaveLength(1);
      const steps = lines.filter((l) => l.context === 'Shutdown' && l.msg?.startsWith('step'));
      expect(steps.map((l) => l.msg!.replace(/ \(\d+ ms\)$/, ''))).toEqual(
        [...WHILE_SERVING, ...AFTER_SERVER_CLOSED].map((step) => `step: ${step.name}`),
      );
      const settledAt = lines.findIndex((l) => l.msg === 'inquiry' && l.trackId === trackId);
      expect(settledAt).toBeGreaterThanOrEqual(0);
      expect(settledAt).toBeLessThan(lines.indexOf(steps.find((l) => l.msg!.startsWith('step: drain'))!));
    } finally {
      sim.setSupplierFailure('primary', null);
      sim.setSupplierLatency(0);
    }
  }, 60_000);
});

describe('while the HTTP server closes', () => {
  it("an inquiry still reaching it is refused in problem+json, not with fastify's own 503 body", async () => {
    const gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl });
    const fastify = gateway.app.getHttpAdapter().getInstance();
    // A connection with a request half sent: the server waits for it when it closes.
    const socket = connect(Number(new URL(gateway.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const body = JSON.stringify(SHAHKAR);
    socket.write(
      `POST /v1/kyc/shahkar HTTP/1.1\r\nHost: x\r\nx-api-key: ${TEST_CLIENTS.full.key}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`,
    );
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const ended = new Promise((resolve) => socket.once('close', resolve));
    const closing = gateway.close();
    try {
      await until('the server is closing', () => !fastify.server.listening);
      // The request completes now, while fastify is closing.
      socket.write(`\r\n${body}`);
      await ended;
      // Refused as any inquiry during shutdown (nothing sent upstream), in problem+json.
      expect(received).toMatch(/^HTTP\/1\.1 503 /);
      expect(received).toMatch(/\r\ncontent-type: application\/problem\+json/i);
      expect(received).toContain('"code":"upstream_unavailable"');
      expect(received).toMatch(/\r\nconnection: close\r\n/i);
      expect(received).not.toContain('"error":"Service Unavailable"');
    } finally {
      socket.destroy();
      await closing;
    }
  }, 30_000);
});
