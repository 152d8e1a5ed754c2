/**
 * Hostile upstream answers (docs: docs/api.md §3, 502 `upstream_error`): a success whose
 * `data` is nested thousands of levels deep, and a 32 MiB answer. The gateway takes neither:
 * the caller gets 502 `upstream_error` (never 500), the record is settled `unknown` (the
 * upstream charged), the Idempotency-Key is concluded (a retry replays the 502 and is not sent
 * again), and nothing large reaches Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { callGateway, startGateway, TEST_CLIENTS, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { expectProblemShape } from './support/invariants.js';
import { RedisServer } from './support/redis-server.js';
import { SHAHKAR, UUID_V4 } from './support/fixtures.js';
import { CHECK_SHAHKAR_PATH, UpstreamSimulator, type FaultKind } from './upstream-simulator/upstream-simulator.js';

let redis: RedisServer;
let sim: UpstreamSimulator;
let gateway: RunningGateway;
let inspect: Redis;

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator({ credit: 1_000_000 });
  await sim.start(0);
  gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: redis.url, UPSTREAM_TIMEOUT_MS: '20000' });
  await untilStoreReady(gateway);
  inspect = new Redis(redis.url);
});

afterAll(async () => {
  inspect?.disconnect();
  await gateway?.close();
  await sim?.stop();
  await redis?.stop();
});

const shahkar = (key: string) =>
  callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
    apiKey: TEST_CLIENTS.full.key,
    json: SHAHKAR,
    headers: { 'idempotency-key': key },
  });

describe.each<[FaultKind, string]>([
  ['deep-data', 'a success whose data is nested 2000 levels deep (10 KB)'],
  ['huge-data', 'a 32 MiB success'],
])('%s: %s', (kind) => {
  it('is answered 502 upstream_error, recorded unknown, and the key replays it without a second call', async () => {
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind });
    const key = `hostile-${kind}`;
    const first = await shahkar(key);
    expectProblemShape(first, 502, 'upstream_error');
    const trackId = first.body.trackId as string;
    expect(trackId).toMatch(UUID_V4);
    expect(first.text.length).toBeLessThan(2000);
    expect(sim.chargeCount(trackId)).toBe(1);

    const calls = sim.inquiryCalls;
    const retry = await shahkar(key);
    expect(retry.status).toBe(502);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(sim.inquiryCalls).toBe(calls);

    const record = await callGateway(gateway.url, 'GET', `/v1/inquiries/${trackId}`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    expect(record.status).toBe(200);
    expect(record.body).toMatchObject({ trackId, status: 'unknown' });
    expect(record.body).not.toHaveProperty('data');

    // Nothing of the answer was stored: every value in Redis is small.
    const keys = await inspect.keys('*');
    const sizes = await Promise.all(keys.map((k) => inspect.memory('USAGE', k)));
    expect(Math.max(...sizes.map(Number))).toBeLessThan(16 * 1024);
  });
});

it('the gateway still answers normally afterwards', async () => {
  const res = await shahkar('hostile-after');
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: 'succeeded', data: { isMatch: true } });
});
