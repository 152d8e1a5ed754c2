/**
 * End to end, over real HTTP against the upstream simulator and one real Redis shared by
 * several gateway instances: Idempotency-Key semantics (docs/api.md §2 "Idempotency").
 * A replay must cost nothing upstream: no call, no charge.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  callGateway,
  nextSimEvent,
  startGateway,
  startGateways,
  TEST_CLIENTS,
  untilStoreReady,
  type CallOptions,
  type Exchange,
  type RunningGateway,
} from './support/gateway.js';
import { expectEveryChargeTraceable, expectNoSecretInExchanges, expectProblemShape } from './support/invariants.js';
import { RedisServer } from './support/redis-server.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { UUID_V4, SHAHKAR } from './support/fixtures.js';

const IBAN = { iban: 'IR820540102680020817909002' };
const PERSONAL_VALUES = ['0499370899', '0013542419', '09121234567', '9121234567', 'IR820540102680020817909002'];

let redis: RedisServer;
let sim: UpstreamSimulator;
let gateway: RunningGateway;
let replicas: RunningGateway[];
let issuedTokens: readonly string[];
const exchanges: Exchange[] = [];

async function call(baseUrl: string, path: string, options: CallOptions): Promise<Exchange> {
  const exchange = await callGateway(baseUrl, 'POST', path, options);
  exchanges.push(exchange);
  return exchange;
}

/** POST with an Idempotency-Key (default client: full, default gateway: the first). */
function post(
  path: string,
  json: unknown,
  key: string | undefined,
  options: { apiKey?: string; url?: string } = {},
): Promise<Exchange> {
  return call(options.url ?? gateway.url, path, {
    apiKey: options.apiKey ?? TEST_CLIENTS.full.key,
    json,
    headers: key === undefined ? {} : { 'idempotency-key': key },
  });
}

function expectProblem(res: Exchange, status: number, code: string): void {
  expectProblemShape(res, status, code);
  for (const value of PERSONAL_VALUES) expect(res.text).not.toContain(value);
}

function expectFirst(res: Exchange): string {
  expect(res.status).toBe(200);
  expect(res.headers.get('idempotent-replayed')).toBeNull();
  expect(res.body.trackId).toMatch(UUID_V4);
  expect(res.headers.get('x-track-id')).toBe(res.body.trackId);
  return res.body.trackId as string;
}

function expectReplayOf(replay: Exchange, first: Exchange): void {
  expect(replay.status).toBe(first.status);
  expect(replay.text).toBe(first.text);
  expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'));
  expect(replay.headers.get('x-track-id')).toBe(first.headers.get('x-track-id'));
  expect(replay.headers.get('idempotent-replayed')).toBe('true');
}

/** Resolves once the simulator has received `count` more inquiry requests than now. */
async function upstreamReceived(count: number, timeoutMs = 3000): Promise<void> {
  const target = sim.inquiryCalls + count;
  const giveUpAt = Date.now() + timeoutMs;
  while (sim.inquiryCalls < target) {
    if (Date.now() > giveUpAt) throw new Error(`the upstream did not receive ${count} inquiries in time`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const newKey = () => `key-${randomUUID()}`;

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator();
  await sim.start(0);
  issuedTokens = sim.issuedTokenValues;
  const env = { UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: redis.url, UPSTREAM_TIMEOUT_MS: '5000' };
  [gateway, replicas] = await Promise.all([startGateway(env), startGateways(3, env)]);
  await Promise.all([gateway, ...replicas].map((g) => untilStoreReady(g)));
});

afterAll(async () => {
  await Promise.all([gateway, ...(replicas ?? [])].map((g) => g?.close()));
  await sim?.stop();
  await redis?.stop();
});

beforeEach(() => {
  sim.setLatency(0);
});

describe('Idempotency-Key', () => {
  it('replays a finished inquiry: same status, body and X-Track-Id, no upstream call, no charge', async () => {
    const key = newKey();
    const first = await post('/v1/kyc/shahkar', SHAHKAR, key);
    const trackId = expectFirst(first);
    const calls = sim.inquiryCalls;
    const credit = sim.credit;

    for (let i = 0; i < 3; i++) expectReplayOf(await post('/v1/kyc/shahkar', SHAHKAR, key), first);
    // Another replica, sharing the Redis, replays it too.
    expectReplayOf(await post('/v1/kyc/shahkar', SHAHKAR, key, { url: replicas[1].url }), first);

    expect(sim.inquiryCalls).toBe(calls);
    expect(sim.credit).toBe(credit);
    expect(sim.chargeCount(trackId)).toBe(1);
    expect(sim.requests.filter((r) => r.trackId === trackId)).toHaveLength(1);
  });

  it('replays an IBAN inquiry, and treats another spelling of the same values as the same request', async () => {
    const key = newKey();
    const first = await post('/v1/kyc/iban', IBAN, key);
    expectFirst(first);
    const calls = sim.inquiryCalls;
    expectReplayOf(
      await post('/v1/kyc/iban', { iban: 'ir82 0540 1026 8002 0817 9090 02', requestHandlingType: 'standard' }, key),
      first,
    );

    const shahkarKey = newKey();
    const shahkarFirst = await post('/v1/kyc/shahkar', SHAHKAR, shahkarKey);
    expectFirst(shahkarFirst);
    expectReplayOf(
      await post('/v1/kyc/shahkar', { nationalCode: '۰۴۹۹۳۷۰۸۹۹', mobileNumber: '+989121234567' }, shahkarKey),
      shahkarFirst,
    );
    expect(sim.inquiryCalls).toBe(calls + 1);
  });

  it('replays an error outcome the same way (a supplier failure: 502 upstream_error)', async () => {
    sim.setSupplierFailure('primary', 'error');
    try {
      const key = newKey();
      const first = await post('/v1/kyc/shahkar', SHAHKAR, key);
      expectProblem(first, 502, 'upstream_error');
      expect(first.body.trackId).toMatch(UUID_V4);
      expect(first.headers.get('x-track-id')).toBe(first.body.trackId);
      const calls = sim.inquiryCalls;
      sim.setSupplierFailure('primary', null);
      // Even though the upstream would now succeed, the key's stored answer is replayed.
      expectReplayOf(await post('/v1/kyc/shahkar', SHAHKAR, key), first);
      expect(sim.inquiryCalls).toBe(calls);
      expect(sim.chargeCount(first.body.trackId as string)).toBe(0);
    } finally {
      sim.setSupplierFailure('primary', null);
    }
  });

  it('answers 409 idempotency_key_in_use while the first is in flight, then replays it', async () => {
    sim.setLatency(400);
    const key = newKey();
    const calls = sim.inquiryCalls;
    const firstPromise = post('/v1/kyc/shahkar', SHAHKAR, key);
    await upstreamReceived(1);

    const busy = await post('/v1/kyc/shahkar', SHAHKAR, key);
    const busyElsewhere = await post('/v1/kyc/shahkar', SHAHKAR, key, { url: replicas[2].url });
    // Meanwhile the record of the inquiry in flight is `pending`.
    const pending = await callGateway(gateway.url, 'GET', `/v1/inquiries/${busy.body.trackId as string}`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    expect(pending.status).toBe(200);
    expect(pending.body).toEqual({
      trackId: busy.body.trackId,
      operation: 'shahkar',
      status: 'pending',
      requestHandlingType: 'standard',
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    const first = await firstPromise;
    const trackId = expectFirst(first);
    for (const res of [busy, busyElsewhere]) {
      expectProblem(res, 409, 'idempotency_key_in_use');
      // The trackId of the inquiry in flight.
      expect(res.body.trackId).toBe(trackId);
      expect(res.headers.get('x-track-id')).toBe(trackId);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
    }

    sim.setLatency(0);
    expectReplayOf(await post('/v1/kyc/shahkar', SHAHKAR, key), first);
    expect(sim.inquiryCalls).toBe(calls + 1);
    expect(sim.chargeCount(trackId)).toBe(1);
  });

  it('answers 422 idempotency_key_reused for another body, another requestHandlingType or another path', async () => {
    const key = newKey();
    const first = await post('/v1/kyc/shahkar', SHAHKAR, key);
    expectFirst(first);
    const calls = sim.inquiryCalls;

    const reuses = [
      await post('/v1/kyc/shahkar', { ...SHAHKAR, mobileNumber: '09351234567' }, key),
      await post('/v1/kyc/shahkar', { ...SHAHKAR, nationalCode: '0013542419' }, key),
      await post('/v1/kyc/shahkar', { ...SHAHKAR, requestHandlingType: 'advanced' }, key),
      await post('/v1/kyc/iban', IBAN, key),
      await post('/v1/kyc/iban', IBAN, key, { url: replicas[0].url }),
    ];
    for (const res of reuses) {
      expectProblem(res, 422, 'idempotency_key_reused');
      expect(res.headers.get('idempotent-replayed')).toBeNull();
      // No trackId (docs/api.md §3): nothing was recorded under one, and a trackId in an answer
      // is one that can be read; never the first one's either, which is not this request's.
      expect([res.headers.get('x-track-id'), res.body.trackId]).toEqual([null, undefined]);
    }
    expect(sim.inquiryCalls).toBe(calls);
    // The original is still replayable after the refused reuses.
    expectReplayOf(await post('/v1/kyc/shahkar', SHAHKAR, key), first);
  });

  it('keeps keys per client: the same key from two clients runs two inquiries', async () => {
    const key = newKey();
    const calls = sim.inquiryCalls;
    const mine = await post('/v1/kyc/shahkar', SHAHKAR, key);
    const theirs = await post('/v1/kyc/shahkar', SHAHKAR, key, { apiKey: TEST_CLIENTS.other.key });
    const mineId = expectFirst(mine);
    const theirsId = expectFirst(theirs);
    expect(theirsId).not.toBe(mineId);
    expect(sim.inquiryCalls).toBe(calls + 2);
    expect(sim.chargeCount(mineId)).toBe(1);
    expect(sim.chargeCount(theirsId)).toBe(1);

    // Each replays its own.
    expectReplayOf(await post('/v1/kyc/shahkar', SHAHKAR, key, { apiKey: TEST_CLIENTS.other.key }), theirs);
    expectReplayOf(await post('/v1/kyc/shahkar', SHAHKAR, key), mine);
    // A third client uses the key for an IBAN inquiry: its own, so executed; reusing it for
    // Shahkar is a reuse within that client only.
    expectFirst(await post('/v1/kyc/iban', IBAN, key, { apiKey: TEST_CLIENTS.basic.key }));
    expectProblem(
      await post('/v1/kyc/shahkar', SHAHKAR, key, { apiKey: TEST_CLIENTS.basic.key }),
      422,
      'idempotency_key_reused',
    );
    expect(sim.inquiryCalls).toBe(calls + 3);
  });

  it('claims nothing for a request refused by validation: the key stays free', async () => {
    const key = newKey();
    const calls = sim.inquiryCalls;
    const refused = await post('/v1/kyc/shahkar', { ...SHAHKAR, nationalCode: '0499370898' }, key);
    expectProblem(refused, 400, 'validation_failed');
    expect(refused.headers.get('x-track-id')).toBeNull();
    expect(sim.inquiryCalls).toBe(calls);
    const first = await post('/v1/kyc/shahkar', SHAHKAR, key);
    expectFirst(first);
    expect(sim.inquiryCalls).toBe(calls + 1);
    expectReplayOf(await post('/v1/kyc/shahkar', SHAHKAR, key), first);
  });

  it('accepts a 255-character key of visible ASCII', async () => {
    const key = Array.from({ length: 255 }, (_, i) => String.fromCharCode(0x21 + (i % 94))).join('');
    const first = await post('/v1/kyc/iban', IBAN, key);
    expectFirst(first);
    expectReplayOf(await post('/v1/kyc/iban', IBAN, key), first);
  });

  it('without a key, the same body twice is two inquiries with two trackIds', async () => {
    const calls = sim.inquiryCalls;
    const a = await post('/v1/kyc/shahkar', SHAHKAR, undefined);
    const b = await post('/v1/kyc/shahkar', SHAHKAR, undefined);
    expect(expectFirst(a)).not.toBe(expectFirst(b));
    expect(sim.inquiryCalls).toBe(calls + 2);
  });

  it('50 concurrent requests with one key across 3 replicas: exactly one upstream call', async () => {
    sim.setLatency(300);
    const key = newKey();
    const calls = sim.inquiryCalls;
    const credit = sim.credit;
    const inquiries: string[] = [];
    const onInquiry = (event: { trackId: string }) => inquiries.push(event.trackId);
    sim.on('inquiry', onInquiry);
    try {
      const settled = nextSimEvent(sim, 'inquiry', () => true, 5000);
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => post('/v1/kyc/shahkar', SHAHKAR, key, { url: replicas[i % 3].url })),
      );
      await settled;

      const executed = results.filter((r) => r.status === 200 && r.headers.get('idempotent-replayed') === null);
      expect(executed).toHaveLength(1);
      const trackId = expectFirst(executed[0]);
      const others = results.filter((r) => r !== executed[0]);
      for (const res of others) {
        if (res.status === 409) {
          expectProblem(res, 409, 'idempotency_key_in_use');
          expect(res.body.trackId).toBe(trackId);
          expect(res.headers.get('x-track-id')).toBe(trackId);
        } else {
          expectReplayOf(res, executed[0]);
        }
      }
      // With 300 ms of upstream latency, the request that won is still in flight for most.
      expect(others.filter((r) => r.status === 409).length).toBeGreaterThan(0);
      expect(sim.inquiryCalls).toBe(calls + 1);
      expect(inquiries).toEqual([trackId]);
      expect(sim.chargeCount(trackId)).toBe(1);
      expect(sim.credit).toBe(credit - 100);
    } finally {
      sim.off('inquiry', onInquiry);
    }
  });

  it('50 concurrent requests without a key across 3 replicas: 50 inquiries, 50 trackIds, each charged once', async () => {
    const calls = sim.inquiryCalls;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => post('/v1/kyc/iban', IBAN, undefined, { url: replicas[i % 3].url })),
    );
    const trackIds = results.map(expectFirst);
    expect(new Set(trackIds).size).toBe(50);
    expect(sim.inquiryCalls).toBe(calls + 50);
    for (const trackId of trackIds) expect(sim.chargeCount(trackId)).toBe(1);
  });
});

describe('what the responses of this file never carry', () => {
  it('no upstream password, username, access or refresh token in any body or header', () => {
    expect(exchanges.length).toBeGreaterThan(100);
    expect(issuedTokens.length).toBeGreaterThanOrEqual(2);
    const secrets = ['sandbox-password', 'sandbox-user', ...issuedTokens];
    expectNoSecretInExchanges(exchanges, secrets);
  });

  it('every upstream charge was handed to a caller as its trackId', () => {
    expect(sim.chargesByTrackId.size).toBeGreaterThan(50);
    expectEveryChargeTraceable(sim, exchanges);
  });
});
