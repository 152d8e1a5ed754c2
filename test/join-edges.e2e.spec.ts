/**
 * A joined waiter at the edges (docs/api.md §2, "Joins"; issue 43), on one real redis-server and
 * the simulator, with in-process replicas that use it and one with the in-process store:
 *
 * - Shutdown drains a join as it drains an inquiry: the waiter is answered from its leader
 *   (`collapsed`), not sent upstream a second time because the step that releases long-polls
 *   woke it.
 * - A waiter is recorded `pending` from the moment it joins, its Idempotency-Key kept: a keyed
 *   `respond-async` retry's Location reads `pending` (not 404), and a retry or a long-poll held
 *   on it is answered as soon as it settles, from another replica too; a settlement owed to a
 *   failing store is announced when it lands, not before.
 * - A waiter that joins once shutdown has begun waits for its leader without polling the store.
 */
import { createSecretKey, randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Redis } from 'ioredis';
import { InquiryBooks } from '../src/inquiry/inquiry-books.js';
import { InquiryWaits } from '../src/inquiry/inquiry-waits.js';
import { AnswerStore, LEADER_LEASE_MS } from '../src/reuse/answer-store.js';
import { canonicalQuestion, questionKey } from '../src/reuse/reuse-key.js';
import { StoreUnavailableError } from '../src/store/store-unavailable.error.js';
import {
  callGateway,
  startGateway,
  TEST_CLIENTS,
  untilStoreReady,
  type Exchange,
  type RunningGateway,
} from './support/gateway.js';
import { RedisServer } from './support/redis-server.js';
import { CHECK_SHAHKAR_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

/** The leader's call: long enough to join it, short enough for a lean test. */
const LEADER_MS = 2_500;
const COLLAPSED = 'verification-gateway; fwd=miss; collapsed';
const HMAC = 'join-edges-hmac-key-0123456789abcdef';

let redis: RedisServer;
let admin: Redis;
let sim: UpstreamSimulator;
const started: RunningGateway[] = [];

/** A replica on the test's Redis (`redis`) or with the in-process store (`memory`). */
async function replica(store: 'redis' | 'memory'): Promise<RunningGateway> {
  const gateway = await startGateway({
    ...(store === 'redis' ? { REDIS_URL: redis.url } : {}),
    UPSTREAM_BASE_URL: sim.baseUrl,
    REUSE_HMAC_KEY: HMAC,
    INQUIRY_REUSE: JSON.stringify({ shahkar: { maxAgeSeconds: 60, share: 'client' } }),
  });
  started.push(gateway);
  await untilStoreReady(gateway);
  await gateway.tokens.getAccessToken();
  return gateway;
}

/** A valid national code of its own for each question (check digit computed). */
let serial = 271_828_100;
function question(): Record<string, string> {
  const body = String(serial++).padStart(9, '0');
  const sum = [...body].reduce((s, d, i) => s + Number(d) * (10 - i), 0) % 11;
  return { nationalCode: body + String(sum < 2 ? sum : 11 - sum), mobileNumber: '09121234567' };
}

function ask(gateway: RunningGateway, json: unknown, headers: Record<string, string> = {}): Promise<Exchange> {
  return callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
    apiKey: TEST_CLIENTS.full.key,
    json,
    headers: { 'cache-control': 'max-age=0', ...headers },
  });
}

function read(gateway: RunningGateway, path: string, headers: Record<string, string> = {}): Promise<Exchange> {
  return callGateway(gateway.url, 'GET', path, { apiKey: TEST_CLIENTS.full.key, headers });
}

/** Polls `check` every 20 ms until it holds; fails after 5 s, naming `what`. */
async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const giveUpAt = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error(`not within 5 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Waits held by the replica now (long-polls and joins: its metric). */
async function held(gateway: RunningGateway): Promise<number> {
  return Number(/^vgw_inquiry_waits_held (\d+)$/m.exec(await (await fetch(`${gateway.url}/metrics`)).text())![1]);
}

/** The leader's call sent (it is in flight, registered), and its answer to come. */
async function leaderInFlight(gateway: RunningGateway, json: unknown): Promise<{ answer: Promise<Exchange> }> {
  const before = sim.inquiryCalls;
  const answer = ask(gateway, json);
  await until('the leader reached the upstream', () => sim.inquiryCalls > before);
  return { answer };
}

beforeAll(async () => {
  redis = await RedisServer.start();
  admin = new Redis(redis.url);
  sim = new UpstreamSimulator();
  await sim.start();
}, 60_000);

afterEach(() => sim.setLatency(0));

afterAll(async () => {
  await Promise.all(started.map((g) => g.close()));
  admin?.disconnect();
  await sim?.stop();
  await redis?.stop();
});

/** What a replica that died mid-call leaves in Redis: its registration in flight, one lease long, never renewed. */
async function deadLeader(json: Record<string, string>): Promise<void> {
  const partition = ['client', 'key', TEST_CLIENTS.full.clientId];
  const key = questionKey(createSecretKey(Buffer.from(HMAC, 'utf8')), canonicalQuestion(partition, 'shahkar', json));
  await admin.set(`{vgw:reuse:${key}}:flight:standard`, randomUUID(), 'PX', LEADER_LEASE_MS);
}

it('a replica shutting down with a waiter on a dead leader: the waiter goes on alone once the lease lapses, and the drain ends then', async () => {
  const gateway = await replica('redis');
  const json = question();
  await deadLeader(json);
  const before = sim.inquiryCalls;
  const startedAt = Date.now();
  const waiter = ask(gateway, json);
  await until('the waiter has joined', async () => (await held(gateway)) === 1);
  started.splice(started.indexOf(gateway), 1);
  await gateway.close();
  // One lease, the 0–250 ms delay and its own call: not its whole wait (~42 s with these timeouts).
  expect(Date.now() - startedAt).toBeLessThan(LEADER_LEASE_MS + 1_500);
  const alone = await waiter;
  expect(alone.status).toBe(200);
  expect(alone.body.reusedFrom).toBeUndefined();
  expect(sim.inquiryCalls - before).toBe(1);
}, 20_000);

it("a waiter's settlement owed to a failing store is announced when it lands, not before", async () => {
  const gateway = await replica('redis');
  sim.setLatency(LEADER_MS);
  const json = question();
  const key = { 'idempotency-key': `wk-${randomUUID()}` };
  const { answer: leader } = await leaderInFlight(gateway, json);
  const waiter = ask(gateway, json, key);
  await until('the waiter has joined', async () => (await held(gateway)) === 1);
  const trackId = (await ask(gateway, json, { ...key, prefer: 'respond-async' })).body.trackId as string;
  // The waiter's first settle fails as on a store outage: it is owed, and lands on its retry.
  const books = gateway.app.get(InquiryBooks);
  const settle = books.settle.bind(books);
  let failedOnce = false;
  jest.spyOn(books, 'settle').mockImplementation((record, ...rest) => {
    if (record.trackId !== trackId || failedOnce) return settle(record, ...rest);
    failedOnce = true;
    return Promise.reject(new StoreUnavailableError('inquiry settle'));
  });
  const poll = read(gateway, `/v1/inquiries/${trackId}`, { prefer: 'wait=10' });
  await until('the long-poll is held', async () => (await held(gateway)) === 2);
  expect((await waiter).headers.get('cache-status')).toBe(COLLAPSED);
  expect(failedOnce).toBe(true);
  expect((await poll).body).toMatchObject({ trackId, status: 'succeeded', reusedFrom: (await leader).body.trackId });
}, 20_000);

describe.each(['redis', 'memory'] as const)('a joined waiter (%s store)', (store) => {
  it('a joined waiter is answered from its leader during the drain: one upstream call', async () => {
    const leaderSide = await replica(store);
    // With Redis the waiter is on a replica of its own, woken by the leader's notice through Redis.
    const waiterSide = store === 'redis' ? await replica(store) : leaderSide;
    sim.setLatency(LEADER_MS);
    const json = question();
    const before = sim.inquiryCalls;
    const { answer: leader } = await leaderInFlight(leaderSide, json);
    const waiter = ask(waiterSide, json);
    await until('the waiter has joined', async () => (await held(waiterSide)) === 1);

    // The waiter's replica shuts down (the sequence a SIGTERM runs).
    started.splice(started.indexOf(waiterSide), 1);
    const closed = waiterSide.close();
    const [led, joined] = await Promise.all([leader, waiter]);
    await closed;
    expect(led.status).toBe(200);
    expect(joined.status).toBe(200);
    expect(joined.headers.get('cache-status')).toBe(COLLAPSED);
    expect(joined.body.reusedFrom).toBe(led.body.trackId);
    expect(sim.inquiryCalls - before).toBe(1);
  }, 20_000);

  it('a keyed retry of a waiter: its Location reads pending, and it is replayed once the waiter settles', async () => {
    const leaderSide = await replica(store);
    const retrySide = store === 'redis' ? await replica(store) : leaderSide;
    sim.setLatency(LEADER_MS);
    const json = question();
    const key = { 'idempotency-key': `wk-${randomUUID()}` };
    const { answer: leader } = await leaderInFlight(leaderSide, json);
    const waiter = ask(leaderSide, json, key);
    await until('the waiter has joined', async () => (await held(leaderSide)) === 1);

    const accepted = await ask(retrySide, json, { ...key, prefer: 'respond-async, wait=1' });
    expect(accepted.status).toBe(202);
    const trackId = accepted.body.trackId as string;
    const location = accepted.headers.get('location')!;
    expect(location).toBe(`/v1/inquiries/${trackId}`);
    const pending = await read(retrySide, location);
    expect(pending.status).toBe(200);
    expect(pending.body).toMatchObject({ trackId, status: 'pending' });

    // Held on the waiter's record, both are answered once it settles, not at the end of their wait.
    const askedAt = Date.now();
    const [retry, poll, answered] = await Promise.all([
      ask(retrySide, json, { ...key, prefer: 'respond-async, wait=12' }),
      read(retrySide, location, { prefer: 'wait=12' }),
      waiter,
    ]);
    expect(Date.now() - askedAt).toBeLessThan(LEADER_MS + 1_500);
    expect(answered.status).toBe(200);
    expect(answered.headers.get('cache-status')).toBe(COLLAPSED);
    expect(answered.body.trackId).toBe(trackId);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(answered.body);
    expect(poll.body).toMatchObject({ trackId, status: 'succeeded', reusedFrom: (await leader).body.trackId });
  }, 30_000);

  it('a waiter whose leader failed goes on alone: its Location never reads 404 on the way to its own record', async () => {
    const gateway = await replica(store);
    sim.setLatency(LEADER_MS);
    sim.injectFault({ kind: 'http500', path: CHECK_SHAHKAR_PATH });
    const json = question();
    const key = { 'idempotency-key': `wk-${randomUUID()}` };
    const { answer: leader } = await leaderInFlight(gateway, json);
    const waiter = ask(gateway, json, key);
    await until('the waiter has joined', async () => (await held(gateway)) === 1);
    const location = (await ask(gateway, json, { ...key, prefer: 'respond-async' })).headers.get('location')!;
    // Its own opening held back a moment, as a slow store would: the Location is read meanwhile.
    const books = gateway.app.get(InquiryBooks);
    const open = books.open.bind(books);
    let opening!: () => void;
    const opened = new Promise<void>((resolve) => (opening = resolve));
    jest.spyOn(books, 'open').mockImplementation(async (...args) => {
      opening();
      await new Promise((resolve) => setTimeout(resolve, 300));
      return open(...args);
    });
    await opened;
    sim.setLatency(0);
    expect((await read(gateway, location)).body).toMatchObject({ status: 'pending' });
    expect((await leader).status).toBe(502);
    expect((await waiter).headers.get('cache-status')).toBe('verification-gateway; fwd=miss; stored');
  }, 20_000);

  it('a waiter that joins once shutdown began waits for its leader without polling the store', async () => {
    const gateway = await replica(store);
    sim.setLatency(LEADER_MS);
    const json = question();
    const { answer: leader } = await leaderInFlight(gateway, json);
    // The shutdown step that ends held long-polls has run; this request was taken before.
    gateway.app.get(InquiryWaits).releaseAll();
    const leaseLooks = jest.spyOn(gateway.app.get(AnswerStore), 'leaseLeft');
    if (store === 'redis') await admin.config('RESETSTAT');
    const waiter = await ask(gateway, json);
    expect(waiter.headers.get('cache-status')).toBe(COLLAPSED);
    expect(waiter.body.reusedFrom).toBe((await leader).body.trackId);
    // A look at the leader's lease when it ends (every LEADER_LEASE_MS), not a loop of them.
    expect(leaseLooks.mock.calls.length).toBeLessThanOrEqual(2);
    if (store === 'redis') {
      const stats = await admin.info('commandstats');
      const evalsha = Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
      // The waiter's lookup, its record, its answer's writes; the ledger drainers' polling.
      expect(evalsha).toBeLessThan(60);
    }
  }, 20_000);
});
