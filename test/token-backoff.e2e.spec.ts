/**
 * One GetToken call per failure round for the whole deployment (docs/architecture.md, "Token
 * lifecycle"): during an upstream credentials outage, three replicas sharing one Redis back off
 * together, as the replica whose renewal failed decided; callers meanwhile get 503
 * upstream_unavailable with the Retry-After of the next attempt; when the outage ends, the
 * next round's one call succeeds and every replica adopts its token.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { UpstreamSimulator, type TokenEvent } from './upstream-simulator/upstream-simulator.js';
import { nextEvent } from './support/events.js';
import { SHAHKAR } from './support/fixtures.js';
import { RedisServer } from './support/redis-server.js';
import {
  TEST_CLIENTS,
  callGateway,
  startGateways,
  untilStoreReady,
  type RunningGateway,
  untilStarted,
} from './support/gateway.js';

describe('renewal backoff shared by three replicas', () => {
  let redis: RedisServer;
  let sim: UpstreamSimulator;
  let gateways: RunningGateway[];
  /** Every GetToken call the simulator answered, in order, with when. */
  const calls: { at: number; ok: boolean }[] = [];

  beforeAll(async () => {
    redis = await RedisServer.start();
    sim = new UpstreamSimulator();
    sim.disableAccount();
    sim.on('token', (e: TokenEvent) => calls.push({ at: Date.now(), ok: e.ok }));
    await sim.start();
    gateways = await startGateways(3, { UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: redis.url });
    await Promise.all(gateways.map((g) => untilStoreReady(g)));
    await Promise.all(gateways.map((g) => untilStarted(g.app)));
  });

  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    await sim.stop();
    await redis.stop();
  });

  const inquireEverywhere = (count: number) =>
    Promise.all(
      Array.from({ length: count }, (_, i) =>
        callGateway(gateways[i % gateways.length].url, 'POST', '/v1/kyc/shahkar', {
          apiKey: TEST_CLIENTS.full.key,
          json: SHAHKAR,
        }),
      ),
    );

  // Round n waits at least 0.8 × 2^(n-1) s (1 s doubling, ±20 % jitter: token-renewal.ts backOff),
  // so consecutive GetToken calls that far apart are one call per round for the deployment;
  // a call made by a refused inquiry or a second replica would land inside the gap. A few ms
  // of slack for the timestamps taken on either side of the same call.
  const expectOneCallPerRound = () => {
    for (let i = 1; i < calls.length; i++) {
      expect(calls[i].at - calls[i - 1].at).toBeGreaterThanOrEqual(800 * 2 ** (i - 1) - 20);
    }
  };
  const untilCall = async (ok: boolean) => {
    if (!calls.some((c, i) => c.ok === ok && i > 0))
      await nextEvent<TokenEvent>(sim, 'token', (e) => e.ok === ok, 20_000);
  };

  it('makes one call per round during the outage, and one to recover', async () => {
    // Round 1: the three first attempts at startup made one call between them.
    expect(calls).toHaveLength(1);
    const direct = new Redis(redis.url);
    const backoff = JSON.parse((await direct.get('{vgw:token}:backoff'))!) as Record<string, unknown>;
    direct.disconnect();
    expect(backoff).toMatchObject({ reason: 'account_disabled', attempts: 1, retryAt: expect.any(Number) });
    expect(JSON.stringify(backoff)).not.toContain('sandbox');

    // Within the backoff, 60 inquiries over the three replicas: refused at once, no call of
    // their own (on a slow machine round 2 may fire meanwhile, at its time).
    const refused = await inquireEverywhere(60);
    expect(new Set(refused.map((r) => `${r.status} ${String(r.body.code)}`))).toEqual(
      new Set(['503 upstream_unavailable']),
    );
    for (const r of refused) expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expectOneCallPerRound();

    // Round 2 (about 1 s later, when the replicas' timers fire): one call, still refused.
    await untilCall(false);
    await inquireEverywhere(30);
    expectOneCallPerRound();

    // The account is enabled again: the next round is one successful call, and every replica
    // serves with its token.
    sim.disableAccount(false);
    await untilCall(true);
    const served = await inquireEverywhere(30);
    expect(served.map((r) => r.status)).toEqual(served.map(() => 200));
    expectOneCallPerRound();
    expect(calls.filter((c) => c.ok)).toHaveLength(1);
    expect(calls.at(-1)!.ok).toBe(true);
    expect(sim.tokenCalls).toMatchObject({ credentials: calls.length, refresh: 0 });
  });
});
