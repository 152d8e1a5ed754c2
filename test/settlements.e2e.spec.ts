/**
 * Settlements owed across a store outage (src/inquiry/settlements.ts): when Redis fails just
 * as an inquiry is answered, the caller gets its answer and the record's settlement is owed,
 * written once Redis is back (here: killed and restarted empty, so the settlement re-creates
 * the record); and a graceful shutdown (app.close()) waits a bounded time for what is owed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { callGateway, startGateway, TEST_CLIENTS, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { RedisServer } from './support/redis-server.js';
import { SHAHKAR } from './support/fixtures.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { SHUTDOWN_FLUSH_MS } from '../src/inquiry/settlements.js';

let redis: RedisServer;
let sim: UpstreamSimulator;
const gateways: RunningGateway[] = [];

async function gateway(): Promise<RunningGateway> {
  const started = await startGateway({
    UPSTREAM_BASE_URL: sim.baseUrl,
    REDIS_URL: redis.url,
    UPSTREAM_TIMEOUT_MS: '20000',
  });
  gateways.push(started);
  await untilStoreReady(started, 15_000);
  return started;
}

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator({ credit: 1_000_000 });
  await sim.start(0);
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close().catch(() => undefined)));
  await sim?.stop();
  await redis?.stop();
});

const shahkar = (g: RunningGateway) =>
  callGateway(g.url, 'POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, json: SHAHKAR });
const read = (g: RunningGateway, trackId: string) =>
  callGateway(g.url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: TEST_CLIENTS.full.key });

/** Resolves once the simulator has received one more inquiry than `before`. */
async function untilUpstreamReceived(before: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (sim.inquiryCalls <= before) {
    if (Date.now() > deadline) throw new Error('the inquiry never reached the upstream');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Sends an inquiry and kills Redis while the upstream is working on it (answer held 1.5 s). */
async function answeredDuringOutage(g: RunningGateway): Promise<string> {
  sim.setLatency(1500);
  const before = sim.inquiryCalls;
  const pending = shahkar(g);
  await untilUpstreamReceived(before);
  await redis.kill();
  const res = await pending;
  sim.setLatency(0);
  expect(res.status).toBe(200);
  return res.body.trackId as string;
}

describe('a settlement owed while Redis is down', () => {
  it('reaches the store once Redis is back (restarted empty)', async () => {
    const g = await gateway();
    await shahkar(g); // holds a token
    const trackId = await answeredDuringOutage(g);
    await redis.restart();
    await untilStoreReady(g, 15_000);
    // Owed writes are flushed when the connection is ready again; poll the public read.
    const deadline = Date.now() + 15_000;
    let res = await read(g, trackId);
    while (res.status !== 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      res = await read(g, trackId);
    }
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ trackId, status: 'succeeded', data: { isMatch: true } });
    expect(sim.chargeCount(trackId)).toBe(1);
  });

  it('app.close() waits for owed settlements while Redis comes back', async () => {
    const [g, reader] = [await gateway(), await gateway()];
    await shahkar(g);
    const trackId = await answeredDuringOutage(g);
    const closing = g.close();
    await redis.restart();
    await closing;
    await untilStoreReady(reader, 15_000);
    const res = await read(reader, trackId);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ trackId, status: 'succeeded' });
  });

  it('app.close() gives up after the bounded wait when Redis stays down', async () => {
    const g = await gateway();
    await shahkar(g);
    await answeredDuringOutage(g);
    const started = Date.now();
    await g.close();
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(SHUTDOWN_FLUSH_MS - 500);
    expect(waited).toBeLessThan(SHUTDOWN_FLUSH_MS + 10_000);
    await redis.restart();
  });
});
