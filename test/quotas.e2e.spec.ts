/**
 * Quotas (docs/api.md §3: 429 rate_limited with Retry-After): per client, counted
 * across replicas in Redis, and per end user of a JWT caller.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SignJWT, exportSPKI, generateKeyPair, type CryptoKey } from 'jose';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import {
  TEST_CLIENTS,
  callGateway,
  sha256,
  startGateway,
  startGateways,
  type RunningGateway,
} from './support/gateway.js';
import { RedisServer } from './support/redis-server.js';
import { SHAHKAR } from './support/fixtures.js';

const LIMITED_KEY = 'key-limited-0123456789';
const API_KEYS = JSON.stringify([
  { clientId: 'limited', keySha256: sha256(LIMITED_KEY), scopes: ['kyc:shahkar'], quotaPerMinute: 5 },
  { clientId: TEST_CLIENTS.full.clientId, keySha256: sha256(TEST_CLIENTS.full.key), scopes: TEST_CLIENTS.full.scopes },
]);

describe('quotas', () => {
  let redis: RedisServer;
  let sim: UpstreamSimulator;
  let replicas: RunningGateway[];
  let jwtGateway: RunningGateway;
  let privateKey: CryptoKey;

  beforeAll(async () => {
    redis = await RedisServer.start();
    sim = new UpstreamSimulator();
    await sim.start();
    replicas = await startGateways(2, { UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: redis.url, API_KEYS });
    const keys = await generateKeyPair('ES256', { extractable: true });
    privateKey = keys.privateKey;
    jwtGateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      API_KEYS,
      JWT_PUBLIC_KEY: await exportSPKI(keys.publicKey),
      JWT_ISSUER: 'https://id.test',
      JWT_AUDIENCE: 'gw',
      USER_QUOTA_PER_MINUTE: '3',
    });
  });
  afterAll(async () => {
    await Promise.all([...replicas, jwtGateway].map((g) => g.close()));
    await sim.stop();
    await redis.stop();
  });

  const inquiry = (gateway: RunningGateway, headers: Record<string, string>) =>
    callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', { json: SHAHKAR, headers });

  it('a client quota holds across replicas; other clients are not affected', async () => {
    const before = sim.inquiryCalls;
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await inquiry(replicas[i % 2], { 'x-api-key': LIMITED_KEY })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);

    const refused = await inquiry(replicas[1], { 'x-api-key': LIMITED_KEY });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(refused.body).toMatchObject({ code: 'rate_limited', status: 429 });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(sim.inquiryCalls).toBe(before + 5);

    expect((await inquiry(replicas[0], { 'x-api-key': TEST_CLIENTS.full.key })).status).toBe(200);
  });

  it('an end user quota applies per JWT subject', async () => {
    const token = (sub: string) =>
      new SignJWT({ azp: 'mobile', sub, scope: 'kyc:shahkar' })
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuer('https://id.test')
        .setAudience('gw')
        .setExpirationTime('5m')
        .sign(privateKey);
    const alice = { authorization: `Bearer ${await token('alice')}` };
    const bob = { authorization: `Bearer ${await token('bob')}` };
    for (let i = 0; i < 3; i++) expect((await inquiry(jwtGateway, alice)).status).toBe(200);
    const refused = await inquiry(jwtGateway, alice);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    expect((await inquiry(jwtGateway, bob)).status).toBe(200);
    // API-key callers have no end user: the user quota does not apply to them.
    for (let i = 0; i < 4; i++)
      expect((await inquiry(jwtGateway, { 'x-api-key': TEST_CLIENTS.full.key })).status).toBe(200);
  });
});
