/**
 * Encryption at rest (store-cipher.ts): Redis read directly holds no token, no upstream data and
 * no personal field in clear; keys rotate with records, replayable answers and the shared token
 * live, across several replicas.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { TEST_CLIENTS, callGateway, startGateway, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { IBAN, MOBILE, NATIONAL_CODE, SHAHKAR, UPSTREAM_PASSWORD, UPSTREAM_USERNAME } from './support/fixtures.js';
import { RedisServer } from './support/redis-server.js';

const K1 = `k1:${randomBytes(32).toString('base64')}`;
const K2 = `k2:${randomBytes(32).toString('base64')}`;

/** Every key in Redis with its value(s) as stored, strings and hashes alike. */
async function dump(redis: Redis): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const key of await redis.keys('*')) {
    const type = await redis.type(key);
    if (type === 'string') out.set(key, (await redis.get(key)) ?? '');
    else if (type === 'hash') out.set(key, JSON.stringify(await redis.hgetall(key)));
  }
  return out;
}

/** Every string leaf of a JSON value (upstream data: names, numbers, statuses). */
function leaves(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (typeof value === 'number') return [String(value)];
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (value && typeof value === 'object') return Object.values(value).flatMap(leaves);
  return [];
}

describe('encryption at rest', () => {
  let sim: UpstreamSimulator;
  let redis: RedisServer;
  let direct: Redis;
  let gateways: RunningGateway[] = [];

  const start = async (keys: string | undefined) => {
    const gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: redis.url,
      STORE_ENCRYPTION_KEYS: keys,
    });
    await untilStoreReady(gateway);
    gateways.push(gateway);
    return gateway;
  };
  const shahkar = (g: RunningGateway, key?: string) =>
    callGateway(g.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
      headers: key ? { 'idempotency-key': key } : {},
    });
  const iban = (g: RunningGateway, key?: string) =>
    callGateway(g.url, 'POST', '/v1/kyc/iban', {
      apiKey: TEST_CLIENTS.full.key,
      json: { iban: IBAN },
      headers: key ? { 'idempotency-key': key } : {},
    });
  const read = (g: RunningGateway, trackId: string) =>
    callGateway(g.url, 'GET', `/v1/inquiries/${trackId}`, { apiKey: TEST_CLIENTS.full.key });

  beforeAll(async () => {
    redis = await RedisServer.start();
    direct = new Redis(redis.url);
  });
  afterAll(async () => {
    direct.disconnect();
    await redis.stop();
  });
  afterEach(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    gateways = [];
    await sim.stop();
    await direct.flushall();
  });
  const newSimulator = async () => {
    sim = new UpstreamSimulator();
    await sim.start();
  };

  it('Redis holds no token, no upstream data and no personal field in clear (and does without keys)', async () => {
    await newSimulator();
    // Reference: without keys, the same traffic leaves the secrets readable (so the check below can fail).
    const clear = await start(undefined);
    const clearAnswer = await iban(clear, 'clear-1');
    expect(clearAnswer.status).toBe(200);
    const clearDump = [...(await dump(direct)).values()].join('\n');
    expect(clearDump).toContain(await clear.tokens.getAccessToken());
    await clear.close();
    gateways = [];
    await direct.flushall();

    const [a, b] = [await start(K1), await start(K1)];
    const answers = [await iban(a, 'idem-iban'), await shahkar(b, 'idem-shahkar'), await iban(b), await shahkar(a)];
    for (const answer of answers) expect(answer.status).toBe(200);
    // A replay and a read across replicas work: what one seals, the other opens.
    expect((await iban(b, 'idem-iban')).headers.get('idempotent-replayed')).toBe('true');
    const trackId = answers[0].body.trackId as string;
    expect((await read(b, trackId)).body.data).toEqual(answers[0].body.data);

    const stored = await dump(direct);
    const everything = [...stored.entries()].map(([k, v]) => `${k} ${v}`).join('\n');
    const accessToken = await a.tokens.getAccessToken();
    const forbidden = [
      accessToken,
      UPSTREAM_USERNAME,
      UPSTREAM_PASSWORD,
      NATIONAL_CODE,
      MOBILE,
      IBAN,
      ...answers.flatMap((answer) => leaves(answer.body.data)).filter((leaf) => leaf.length >= 4),
    ];
    expect(forbidden.length).toBeGreaterThan(8);
    for (const secret of forbidden)
      expect({ secret, found: everything.includes(secret) }).toEqual({ secret, found: false });
    // The refresh token is sealed too: no token field is readable as anything but a sealed value.
    const token = Object.entries(await direct.hgetall([...stored.keys()].find((k) => k.endsWith(':record'))!));
    expect(Object.fromEntries(token)).toMatchObject({
      accessToken: expect.stringMatching(/^enc:v1:k1:/),
      refreshToken: expect.stringMatching(/^enc:v1:k1:/),
    });
    // Records and claims: sealed values; the claim keeps trackId and state readable for its Lua scripts.
    for (const [key, value] of stored) {
      if (key.includes(':inq:')) expect(value).toMatch(/^enc:v1:k1:/);
      if (key.includes(':idem:')) {
        expect(Object.keys(JSON.parse(value) as object).sort()).toEqual(['sealed', 'state', 'trackId']);
      }
    }
  });

  it('keys rotate with records, replays and the shared token live, across replicas', async () => {
    await newSimulator();
    // Step 0: every replica seals with k1.
    const old = await start(K1);
    const before = await iban(old, 'rot-1');
    expect(before.status).toBe(200);
    const tokenBefore = await old.tokens.getAccessToken();

    // Step 1: k2 added (decrypt only) everywhere; step 2: k2 first (seals) — a mixed fleet of both.
    const added = await start(`${K1},${K2}`);
    const promoted = await start(`${K2},${K1}`);
    for (const g of [added, promoted]) {
      // Old records and replays open under the new rings; the shared token is adopted, not renewed.
      expect((await read(g, before.body.trackId as string)).body).toMatchObject({ status: 'succeeded' });
      const replay = await iban(g, 'rot-1');
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.text).toBe(before.text);
      expect(await g.tokens.getAccessToken()).toBe(tokenBefore);
    }
    expect(sim.tokenCalls).toEqual({ credentials: 1, refresh: 0, failed: 0 });

    // New writes by the promoted replica are sealed with k2 and read by the others holding k2.
    const fresh = await iban(promoted, 'rot-2');
    expect(fresh.status).toBe(200);
    const freshKey = (await direct.keys(`*inq:${fresh.body.trackId as string}*`))[0];
    expect(await direct.get(freshKey)).toMatch(/^enc:v1:k2:/);
    expect((await read(added, fresh.body.trackId as string)).status).toBe(200);
    // A replica that was skipped in step 1 cannot open it: 503 store_unavailable, never wrong data.
    expect((await read(old, fresh.body.trackId as string)).body.code).toBe('store_unavailable');

    // The token renewed mid-rotation (a 401 upstream) is sealed with k2; the refresh token sealed
    // with k1 was opened to renew it, and the replicas holding k2 adopt the new token.
    sim.expireAllAccessTokens();
    expect((await shahkar(promoted)).status).toBe(200);
    expect(sim.tokenCalls.refresh).toBe(1);
    const record = await direct.hgetall((await direct.keys('*token}:record'))[0]);
    expect(record.accessToken).toMatch(/^enc:v1:k2:/);
    const renewed = await promoted.tokens.getAccessToken();
    expect(renewed).not.toBe(tokenBefore);
    expect((await shahkar(added)).status).toBe(200);
    expect(await added.tokens.getAccessToken()).toBe(renewed);
    expect(sim.tokenCalls.credentials + sim.tokenCalls.refresh).toBe(2);

    // Step 3, once k1's records have expired: k1 retired. Until then a record sealed with it is refused.
    const retired = await start(K2);
    expect((await read(retired, fresh.body.trackId as string)).status).toBe(200);
    expect((await read(retired, before.body.trackId as string)).body.code).toBe('store_unavailable');
  });

  it('a sealed record moved to another key does not open (bound to its key name)', async () => {
    await newSimulator();
    const g = await start(K1);
    const [first, second] = [await iban(g), await iban(g)];
    const [keyA, keyB] = await Promise.all(
      [first, second].map(async (r) => (await direct.keys(`*inq:${r.body.trackId as string}*`))[0]),
    );
    await direct.set(keyB, (await direct.get(keyA))!);
    expect((await read(g, second.body.trackId as string)).body.code).toBe('store_unavailable');
    expect((await read(g, first.body.trackId as string)).status).toBe(200);
  });
});
