/**
 * Redis Cluster (REDIS_CLUSTER_NODES): the token lock and record share a hash tag, the budget
 * keys share one, every other script touches one key, so nothing fails with CROSSSLOT; single
 * flight, idempotency and budgets hold across replicas on a real three-master cluster.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { TEST_CLIENTS, callGateway, startGateways, type RunningGateway } from './support/gateway.js';
import { RedisCluster } from './support/redis-cluster.js';
import { SHAHKAR } from './support/fixtures.js';

describe('gateway on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let sim: UpstreamSimulator;
  let replicas: RunningGateway[];

  beforeAll(async () => {
    cluster = await RedisCluster.start();
    sim = new UpstreamSimulator({ latencyMs: 100 });
    await sim.start();
    replicas = await startGateways(3, {
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_CLUSTER_NODES: cluster.nodes,
      BUDGETS: JSON.stringify([
        { clientId: TEST_CLIENTS.basic.clientId, daily: 5 },
        { clientId: '*', monthly: 1000 },
      ]),
    });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(replicas.map((g) => g.close()));
    await sim.stop();
    await cluster.stop();
  });

  it('one GetToken for 150 concurrent token requests over 3 replicas, then one renewal after a 401', async () => {
    const tokens = await Promise.all(
      replicas.flatMap((g) => Array.from({ length: 50 }, () => g.tokens.getAccessToken())),
    );
    expect(new Set(tokens).size).toBe(1);
    expect(sim.tokenCalls).toEqual({ credentials: 1, refresh: 0, failed: 0 });

    sim.expireAllAccessTokens();
    const renewed = await Promise.all(
      replicas.flatMap((g) => Array.from({ length: 20 }, () => g.tokens.renewAfterRejection(tokens[0]))),
    );
    expect(new Set(renewed).size).toBe(1);
    expect(sim.tokenCalls).toEqual({ credentials: 1, refresh: 1, failed: 0 });
  });

  it('records and idempotent replay work on the cluster', async () => {
    const before = sim.inquiryCalls;
    const responses = await Promise.all(
      replicas.flatMap((g) =>
        Array.from({ length: 10 }, () =>
          callGateway(g.url, 'POST', '/v1/kyc/shahkar', {
            apiKey: TEST_CLIENTS.full.key,
            json: SHAHKAR,
            headers: { 'idempotency-key': 'cluster-key' },
          }),
        ),
      ),
    );
    expect(sim.inquiryCalls).toBe(before + 1);
    const first = responses.find((r) => r.status === 200 && r.headers.get('idempotent-replayed') === null)!;
    expect(responses.every((r) => r.status === 409 || r.status === 200)).toBe(true);
    const replay = await callGateway(replicas[2].url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
      headers: { 'idempotency-key': 'cluster-key' },
    });
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const record = await callGateway(replicas[1].url, 'GET', `/v1/inquiries/${String(first.body.trackId)}`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    expect(record.body).toMatchObject({ status: 'succeeded', trackId: first.body.trackId });
    expect((await callGateway(replicas[0].url, 'GET', '/health/ready')).status).toBe(200);
  });

  it('budgets reserve and settle on the cluster: 12 concurrent inquiries against 5 units admit 5', async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        callGateway(replicas[i % 3].url, 'POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.basic.key, json: SHAHKAR }),
      ),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([...Array<number>(5).fill(200), ...Array<number>(7).fill(429)]);
    const budget = await callGateway(replicas[1].url, 'GET', '/v1/budget', { apiKey: TEST_CLIENTS.basic.key });
    expect(budget.body.budgets).toEqual([
      expect.objectContaining({ spentUnits: 5, reservedUnits: 0, remainingUnits: 0 }),
    ]);
  });
});
