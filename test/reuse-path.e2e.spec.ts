/**
 * Reuse of paid answers in the inquiry's path (docs/api.md §2, "Reusing answers"), black box:
 * one redis-server, one simulator, three replicas sharing them (shahkar shared by `client`, iban
 * by `company`) and one more replica with `subject`, a 1-second operator max age for iban and a
 * 300 ms upstream timeout (a short deadline of its own), all started once. Every test asks its own question (a national code or IBAN of its own), so none sees
 * another's answers; each leaves the simulator as it found it (afterEach), so none sees another's
 * latency or faults.
 */
import { createSecretKey, randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { SignJWT, exportSPKI, generateKeyPair, type CryptoKey } from 'jose';
import { LEADER_LEASE_MS } from '../src/reuse/answer-store.js';
import { canonicalQuestion, questionKey } from '../src/reuse/reuse-key.js';
import {
  apiKeysWith,
  callGateway,
  nextSimEvent,
  startGateway,
  TEST_CLIENTS,
  untilStoreReady,
  type Exchange,
  type RunningGateway,
} from './support/gateway.js';
import { RedisServer } from './support/redis-server.js';
import { CHECK_SHAHKAR_PATH, IBAN_INQUIRY_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const ISSUER = 'https://id.example.test';
const AUDIENCE = 'verification-gateway';
const OPS = { clientId: 'ops', key: 'key-ops-0123456789', scopes: ['ledger:read'] };
/** A client whose daily budget is one unit: one paid inquiry, then 429 budget_exhausted. */
const POOR = {
  clientId: 'app-poor',
  key: 'key-poor-0123456789',
  scopes: ['kyc:shahkar', 'kyc:iban', 'inquiries:read'],
};

/** A client of its own for the usage test: its rows hold only that test's inquiries. */
const STALE = { clientId: 'app-stale', key: 'key-stale-0123456789', scopes: ['kyc:iban', 'inquiries:read'] };

const HMAC = 'reuse-hmac-key-of-this-test-0123456789';
/** bySubject's upstream timeout, and so its inquiries' own deadline (inquiryBudget: 2 calls + 4 timeouts + 2 s). */
const SHORT_TIMEOUT_MS = 300;
const SHORT_DEADLINE_MS = 2 * SHORT_TIMEOUT_MS + 4 * SHORT_TIMEOUT_MS + 2_000;

let redis: RedisServer;
let sim: UpstreamSimulator;
let signingKey: CryptoKey;
/** Three replicas: shahkar reused within `client`, iban within `company`, 60 s at most. */
let replicas: RunningGateway[];
/** One more: both operations within `subject`, at most 1 s old. */
let bySubject: RunningGateway;

/** A valid national code of its own for each call (check digit computed). */
let serial = 123_456_000;
function nationalCode(): string {
  const body = String(serial++).padStart(9, '0');
  const sum = [...body].reduce((s, d, i) => s + Number(d) * (10 - i), 0) % 11;
  return body + String(sum < 2 ? sum : 11 - sum);
}
/** A valid IBAN of its own for each call (ISO 13616 check digits computed). */
function iban(): string {
  const bban = `0540102680${String(serial++).padStart(12, '0')}`;
  const check = 98 - Number(BigInt(`${bban}182700`) % 97n);
  return `IR${String(check).padStart(2, '0')}${bban}`;
}
const shahkar = () => ({ nationalCode: nationalCode(), mobileNumber: '09121234567' });

function ask(
  gateway: RunningGateway,
  path: string,
  json: unknown,
  headers: Record<string, string> = {},
  apiKey: string = TEST_CLIENTS.full.key,
): Promise<Exchange> {
  return callGateway(gateway.url, 'POST', path, { apiKey, json, headers });
}

/** The same, as an end user of client `app-mobile` (a JWT with `sub`). */
async function askAs(gateway: RunningGateway, sub: string, path: string, json: unknown, cacheControl: string) {
  const token = await new SignJWT({ sub, azp: 'app-mobile', scope: 'kyc:shahkar kyc:iban inquiries:read' })
    .setProtectedHeader({ alg: 'RS256' })
    .setIssuedAt()
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setExpirationTime('5m')
    .sign(signingKey);
  return callGateway(gateway.url, 'POST', path, {
    json,
    headers: { authorization: `Bearer ${token}`, 'cache-control': cacheControl },
  });
}

const cacheStatus = (res: Exchange) => res.headers.get('cache-status');
const calls = (trackIds: readonly (string | null)[]) =>
  sim.requests.filter((r) => r.trackId !== undefined && trackIds.includes(r.trackId));

/** Polls `check` every 100 ms until it holds (the ledger's drainers poll every 250 ms). */
async function until(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const giveUpAt = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Registers a leader in flight that will never settle (another trackId), as a dead replica leaves one. */
async function plantRegistration(partition: string[], question: Record<string, string>, pxMs: number): Promise<void> {
  const key = questionKey(
    createSecretKey(Buffer.from(HMAC, 'utf8')),
    canonicalQuestion(partition, 'shahkar', question),
  );
  const client = new Redis(redis.url);
  await client.set(`{vgw:reuse:${key}}:flight:standard`, randomUUID(), 'PX', pxMs);
  await client.quit();
}

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator();
  await sim.start();
  const keys = await generateKeyPair('RS256', { extractable: true });
  signingKey = keys.privateKey;
  const common = {
    REDIS_URL: redis.url,
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(OPS, POOR, STALE),
    BUDGETS: JSON.stringify([{ clientId: POOR.clientId, daily: 1 }]),
    JWT_PUBLIC_KEY: await exportSPKI(keys.publicKey),
    JWT_ISSUER: ISSUER,
    JWT_AUDIENCE: AUDIENCE,
    REUSE_HMAC_KEY: HMAC,
    // Recorded on every inquiry, a reused one too: its savings are money at this price.
    COST_UNIT_PRICE: JSON.stringify({ amount: '0.75', currency: 'EUR' }),
  };
  const shared = JSON.stringify({
    shahkar: { maxAgeSeconds: 60, share: 'client' },
    iban: { maxAgeSeconds: 60, share: 'company' },
  });
  const own = JSON.stringify({
    shahkar: { maxAgeSeconds: 60, share: 'subject' },
    iban: { maxAgeSeconds: 1, share: 'subject' },
  });
  // The four share one token in Redis, and a failed GetToken is every replica's backoff. So the
  // token is taken before any test slows the simulator, and by a replica with the usual timeout:
  // bySubject starts once it is stored and adopts it. Had bySubject's 300 ms call met the first
  // test's 1 s latency, every replica would refuse at once (503 upstream_unavailable, no call).
  replicas = await Promise.all([0, 1, 2].map(() => startGateway({ ...common, INQUIRY_REUSE: shared })));
  await Promise.all(replicas.map((g) => g.tokens.getAccessToken()));
  bySubject = await startGateway({ ...common, INQUIRY_REUSE: own, UPSTREAM_TIMEOUT_MS: String(SHORT_TIMEOUT_MS) });
  await bySubject.tokens.getAccessToken();
  await Promise.all([...replicas, bySubject].map((g) => untilStoreReady(g)));
  // None renews during the run (the simulator's tokens live 8 h): no GetToken but the one.
  if (sim.tokenCalls.credentials + sim.tokenCalls.refresh !== 1) throw new Error('expected one GetToken call');
}, 60_000);

afterEach(() => {
  sim.setLatency(0);
  sim.setCredit(1_000_000);
  sim.clearFaults();
});

afterAll(async () => {
  await Promise.all([...(replicas ?? []), bySubject].filter(Boolean).map((g) => g.close()));
  await sim?.stop();
  await redis?.stop();
});

describe('identical inquiries in flight', () => {
  it('60 at once over 3 replicas with max-age=0: one upstream call, 59 collapsed; without Cache-Control: 60', async () => {
    sim.setLatency(1000);
    const question = shahkar();
    const before = sim.inquiryCalls;
    const joined = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        ask(replicas[i % 3], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=0' }),
      ),
    );
    expect(sim.inquiryCalls - before).toBe(1);
    expect(joined.map((r) => r.status)).toEqual(Array(60).fill(200));
    expect(new Set(joined.map((r) => JSON.stringify(r.body.data))).size).toBe(1);
    const statuses = joined.map(cacheStatus);
    expect(statuses.filter((s) => s === 'verification-gateway; fwd=miss; collapsed')).toHaveLength(59);
    expect(statuses.filter((s) => s === 'verification-gateway; fwd=miss; stored')).toHaveLength(1);
    const leader = joined.find((r) => r.body.reusedFrom === undefined)!;
    for (const r of joined.filter((x) => x !== leader)) {
      expect(r.body.reusedFrom).toBe(leader.body.trackId);
      expect(r.headers.get('age')).toBe('0');
      expect(r.body.trackId).not.toBe(leader.body.trackId);
    }

    const alone = shahkar();
    const beforeAlone = sim.inquiryCalls;
    const fresh = await Promise.all(
      Array.from({ length: 60 }, (_, i) => ask(replicas[i % 3], '/v1/kyc/shahkar', alone)),
    );
    expect(sim.inquiryCalls - beforeAlone).toBe(60);
    expect(fresh.every((r) => r.status === 200 && cacheStatus(r) === null)).toBe(true);
  }, 30_000);

  it("a failed leader's waiters each send their own, spread over time; none answers its error", async () => {
    sim.setLatency(500);
    const question = shahkar();
    sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'http500' });
    const faulted = nextSimEvent(sim, 'fault');
    const leader = ask(replicas[0], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=600' });
    await faulted;
    const waiters = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        ask(replicas[i % 3], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=600' }),
      ),
    );
    expect((await leader).status).toBe(502);
    expect(waiters.map((r) => r.status)).toEqual(Array(20).fill(200));
    // Each answered from its own call (its own trackId went upstream), none from the leader's.
    const own = calls(waiters.map((r) => r.headers.get('x-track-id')));
    expect(own).toHaveLength(20);
    expect(waiters.every((r) => r.body.reusedFrom === undefined)).toBe(true);
    // Spread by the random 0–250 ms delay, not one burst.
    const arrivals = own.map((r) => r.at);
    expect(Math.max(...arrivals) - Math.min(...arrivals)).toBeGreaterThanOrEqual(80);
  }, 30_000);

  it('a leader slower than its lease keeps it renewed: its waiter still collapses onto it', async () => {
    sim.setLatency(LEADER_LEASE_MS + 1_000);
    const question = shahkar();
    const before = sim.inquiryCalls;
    const leader = ask(replicas[0], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=600' });
    await until(() => Promise.resolve(sim.inquiryCalls > before), 5_000);
    const waiter = await ask(replicas[1], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=0' });
    expect(cacheStatus(waiter)).toBe('verification-gateway; fwd=miss; collapsed');
    expect(waiter.body.reusedFrom).toBe((await leader).body.trackId);
    expect(sim.inquiryCalls - before).toBe(1);
  }, 30_000);

  it("a dead leader's lease lapses and its waiter goes on at once, long before its deadline", async () => {
    const question = shahkar();
    // What a replica that died mid-call leaves: its registration, one lease long, never renewed.
    await plantRegistration(['client', 'key', TEST_CLIENTS.full.clientId], question, LEADER_LEASE_MS);
    const startedAt = Date.now();
    const waiter = await ask(replicas[0], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=0' });
    expect(waiter.status).toBe(200);
    expect(waiter.body.reusedFrom).toBeUndefined();
    // One lease, the 0–250 ms delay and its own call; its deadline is 62 s away.
    expect(Date.now() - startedAt).toBeLessThan(LEADER_LEASE_MS + 1_000);
  }, 30_000);

  it('a waiter on a leader registered past its own limit is answered within its own deadline', async () => {
    const question = shahkar();
    // A registration lasting a whole deadline (as one of an older replica would): the wait is
    // cut so that the waiter's own call still fits before its deadline, stamped on arrival.
    await plantRegistration(['subject', 'key', TEST_CLIENTS.full.clientId], question, SHORT_DEADLINE_MS);
    const startedAt = Date.now();
    const waiter = await ask(bySubject, '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=0' });
    expect(waiter.status).toBe(200);
    expect(waiter.body.reusedFrom).toBeUndefined();
    expect(Date.now() - startedAt).toBeLessThan(SHORT_DEADLINE_MS);
  }, 30_000);
});

describe('stored answers', () => {
  it('a hit: its own trackId and record, Age, Cache-Status; only-if-cached and bad values', async () => {
    const question = shahkar();
    const first = await ask(replicas[0], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=600' });
    expect(cacheStatus(first)).toBe('verification-gateway; fwd=miss; stored');
    const before = sim.inquiryCalls;
    const hit = await ask(replicas[1], '/v1/kyc/shahkar', question, {
      'cache-control': 'max-age=600',
      'idempotency-key': `k-${randomUUID()}`,
    });
    expect(sim.inquiryCalls).toBe(before);
    expect(hit.status).toBe(200);
    expect(cacheStatus(hit)).toBe('verification-gateway; hit');
    expect(hit.headers.get('age')).toMatch(/^\d+$/);
    expect(hit.body).toMatchObject({ status: 'succeeded', reusedFrom: first.body.trackId, data: first.body.data });
    expect(hit.headers.get('x-track-id')).toBe(hit.body.trackId);
    const read = await callGateway(replicas[2].url, 'GET', `/v1/inquiries/${String(hit.body.trackId)}`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    expect(read.body).toMatchObject({ status: 'succeeded', reusedFrom: first.body.trackId });

    const unseen = await ask(replicas[0], '/v1/kyc/shahkar', shahkar(), {
      'cache-control': 'max-age=600, only-if-cached',
    });
    expect(unseen.status).toBe(504);
    expect(unseen.body).toMatchObject({ code: 'not_cached' });
    const bad = await ask(replicas[0], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=soon' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([expect.objectContaining({ field: 'Cache-Control' })]);
    expect(sim.inquiryCalls).toBe(before);
  });

  it('an Idempotency-Key replay of a reused answer replays it', async () => {
    const question = shahkar();
    await ask(replicas[0], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=600' });
    const key = `k-${randomUUID()}`;
    const hit = await ask(replicas[1], '/v1/kyc/shahkar', question, {
      'cache-control': 'max-age=600',
      'idempotency-key': key,
    });
    const replay = await ask(replicas[2], '/v1/kyc/shahkar', question, {
      'idempotency-key': key,
      'cache-control': 'no-cache',
    });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(hit.body);
    expect(cacheStatus(replay)).toBe('verification-gateway; hit');
  });
});

describe('partitions', () => {
  it('client B never reuses client A’s answer under client; both share under company', async () => {
    const person = shahkar();
    await ask(replicas[0], '/v1/kyc/shahkar', person, { 'cache-control': 'max-age=600' });
    const b = await ask(
      replicas[1],
      '/v1/kyc/shahkar',
      person,
      { 'cache-control': 'max-age=600' },
      TEST_CLIENTS.other.key,
    );
    expect(cacheStatus(b)).toBe('verification-gateway; fwd=miss; stored');
    expect(b.body.reusedFrom).toBeUndefined();

    const account = { iban: iban() };
    const a = await ask(replicas[0], '/v1/kyc/iban', account, { 'cache-control': 'max-age=600' });
    const other = await ask(
      replicas[1],
      '/v1/kyc/iban',
      account,
      { 'cache-control': 'max-age=600' },
      TEST_CLIENTS.other.key,
    );
    expect(cacheStatus(other)).toBe('verification-gateway; hit');
    // Another client's trackId is not shown (the ledger keeps it).
    expect(other.body.reusedFrom).toBeUndefined();
    const again = await ask(replicas[2], '/v1/kyc/iban', account, { 'cache-control': 'max-age=600' });
    expect(again.body.reusedFrom).toBe(a.body.trackId);
  });

  it('end user 2 never reuses end user 1’s answer under subject; both share under company', async () => {
    const person = shahkar();
    await askAs(bySubject, 'user-1', '/v1/kyc/shahkar', person, 'max-age=600');
    const second = await askAs(bySubject, 'user-2', '/v1/kyc/shahkar', person, 'max-age=600');
    expect(cacheStatus(second)).toBe('verification-gateway; fwd=miss; stored');
    const firstAgain = await askAs(bySubject, 'user-1', '/v1/kyc/shahkar', person, 'max-age=600');
    expect(cacheStatus(firstAgain)).toBe('verification-gateway; hit');

    const account = { iban: iban() };
    await askAs(replicas[0], 'user-1', '/v1/kyc/iban', account, 'max-age=600');
    const shared = await askAs(replicas[1], 'user-2', '/v1/kyc/iban', account, 'max-age=600');
    expect(cacheStatus(shared)).toBe('verification-gateway; hit');
  });
});

describe('stale-if-error', () => {
  it('serves a stored answer during an outage, never past the operator’s max age', async () => {
    const account = { iban: iban() };
    const kept = await ask(bySubject, '/v1/kyc/iban', account, { 'cache-control': 'max-age=600' });
    sim.injectFault({ path: IBAN_INQUIRY_PATH, kind: 'http500', times: 2 });
    const stale = await ask(bySubject, '/v1/kyc/iban', account, { 'cache-control': 'max-age=0, stale-if-error=600' });
    expect(stale.status).toBe(200);
    expect(cacheStatus(stale)).toBe('verification-gateway; fwd=stale; fwd-status=500');
    expect(stale.body).toMatchObject({ reusedFrom: kept.body.trackId, data: kept.body.data });
    const attempt = await callGateway(bySubject.url, 'GET', `/v1/inquiries/${String(stale.body.trackId)}`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    expect(attempt.body).toMatchObject({ status: 'failed', reusedFrom: kept.body.trackId });
    // Past the operator's 1 s, the same request gets the error.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const late = await ask(bySubject, '/v1/kyc/iban', account, { 'cache-control': 'max-age=0, stale-if-error=600' });
    expect(late.status).toBe(502);
  });

  it('a stale answer served after a 402 is replayed by its key', async () => {
    const question = shahkar();
    await ask(replicas[0], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=600' });
    sim.setCredit(0);
    const headers = { 'cache-control': 'max-age=0, stale-if-error=600', 'idempotency-key': `k-${randomUUID()}` };
    const stale = await ask(replicas[0], '/v1/kyc/shahkar', question, headers);
    expect(cacheStatus(stale)).toBe('verification-gateway; fwd=stale; fwd-status=402');
    // Nothing was charged, yet the key keeps the answer the caller got (docs/api.md §2).
    const retry = await ask(replicas[1], '/v1/kyc/shahkar', question, headers);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(stale.body);
  });

  it('usage counts the stale answer as the attempt it was, not as reused (issue 43)', async () => {
    const account = { iban: iban() };
    const fresh = { 'cache-control': 'max-age=600' };
    const paid = await ask(replicas[0], '/v1/kyc/iban', account, fresh, STALE.key);
    const hit = await ask(replicas[0], '/v1/kyc/iban', account, fresh, STALE.key);
    expect(cacheStatus(hit)).toBe('verification-gateway; hit');
    sim.injectFault({ path: IBAN_INQUIRY_PATH, kind: 'http500', times: 2 });
    const staleHeaders = { 'cache-control': 'max-age=0, stale-if-error=600' };
    const stale = await ask(replicas[0], '/v1/kyc/iban', account, staleHeaders, STALE.key);
    expect(cacheStatus(stale)).toBe('verification-gateway; fwd=stale; fwd-status=500');

    const [day, tomorrow] = [0, 1].map((d) => new Date(Date.now() + d * 86_400_000).toISOString().slice(0, 10));
    const period = `from=${day}&to=${tomorrow}`;
    await until(async () => {
      const res = await callGateway(replicas[0].url, 'GET', `/admin/ledger?${period}&clientId=${STALE.clientId}`, {
        apiKey: OPS.key,
      });
      return res.text.split('\n').filter(Boolean).length >= 3;
    });
    const res = await callGateway(replicas[0].url, 'GET', `/admin/usage?${period}`, { apiKey: OPS.key });
    const rows = (res.body as { usage: Array<Record<string, unknown>> }).usage;
    // Three inquiries: the paid one, the hit (bought nothing) and the stale-served attempt (sent, failed).
    expect(rows.filter((row) => row.clientId === STALE.clientId)).toEqual([
      expect.objectContaining({ inquiries: 3, succeeded: 2, failed: 1, reused: 1, unitsSaved: 1 }),
    ]);
    expect([paid.status, hit.body.reusedFrom, stale.body.reusedFrom]).toEqual([
      200,
      paid.body.trackId,
      paid.body.trackId,
    ]);
  });
});

describe('accounting', () => {
  it('one ledger entry per answer; reuse spends no budget; an exhausted client still gets a reusable answer', async () => {
    const question = shahkar();
    const paid = await ask(replicas[0], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=600' }, POOR.key);
    expect(paid.status).toBe(200);
    const refused = await ask(replicas[1], '/v1/kyc/shahkar', shahkar(), {}, POOR.key);
    expect(refused.status).toBe(429);
    const reused = await ask(replicas[1], '/v1/kyc/shahkar', question, { 'cache-control': 'max-age=600' }, POOR.key);
    expect(reused.status).toBe(200);
    expect(reused.body.reusedFrom).toBe(paid.body.trackId);
    const budget = await callGateway(replicas[2].url, 'GET', '/v1/budget', { apiKey: POOR.key });
    expect(budget.body).toMatchObject({ budgets: [expect.objectContaining({ spentUnits: 1, reservedUnits: 0 })] });

    const day = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    let entries: Array<Record<string, unknown>> = [];
    await until(async () => {
      const res = await callGateway(
        replicas[0].url,
        'GET',
        `/admin/ledger?from=${day}&to=${tomorrow}&clientId=${POOR.clientId}`,
        { apiKey: OPS.key },
      );
      entries = res.text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      return entries.length >= 2;
    });
    expect(entries).toHaveLength(2);
    const byTrackId = new Map(entries.map((e) => [e.trackId, e]));
    const price = { unitPrice: '0.75', currency: 'EUR' };
    expect(byTrackId.get(paid.body.trackId)).toMatchObject({ charged: 'yes', costUnits: 1, ...price });
    expect(byTrackId.get(reused.body.trackId)).toMatchObject({
      charged: 'no',
      costUnits: 0,
      reusedFrom: paid.body.trackId,
      unitsSaved: 1,
      ...price,
    });
  });
});
