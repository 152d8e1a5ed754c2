/**
 * Token lifecycle across replicas (foundation issue §4–§5), against a real redis-server
 * and the upstream simulator: single-flight acquisition and renewal, refresh-token
 * fallback, typed failures, and Redis outages.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { TokenUnavailableError } from '../src/token/token-unavailable.error.js';
import { UpstreamSimulator, type TokenEvent } from './upstream-simulator/upstream-simulator.js';
import { nextEvent } from './support/events.js';
import { TEST_CLIENTS, startGateway, startGateways, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { RedisServer } from './support/redis-server.js';
import { SHAHKAR } from './support/fixtures.js';

function shahkar(gateway: RunningGateway): Promise<Response> {
  return fetch(`${gateway.url}/v1/kyc/shahkar`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TEST_CLIENTS.full.key },
    body: JSON.stringify(SHAHKAR),
  });
}

const totalTokenCalls = (sim: UpstreamSimulator) => sim.tokenCalls.credentials + sim.tokenCalls.refresh;

describe('token lifecycle with three replicas sharing one Redis', () => {
  let redis: RedisServer;
  let sim: UpstreamSimulator;
  let gateways: RunningGateway[] = [];
  let prefix = 0;
  /** Tests that expire tokens at the upstream on purpose send them once, by design. */
  let upstreamRevokedTokens = false;

  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(() => redis.stop());

  /** For tests whose assertions are about token calls, not timing: room for a busy machine. */
  const LOADED_MACHINE_TIMEOUT = { UPSTREAM_TIMEOUT_MS: '10000' };

  /** A fresh simulator and fresh replicas; a new key prefix keeps tests apart in one Redis. */
  async function startReplicas(
    count: number,
    simOptions: ConstructorParameters<typeof UpstreamSimulator>[0] = {},
    env: Record<string, string> = {},
  ) {
    sim = new UpstreamSimulator(simOptions);
    await sim.start();
    gateways = await startGateways(count, {
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: `t${++prefix}`,
      UPSTREAM_TIMEOUT_MS: '2000',
      ...env,
    });
  }

  afterEach(async () => {
    // The gateway itself never sends a token it could know to be expired (§5.4).
    if (!upstreamRevokedTokens) expect(sim.rejectedExpiredTokens).toBe(0);
    upstreamRevokedTokens = false;
    await Promise.all(gateways.map((g) => g.close()));
    gateways = [];
    await sim.stop();
  });

  it('300 concurrent token requests on 3 cold replicas make exactly one GetToken call', async () => {
    // Slow GetToken, so every request arrives while the first acquisition is in flight.
    await startReplicas(3, { latencyMs: 150 });
    const tokens = await Promise.all(
      gateways.flatMap((g) => Array.from({ length: 100 }, () => g.tokens.getAccessToken())),
    );
    expect(new Set(tokens).size).toBe(1);
    expect(sim.tokenCalls).toEqual({ credentials: 1, refresh: 0, failed: 0 });
  });

  it('300 concurrent inquiries over HTTP on 3 cold replicas: one GetToken, every inquiry served', async () => {
    // A generous upstream timeout: on a busy CI machine 300 queued inquiries may wait seconds.
    await startReplicas(3, { latencyMs: 100 }, LOADED_MACHINE_TIMEOUT);
    const responses = await Promise.all(gateways.flatMap((g) => Array.from({ length: 100 }, () => shahkar(g))));
    expect(responses.map((r) => r.status)).toEqual(Array(300).fill(200));
    expect(totalTokenCalls(sim)).toBe(1);
    expect(sim.inquiryCalls).toBe(300);
  });

  it('renews once at expiry, with the refresh token, while requests keep flowing', async () => {
    // 2 s tokens and 1 s skew: renewal is due 1 s after issue, in every replica at once.
    await startReplicas(3, { accessTokenSeconds: 2 }, { TOKEN_REFRESH_SKEW_SECONDS: '1' });
    // Every replica holds the first token before the renewal is watched for.
    const firsts = await Promise.all(gateways.map((g) => g.tokens.getAccessToken()));
    expect(new Set(firsts).size).toBe(1);
    const first = firsts[0];
    // The renewed token lives long, so exactly one renewal is expected in this test.
    sim.setTokenLifetimes({ accessSeconds: 3600 });
    const renewal = nextEvent<TokenEvent>(sim, 'token');

    // Traffic across the renewal window: no request may fail or carry an expired token. It
    // runs in rounds of one inquiry per replica, until a round after the renewal in which the
    // upstream saw no request with the first token: every replica has adopted the new one.
    let renewalAnswered = false;
    void renewal.then(() => (renewalAnswered = true));
    const traffic = (async () => {
      const statuses: number[] = [];
      const deadline = Date.now() + 15_000;
      for (let adoptedEverywhere = false; !adoptedEverywhere;) {
        if (Date.now() > deadline) throw new Error('the renewed token was not adopted by every replica in time');
        const renewalSeen = renewalAnswered;
        statuses.push(...(await Promise.all(gateways.map((g) => shahkar(g).then((r) => r.status)))));
        const round = sim.requests.slice(-gateways.length);
        adoptedEverywhere = renewalSeen && round.every((r) => r.authorization !== `Bearer ${first}`);
      }
      return statuses;
    })();

    const event = await renewal;
    const statuses = await traffic;

    expect(event).toMatchObject({ variant: 'refresh', ok: true });
    expect(sim.tokenCalls).toEqual({ credentials: 1, refresh: 1, failed: 0 });
    const renewed = await Promise.all(gateways.map((g) => g.tokens.getAccessToken()));
    expect(new Set(renewed).size).toBe(1);
    expect(renewed[0]).not.toBe(first);
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 200)).toBe(true);
  });

  it('falls back to credentials when the refresh token was revoked; no caller sees an error', async () => {
    await startReplicas(3, {}, LOADED_MACHINE_TIMEOUT);
    await Promise.all(gateways.map((g) => g.tokens.getAccessToken()));
    // A password reset (§4.1 rule 4) invalidates every refresh token; here the access
    // tokens expire too, so the next inquiries get 401 and force a renewal.
    sim.revokeAllRefreshTokens();
    sim.expireAllAccessTokens();
    upstreamRevokedTokens = true;

    const responses = await Promise.all(gateways.flatMap((g) => Array.from({ length: 30 }, () => shahkar(g))));
    expect(responses.map((r) => r.status)).toEqual(Array(90).fill(200));
    // One refresh attempt (rejected) and one credentials login, for all 90 requests.
    expect(sim.tokenCalls).toEqual({ credentials: 2, refresh: 1, failed: 1 });
  });

  it('a 401 on inquiries invalidates the token once across replicas and renews once', async () => {
    await startReplicas(3);
    const before = await Promise.all(gateways.map((g) => g.tokens.getAccessToken()));
    expect(new Set(before).size).toBe(1);
    sim.expireAllAccessTokens();
    upstreamRevokedTokens = true;
    const renewed = await Promise.all(
      gateways.flatMap((g) => Array.from({ length: 20 }, () => g.tokens.renewAfterRejection(before[0]))),
    );
    expect(new Set(renewed).size).toBe(1);
    expect(renewed[0]).not.toBe(before[0]);
    expect(sim.tokenCalls).toEqual({ credentials: 1, refresh: 1, failed: 0 });
  });

  it('keeps serving tokens while Redis is down, renews per process, and shares again once it is back', async () => {
    // Its assertions are about where tokens come from, not timing: with 2 s a loaded machine
    // could let the second replica give up waiting for the first's renewal and make its own.
    await startReplicas(2, {}, LOADED_MACHINE_TIMEOUT);
    const first = await gateways[0].tokens.getAccessToken();
    // Held by the second replica too before Redis goes: it learns of the first's renewal by a
    // notice, read asynchronously, and a loaded machine could kill Redis before that read.
    await expect(gateways[1].tokens.getAccessToken()).resolves.toBe(first);
    await redis.kill();

    // The held token is served from memory without Redis.
    await expect(gateways[1].tokens.getAccessToken()).resolves.toBe(first);
    // A renewal while Redis is down happens in this process alone, and succeeds.
    sim.expireAllAccessTokens();
    upstreamRevokedTokens = true;
    const degraded = await gateways[0].tokens.renewAfterRejection(first);
    expect(degraded).not.toBe(first);
    expect(totalTokenCalls(sim)).toBe(2);

    // Redis returns (empty, as after a crash without persistence).
    const ready = untilStoreReady(gateways[0]);
    await redis.restart();
    await ready;
    const shared = await gateways[0].tokens.renewAfterRejection(degraded);
    expect(shared).not.toBe(degraded);
    // The renewal went through Redis again: the shared record holds the new token.
    const probe = new Redis(redis.url);
    try {
      const keys = await probe.keys('*token*record');
      expect(keys).toHaveLength(1);
      expect(await probe.hget(keys[0], 'accessToken')).toBe(shared);
    } finally {
      probe.disconnect();
    }
  });
});

describe('token failures are typed and not retried in a loop', () => {
  let sim: UpstreamSimulator;
  let gateway: RunningGateway;

  async function start(
    options: ConstructorParameters<typeof UpstreamSimulator>[0],
    prepare: (sim: UpstreamSimulator) => void = () => {},
  ) {
    sim = new UpstreamSimulator(options);
    prepare(sim);
    await sim.start();
    const firstAttempt = nextEvent<TokenEvent>(sim, 'token');
    gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl });
    await firstAttempt;
  }

  afterEach(async () => {
    await gateway.close();
    await sim.stop();
  });

  async function expectFailure(reason: TokenUnavailableError['reason'], upstreamMessage?: string) {
    const error = await gateway.tokens.getAccessToken().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TokenUnavailableError);
    expect((error as TokenUnavailableError).reason).toBe(reason);
    if (upstreamMessage) expect((error as TokenUnavailableError).upstreamMessage).toBe(upstreamMessage);
    // Within the backoff window no further GetToken call is made.
    expect(sim.tokenCalls.credentials).toBe(1);
    // Callers see 503 upstream_unavailable, with no secret in the body.
    const response = await shahkar(gateway);
    const text = await response.text();
    expect(response.status).toBe(503);
    expect(JSON.parse(text)).toMatchObject({ code: 'upstream_unavailable' });
    expect(text).not.toContain('sandbox-password');
    expect(sim.tokenCalls.credentials).toBe(1);
    expect(sim.inquiryCalls).toBe(0);
  }

  it('password never set → password_not_set with the upstream message', async () => {
    await start({ password: null });
    await expectFailure('password_not_set', 'Api password has not been set');
  });

  it('disabled account → account_disabled', async () => {
    await start({}, (s) => s.disableAccount());
    await expectFailure('account_disabled');
  });

  it('wrong password → credentials_rejected', async () => {
    await start({ password: 'another-password' });
    await expectFailure('credentials_rejected');
  });
});

describe('single replica with the in-process store', () => {
  it('serves one token to concurrent requests and renews on 401 once', async () => {
    const sim = new UpstreamSimulator({ latencyMs: 50 });
    await sim.start();
    const gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl });
    try {
      const tokens = await Promise.all(Array.from({ length: 100 }, () => gateway.tokens.getAccessToken()));
      expect(new Set(tokens).size).toBe(1);
      sim.expireAllAccessTokens();
      const renewed = await Promise.all(
        Array.from({ length: 50 }, () => gateway.tokens.renewAfterRejection(tokens[0])),
      );
      expect(new Set(renewed).size).toBe(1);
      expect(sim.tokenCalls).toEqual({ credentials: 1, refresh: 1, failed: 0 });
      expect(sim.rejectedExpiredTokens).toBe(0);
    } finally {
      await gateway.close();
      await sim.stop();
    }
  });
});
