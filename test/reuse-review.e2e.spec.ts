/**
 * Hostile review of reuse (issue 34): reproductions of findings, black box on real processes.
 */
import { createSecretKey, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { canonicalQuestion, questionKey } from '../src/reuse/reuse-key.js';
import { callGateway, startGateway, TEST_CLIENTS, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { RedisServer } from './support/redis-server.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const HMAC = 'reuse-hmac-key-of-this-test-0123456789';
const TIMEOUT_MS = 300;
/** inquiryBudget: 2 call timeouts + 4 timeouts of token wait + 2 s. */
const OWN_DEADLINE_MS = 2 * TIMEOUT_MS + 4 * TIMEOUT_MS + 2_000;

let redis: RedisServer;
let sim: UpstreamSimulator;
let gateway: RunningGateway;

let serial = 223_456_000;
function nationalCode(): string {
  const body = String(serial++).padStart(9, '0');
  const sum = [...body].reduce((s, d, i) => s + Number(d) * (10 - i), 0) % 11;
  return body + String(sum < 2 ? sum : 11 - sum);
}

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator();
  await sim.start();
  gateway = await startGateway({
    REDIS_URL: redis.url,
    UPSTREAM_BASE_URL: sim.baseUrl,
    UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS),
    REUSE_HMAC_KEY: HMAC,
    INQUIRY_REUSE: JSON.stringify({ shahkar: { maxAgeSeconds: 600, share: 'client' } }),
  });
  await untilStoreReady(gateway);
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await sim?.stop();
  await redis?.stop();
});

const ask = (json: unknown, headers: Record<string, string>) =>
  callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, json, headers });

describe('stale-if-error and Idempotency-Key', () => {
  it('a stale answer served after a refusal that charged nothing (402) is replayed by its key', async () => {
    const question = { nationalCode: nationalCode(), mobileNumber: '09121234567' };
    const kept = await ask(question, { 'cache-control': 'max-age=600' });
    expect(kept.status).toBe(200);
    sim.setCredit(0);
    try {
      const headers = { 'cache-control': 'max-age=0, stale-if-error=600', 'idempotency-key': randomUUID() };
      const stale = await ask(question, headers);
      expect(stale.status).toBe(200);
      expect(stale.headers.get('cache-status')).toBe('verification-gateway; fwd=stale; fwd-status=402');
      const retry = await ask(question, headers);
      // Contract §2: "An Idempotency-Key replay of a reused answer replays it, as for any answer."
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body.trackId).toBe(stale.body.trackId);
    } finally {
      sim.setCredit(1_000_000);
    }
  });
});

describe('a leader whose replica died', () => {
  it('its waiter is answered within its own deadline', async () => {
    const question = { nationalCode: nationalCode(), mobileNumber: '09121234567' };
    // What a replica that died mid-call leaves: its registration in flight, with a lease as
    // long as its own deadline, and no settlement ever.
    const key = questionKey(
      createSecretKey(Buffer.from(HMAC, 'utf8')),
      canonicalQuestion(['client', 'key', TEST_CLIENTS.full.clientId], 'shahkar', question),
    );
    const client = new Redis(redis.url);
    await client.set(`{vgw:reuse:${key}}:flight:standard`, randomUUID(), 'PX', OWN_DEADLINE_MS);
    await client.quit();

    const startedAt = Date.now();
    const waiter = await ask(question, { 'cache-control': 'max-age=0' });
    const tookMs = Date.now() - startedAt;
    expect(waiter.status).toBe(200);
    // It sat out the dead leader's whole lease, then began a fresh budget of its own.
    expect(tookMs).toBeLessThan(OWN_DEADLINE_MS);
  }, 30_000);
});
