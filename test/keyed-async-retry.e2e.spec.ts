/**
 * A keyed retry with `Prefer: respond-async, wait=n` while the key's claim is still `in_flight`
 * (src/inquiry/key-claim.ts, KeyClaim.claimOrWait): every round of its loop waits or ends. Counted on
 * the test's own redis-server (INFO commandstats), which only these gateways use.
 *
 * - The record settled but its answer was never stored (the process died between the two
 *   writes, or the complete() was lost): the retry is answered with the replay, made from the
 *   record, in a handful of commands (it once spun: ~8 800 commands/s, then a 202 `pending`).
 * - The replica is shutting down, so a held wait ends at once: the retry gets the first
 *   request's 202 without spinning.
 *
 * And a held long-poll (or a held keyed retry) whose caller hangs up frees its slot at once (it was kept for the
 * whole wait, so INQUIRY_MAX_HELD_WAITS could be filled by callers long gone).
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  callGateway,
  startGateway,
  TEST_CLIENTS,
  untilStoreReady,
  type Exchange,
  type RunningGateway,
} from './support/gateway.js';
import { RedisServer } from './support/redis-server.js';
import { SHAHKAR } from './support/fixtures.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { InquiryWaits } from '../src/inquiry/inquiry-waits.js';

let redis: RedisServer;
let admin: Redis;
let sim: UpstreamSimulator;
const gateways: RunningGateway[] = [];

async function gateway(env: Record<string, string> = {}): Promise<RunningGateway> {
  const started = await startGateway({ REDIS_URL: redis.url, UPSTREAM_BASE_URL: sim.baseUrl, ...env });
  gateways.push(started);
  await untilStoreReady(started);
  return started;
}

function inquire(url: string, headers: Record<string, string>): Promise<Exchange> {
  return callGateway(url, 'POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, json: SHAHKAR, headers });
}

/**
 * Redis commands run while `work` runs: the counting commands themselves left out, and the
 * ledger drainer's background polling of its queue (streams, its retry set), which runs
 * whatever the request does.
 */
async function commandsDuring<T>(work: () => Promise<T>): Promise<{ result: T; commands: Record<string, number> }> {
  await admin.config('RESETSTAT');
  const result = await work();
  const stats = await admin.info('commandstats');
  const commands: Record<string, number> = {};
  for (const [, name, calls] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!/^(config|info)/.test(name)) commands[name] = Number(calls);
  }
  return { result, commands };
}

/**
 * The commands a keyed retry's loop sends (the spin of issue 24 was SET, GET, SUBSCRIBE and
 * UNSUBSCRIBE by the thousand); the ledger drainer's background polling of its own keys is not
 * the retry's.
 */
const RETRY_COMMANDS = ['get', 'set', 'subscribe', 'unsubscribe'];
const total = (commands: Record<string, number>) =>
  RETRY_COMMANDS.reduce((sum, name) => sum + (commands[name] ?? 0), 0);

beforeAll(async () => {
  redis = await RedisServer.start();
  admin = new Redis(redis.url);
  sim = new UpstreamSimulator();
  await sim.start();
}, 60_000);

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  admin?.disconnect();
  await sim?.stop();
  await redis?.stop();
});

describe('keyed async retry while the claim is in flight', () => {
  it('a settled record whose answer was never stored is replayed, in a handful of Redis commands', async () => {
    const g = await gateway();
    const key = randomUUID();
    const first = await inquire(g.url, { 'idempotency-key': key });
    expect(first.status).toBe(200);
    const trackId = first.body.trackId as string;
    // As if the process had died between the record's settlement and the claim's answer.
    const [claimKey] = await admin.keys('*idem*');
    const claim = JSON.parse((await admin.get(claimKey))!) as Record<string, unknown>;
    expect(claim).toMatchObject({ trackId, state: 'done' });
    delete claim.response;
    await admin.set(claimKey, JSON.stringify({ ...claim, state: 'in_flight', claimedAt: Date.now() }), 'KEEPTTL');

    const { result: retry, commands } = await commandsDuring(() =>
      inquire(g.url, { 'idempotency-key': key, prefer: 'respond-async, wait=3' }),
    );
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
    expect(total(commands)).toBeLessThan(60);
    // Stored now: the next retry replays it in one claim.
    expect(JSON.parse((await admin.get(claimKey))!)).toMatchObject({ trackId, state: 'done' });
    expect(sim.chargesByTrackId.get(trackId)).toBe(1);
    expect(sim.requests.filter((r) => r.trackId === trackId)).toHaveLength(1);
    await admin.del(claimKey);
  }, 30_000);

  it('while the replica shuts down (held waits end at once) the retry gets the 202 without spinning', async () => {
    const g = await gateway();
    sim.setLatency(2_000);
    try {
      const key = randomUUID();
      const first = await inquire(g.url, { 'idempotency-key': key, prefer: 'respond-async' });
      expect(first.status).toBe(202);
      g.app.get(InquiryWaits).releaseAll();
      const { result: retry, commands } = await commandsDuring(() =>
        inquire(g.url, { 'idempotency-key': key, prefer: 'respond-async, wait=3' }),
      );
      expect(retry.status).toBe(202);
      expect(retry.body).toEqual(first.body);
      expect(total(commands)).toBeLessThan(20);
    } finally {
      sim.setLatency(0);
    }
  }, 30_000);
});

/** Long-polls the gateway holds now (its metric). */
async function heldWaits(url: string): Promise<number> {
  return Number(/^vgw_inquiry_waits_held (\d+)$/m.exec(await (await fetch(`${url}/metrics`)).text())![1]);
}

/** Polls `check` (every 20 ms) until it holds; fails after 3 s, naming `what`. */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const giveUpAt = Date.now() + 3_000;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error(`not within 3 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a long-poll whose caller hung up', () => {
  it('frees its slot at once, not at the end of its wait', async () => {
    const g = await gateway({ INQUIRY_MAX_HELD_WAITS: '1' });
    const held = () => heldWaits(g.url);
    sim.setLatency(5_000);
    try {
      const accepted = await inquire(g.url, { prefer: 'respond-async' });
      expect(accepted.status).toBe(202);
      const hangUp = new AbortController();
      const poll = fetch(`${g.url}/v1/inquiries/${accepted.body.trackId as string}`, {
        headers: { 'x-api-key': TEST_CLIENTS.full.key, prefer: 'wait=30' },
        signal: hangUp.signal,
      }).catch((error: unknown) => error);
      await until('the long-poll is held', async () => (await held()) === 1);
      hangUp.abort();
      expect(await poll).toMatchObject({ name: 'AbortError' });
      await until('its slot is free', async () => (await held()) === 0);
      // The one slot takes the next long-poll instead of refusing it (429).
      const next = await callGateway(g.url, 'GET', `/v1/inquiries/${accepted.body.trackId as string}`, {
        apiKey: TEST_CLIENTS.full.key,
        headers: { prefer: 'wait=1' },
      });
      expect(next.status).toBe(200);
      expect(next.headers.get('preference-applied')).toBe('wait=1');
    } finally {
      sim.setLatency(0);
    }
  }, 30_000);

  it('a keyed respond-async retry held on the first request frees its slot at once too', async () => {
    const g = await gateway({ INQUIRY_MAX_HELD_WAITS: '1' });
    const held = () => heldWaits(g.url);
    sim.setLatency(5_000);
    try {
      const key = randomUUID();
      const accepted = await inquire(g.url, { 'idempotency-key': key, prefer: 'respond-async' });
      expect(accepted.status).toBe(202);
      const hangUp = new AbortController();
      const retry = fetch(`${g.url}/v1/kyc/shahkar`, {
        method: 'POST',
        headers: {
          'x-api-key': TEST_CLIENTS.full.key,
          'content-type': 'application/json',
          'idempotency-key': key,
          prefer: 'respond-async, wait=30',
        },
        body: JSON.stringify(SHAHKAR),
        signal: hangUp.signal,
      }).catch((error: unknown) => error);
      await until('the retry is held', async () => (await held()) === 1);
      hangUp.abort();
      expect(await retry).toMatchObject({ name: 'AbortError' });
      await until('its slot is free', async () => (await held()) === 0);
    } finally {
      sim.setLatency(0);
    }
  }, 30_000);
});
