/**
 * Idempotency-Key claims of an app's end users are named by a keyed hash of the user
 * (SUBJECT_HASH_KEYS), never by a hash anyone can recompute from a JWT `sub`; and a rotation of
 * that ring never lets a retry across it be charged twice: a claim is looked up under every key
 * of the ring and under the plain SHA-256 of builds before. Two gateways in turn on one real
 * redis-server, the second with the ring rotated; the upstream simulator counts the charges.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { sha256 } from '../src/crypto/sha256.js';
import { EndUser } from './support/end-user.js';
import { startGateway, type RunningGateway } from './support/gateway.js';
import { RedisServer } from './support/redis-server.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const [OLD, NEW] = [randomBytes(32).toString('base64'), randomBytes(32).toString('base64')];
const SUBJECT = 'user-0499370899';

let redis: RedisServer;
let client: Redis;
let sim: UpstreamSimulator;
let user: EndUser;
let common: Record<string, string>;

beforeAll(async () => {
  [redis, user] = await Promise.all([RedisServer.start(), EndUser.create(SUBJECT)]);
  client = new Redis(redis.url);
  sim = new UpstreamSimulator();
  await sim.start();
  common = {
    UPSTREAM_BASE_URL: sim.baseUrl,
    REDIS_URL: redis.url,
    ...(await user.gatewayEnv()),
  };
});
afterAll(async () => {
  client?.disconnect();
  await sim?.stop();
  await redis?.stop();
});

const inquire = (gateway: RunningGateway, key: string) => user.inquire(gateway, key);

/** One gateway at a time on the same Redis, as a rollout of the ring's rotation ends. */
async function withGateway<T>(env: Record<string, string>, work: (gateway: RunningGateway) => Promise<T>): Promise<T> {
  const gateway = await startGateway({ ...common, ...env });
  try {
    return await work(gateway);
  } finally {
    await gateway.close();
  }
}

const hmac = (key: string) => createHmac('sha256', Buffer.from(key, 'base64')).update(SUBJECT).digest('hex');

describe('Idempotency-Key names of end users across a rotation of SUBJECT_HASH_KEYS', () => {
  it('names the claim by the keyed hash, and replays a retry after the rotation: charged once', async () => {
    const key = `rotate-${randomUUID()}`;
    const first = await withGateway({ SUBJECT_HASH_KEYS: `old:${OLD}` }, (gateway) => inquire(gateway, key));
    expect(first.status).toBe(200);
    // The claim's name holds the user's HMAC under the hashing key, not its plain SHA-256.
    const names = await client.keys(`*idem*${sha256(key)}*`);
    expect(names).toHaveLength(1);
    expect(names[0]).toContain(`:u:${hmac(OLD).slice(0, 32)}:`);
    expect(names[0]).not.toContain(sha256(SUBJECT).slice(0, 32));
    // The user's quota counter too: named by the keyed scope's hash.
    const userScope = `${'jwt:mobile-app'.length}:jwt:mobile-app:u:${hmac(OLD).slice(0, 32)}`;
    expect(await client.keys(`*user:${sha256(userScope).slice(0, 32)}*`)).not.toHaveLength(0);

    const retry = await withGateway({ SUBJECT_HASH_KEYS: `new:${NEW},old:${OLD}` }, (gateway) => inquire(gateway, key));
    expect(retry).toMatchObject({ status: 200, replayed: 'true', body: { trackId: first.body.trackId } });
    expect(sim.chargeCount(first.body.trackId)).toBe(1);
    expect(sim.inquiryCalls).toBe(1);
    // A new key after the rotation is named by the new hashing key.
    await withGateway({ SUBJECT_HASH_KEYS: `new:${NEW},old:${OLD}` }, (gateway) => inquire(gateway, `fresh-${key}`));
    expect(await client.keys(`*idem*:u:${hmac(NEW).slice(0, 32)}:${sha256(`fresh-${key}`)}*`)).toHaveLength(1);
  });

  it('replays a claim named by a build before keyed names (the plain SHA-256) once keys are set', async () => {
    const key = `upgrade-${randomUUID()}`;
    const calls = sim.inquiryCalls;
    const first = await withGateway({}, (gateway) => inquire(gateway, key));
    expect(await client.keys(`*idem*:u:${sha256(SUBJECT).slice(0, 32)}:${sha256(key)}*`)).toHaveLength(1);
    const retry = await withGateway({ SUBJECT_HASH_KEYS: `new:${NEW}` }, (gateway) => inquire(gateway, key));
    expect(retry).toMatchObject({ status: 200, replayed: 'true', body: { trackId: first.body.trackId } });
    expect(sim.inquiryCalls - calls).toBe(1);
  });

  it('two retries of one key at once, on replicas holding the old and the new ring: both replayed, one upstream call', async () => {
    // The second step of the documented rotation rolling out (docs/operations.md): the new key
    // held second by one replica, first by the other.
    const [before, after] = await Promise.all([
      startGateway({ ...common, SUBJECT_HASH_KEYS: `old:${OLD},new:${NEW}` }),
      startGateway({ ...common, SUBJECT_HASH_KEYS: `new:${NEW},old:${OLD}` }),
    ]);
    try {
      const calls = sim.inquiryCalls;
      for (const [firstOn, label] of [
        [before, 'old'],
        [after, 'new'],
      ] as const) {
        const key = `retries-${label}-${randomUUID()}`;
        const first = await inquire(firstOn, key);
        expect(first.status).toBe(200);
        const retries = await Promise.all([inquire(before, key), inquire(after, key)]);
        for (const retry of retries)
          expect(retry).toMatchObject({ status: 200, replayed: 'true', body: { trackId: first.body.trackId } });
        expect(sim.chargeCount(first.body.trackId)).toBe(1);
      }
      expect(sim.inquiryCalls - calls).toBe(2);
    } finally {
      await Promise.all([before.close(), after.close()]);
    }
  });

  it('two retries at once while the first is still in flight, across the rotation: 409 naming it, then replayed; one call', async () => {
    // The second step of the documented rotation rolling out (docs/operations.md): the new key
    // held second by one replica, first by the other.
    const [before, after] = await Promise.all([
      startGateway({ ...common, SUBJECT_HASH_KEYS: `old:${OLD},new:${NEW}` }),
      startGateway({ ...common, SUBJECT_HASH_KEYS: `new:${NEW},old:${OLD}` }),
    ]);
    try {
      sim.setLatency(600);
      const calls = sim.inquiryCalls;
      const key = `inflight-${randomUUID()}`;
      const first = inquire(before, key);
      // Its claim is stored before it is sent: once the upstream has it (the simulator announces an
      // inquiry only when answering, so its count is read), the retries find the claim.
      while (sim.inquiryCalls === calls) await new Promise((resolve) => setTimeout(resolve, 5));
      const retries = await Promise.all([inquire(before, key), inquire(after, key)]);
      const answered = await first;
      expect(answered.status).toBe(200);
      for (const retry of retries)
        expect(retry).toMatchObject({ status: 409, body: { trackId: answered.body.trackId } });
      sim.setLatency(0);
      const later = await Promise.all([inquire(before, key), inquire(after, key)]);
      for (const retry of later) expect(retry).toMatchObject({ status: 200, replayed: 'true' });
      expect(sim.inquiryCalls - calls).toBe(1);
    } finally {
      sim.setLatency(0);
      await Promise.all([before.close(), after.close()]);
    }
  });

  it('SUBJECT_HASH_KEYS set for the first time, mid-rollout: a retry on either replica is replayed, one in flight 409; never a plain name', async () => {
    // One replica still hashes under the key derived from STORE_ENCRYPTION_KEYS, the other already
    // under SUBJECT_HASH_KEYS' key (it claims under the derived key's name too).
    const store = `s1:${randomBytes(32).toString('base64')}`;
    const [before, after] = await Promise.all([
      startGateway({ ...common, STORE_ENCRYPTION_KEYS: store }),
      startGateway({ ...common, STORE_ENCRYPTION_KEYS: store, SUBJECT_HASH_KEYS: `new:${NEW}` }),
    ]);
    try {
      const calls = sim.inquiryCalls;
      for (const [firstOn, label] of [
        [after, 'new'],
        [before, 'old'],
      ] as const) {
        const key = `first-set-${label}-${randomUUID()}`;
        const first = await inquire(firstOn, key);
        expect(first.status).toBe(200);
        for (const retry of await Promise.all([inquire(before, key), inquire(after, key)]))
          expect(retry).toMatchObject({ status: 200, replayed: 'true', body: { trackId: first.body.trackId } });
      }
      expect(sim.inquiryCalls - calls).toBe(2);
      sim.setLatency(600);
      const key = `first-set-inflight-${randomUUID()}`;
      const first = inquire(after, key);
      while (sim.inquiryCalls === calls + 2) await new Promise((resolve) => setTimeout(resolve, 5));
      const retry = await inquire(before, key);
      const answered = await first;
      expect(retry).toMatchObject({ status: 409, body: { trackId: answered.body.trackId } });
      expect(sim.inquiryCalls - calls).toBe(3);
      expect(await client.keys(`*idem*:u:${sha256(SUBJECT).slice(0, 32)}:${sha256(key)}*`)).toHaveLength(0);
    } finally {
      sim.setLatency(0);
      await Promise.all([before.close(), after.close()]);
    }
  });

  it('sends at most one of two requests with one key on replicas either side of the rotation at once', async () => {
    const [before, after] = await Promise.all([
      startGateway({ ...common, SUBJECT_HASH_KEYS: `old:${OLD},new:${NEW}` }),
      startGateway({ ...common, SUBJECT_HASH_KEYS: `new:${NEW},old:${OLD}` }),
    ]);
    try {
      sim.setLatency(300);
      const calls = sim.inquiryCalls;
      const key = `rollout-${randomUUID()}`;
      const answers = await Promise.all([inquire(before, key), inquire(after, key)]);
      // One is sent and the other told the key is in use, or both are told so and neither is sent.
      expect(sim.inquiryCalls - calls).toBe(answers.filter((a) => a.status === 200).length);
      expect(answers.filter((a) => a.status === 200).length).toBeLessThanOrEqual(1);
      for (const answer of answers) expect([200, 409]).toContain(answer.status);
    } finally {
      sim.setLatency(0);
      await Promise.all([before.close(), after.close()]);
    }
  });
});
