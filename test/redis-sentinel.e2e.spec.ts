/**
 * Redis Sentinel (REDIS_SENTINELS, REDIS_SENTINEL_NAME): replicas find the master through a
 * real Sentinel and share tokens, records and idempotency through it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { SHAHKAR } from './support/fixtures.js';
import { TEST_CLIENTS, callGateway, startGateways, type RunningGateway } from './support/gateway.js';
import { RedisSentinel } from './support/redis-sentinel.js';

describe('gateway behind Redis Sentinel', () => {
  let sentinel: RedisSentinel;
  let sim: UpstreamSimulator;
  let replicas: RunningGateway[];

  beforeAll(async () => {
    sentinel = await RedisSentinel.start();
    sim = new UpstreamSimulator({ latencyMs: 50 });
    await sim.start();
    replicas = await startGateways(2, {
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_SENTINELS: sentinel.sentinels,
      REDIS_SENTINEL_NAME: sentinel.name,
      REDIS_KEY_PREFIX: 'sentinel',
    });
  }, 30_000);
  afterAll(async () => {
    await Promise.all(replicas.map((g) => g.close()));
    await sim.stop();
    await sentinel.stop();
  });

  it('shares one token and one idempotent answer between replicas, stored on the master', async () => {
    const tokens = await Promise.all(
      replicas.flatMap((g) => Array.from({ length: 50 }, () => g.tokens.getAccessToken())),
    );
    expect(new Set(tokens).size).toBe(1);
    expect(sim.tokenCalls.credentials + sim.tokenCalls.refresh).toBe(1);

    const post = (g: RunningGateway) =>
      callGateway(g.url, 'POST', '/v1/kyc/shahkar', {
        apiKey: TEST_CLIENTS.full.key,
        json: SHAHKAR,
        headers: { 'idempotency-key': 'sentinel-1' },
      });
    const first = await post(replicas[0]);
    const replay = await post(replicas[1]);
    expect(first.status).toBe(200);
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    const master = new Redis(sentinel.master.url);
    try {
      expect(await master.exists(`{sentinel:inq:${String(first.body.trackId)}}`)).toBe(1);
      expect(await master.hget('{sentinel:token}:record', 'accessToken')).toBe(tokens[0]);
    } finally {
      master.disconnect();
    }
    expect((await callGateway(replicas[1].url, 'GET', '/health/ready')).status).toBe(200);
  });
});
